"""The command a report tells its reader to run again (``ppaux check``'s replay lines, fuzz.md's replay
advice): written one way, so every report quotes it for the shell and leaves out defaults alike."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence


def rerun_command(program: Sequence[str], options: Iterable[tuple[str, object, object]]) -> str:
    """``program`` followed by each ``(option, value, default)`` whose value is given and not its default,
    quoted for a POSIX shell; a float value as ``%g`` (``--timeout 2``, as a user would type it)."""
    argv = list(program)
    for option, value, default in options:
        if value is not None and value != default:
            argv += [option, f"{value:g}" if isinstance(value, float) else str(value)]
    return shlex.join(argv)
