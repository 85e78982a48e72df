"""ppaux's files in the user's directory, as ``.pytest_cache`` and ``.hypothesis`` are pytest's and
Hypothesis's: a command given no ``--report`` (``ppaux check``, ``fuzz``, ``faults``, ``mutate``)
writes into ``.ppaux/<command>`` of the current directory, never into the user's own tree."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["STATE", "STATE_GITIGNORE", "StateError", "check_directory", "report_directory"]

STATE = Path(".ppaux")
# Written when .ppaux is created, as pytest does for its cache: the user's git status never shows .ppaux.
STATE_GITIGNORE = "# Created by ppaux automatically.\n*\n"


class StateError(Exception):
    """``.ppaux`` cannot be created: one line for the user (each command exits 2 on it)."""


def check_directory(directory: Path) -> str | None:
    """Why ``directory`` cannot hold a command's files (created if missing), or ``None``."""
    if directory.exists() and not directory.is_dir():
        return f"{directory} is not a directory"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create {directory}: {exc.strerror or exc}"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{directory} is not writable"
    return None


def report_directory(report: str | None, command: str) -> Path:
    """``--report``'s directory when given, exactly; else ``.ppaux/<command>``, with ``.ppaux``, when this
    creates it, given a ``.gitignore`` of ``*`` (one that exists is the user's: left as it is).

    Raises :class:`StateError` when ``.ppaux`` cannot be created."""
    if report is not None:
        return Path(report)
    if not os.path.lexists(STATE):
        why = check_directory(STATE)
        if why:
            raise StateError(why)
        (STATE / ".gitignore").write_text(STATE_GITIGNORE)
    return STATE / command
