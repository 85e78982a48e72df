"""The ``ppaux`` command line: ``check``, ``clauses``, ``errors``, ``explain`` and ``faults``."""

from ppaux.cli.main import main
from ppaux.cli.usage import OneLineParser, UsageError

__all__ = ["OneLineParser", "UsageError", "main"]
