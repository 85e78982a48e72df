"""``BaseException.add_note`` on every Python ppaux supports (it arrived in 3.11): the notes that say
where an error comes from and how to fix it. pytest prints ``__notes__`` on any Python, Python's own
traceback from 3.11."""

from __future__ import annotations

__all__ = ["add_note"]


def add_note(exc: BaseException, note: str) -> None:
    """Append ``note`` to ``exc.__notes__``, as ``exc.add_note(note)`` does from Python 3.11."""
    # typeshed declares __notes__ from Python 3.11 on; mypy checks against 3.10.
    exc.__notes__ = [*getattr(exc, "__notes__", ()), note]  # type: ignore[attr-defined,unused-ignore]
