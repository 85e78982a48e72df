"""Surviving the code under test: a call into an implementation or an observer plugin that hangs
or kills its process becomes a finding (:class:`Hang`, :class:`Crash`) instead of a hung or dead run.

A :class:`Guard` times every call it makes (``guard.call("pop", fn, tensors, observer)``): in
process, a pure-Python hang is interrupted by a timer signal; once a supervising parent has seen
the process die, ``guard.isolated`` runs each call first in a forked child of its own, so that a
crash or a hang no signal can reach is raised as an ordinary failure that Hypothesis shrinks.
:func:`run_forked` is that supervision: a function in a forked child, stopped at a deadline, its
exit status and its faulthandler stack read back; a :class:`Worker` is a long-lived child that runs
one request after another under the same supervision. The guard and the supervisors read time from
a :class:`Clock`. The findings are ``BaseException`` subclasses of this layer's own (an implementation's
``except Exception`` cannot swallow them). Nothing here imports the rest of ppaux, nor pytest.
"""

from ppaux.isolation.clock import MONOTONIC, Clock, safety_limit
from ppaux.isolation.forked import ChildOutcome, can_fork, run_forked
from ppaux.isolation.groups import signal_group
from ppaux.isolation.guard import DEFAULT_TIMEOUT, Contained, Crash, Guard, Hang, current, parse_timeout
from ppaux.isolation.server import Worker, resident_bytes
from ppaux.isolation.status import describe_exitcode, describe_status, signal_name

__all__ = [
    "DEFAULT_TIMEOUT",
    "MONOTONIC",
    "ChildOutcome",
    "Clock",
    "Contained",
    "Crash",
    "Guard",
    "Hang",
    "Worker",
    "can_fork",
    "current",
    "describe_exitcode",
    "describe_status",
    "parse_timeout",
    "resident_bytes",
    "run_forked",
    "safety_limit",
    "signal_group",
    "signal_name",
]
