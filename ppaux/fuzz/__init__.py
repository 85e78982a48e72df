"""The nightly fuzz job, shipped: ``ppaux fuzz run|replay|report``.

``run`` fuzzes the conformance suite (and ppaux's own ``tests/`` from a checkout) under the
``nightly`` profile until a time budget is spent: N worker processes side by side, each on its
own GPU in turn, all saving failures to one Hypothesis example database (a directory, or a
Redis shared by machines that each fuzz their ``--shard``). ``replay`` re-runs what any machine
saved; ``report --merge`` makes the shards' reports one. See ``docs/fuzzing.md``.
"""

from ppaux.fuzz.command import add_arguments, run
from ppaux.fuzz.options import FuzzUsageError
from ppaux.fuzz.runner import failure_rows

__all__ = ["FuzzUsageError", "add_arguments", "failure_rows", "run"]
