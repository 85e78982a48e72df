"""Writing a report's files: whole or not at all, UTF-8 whatever the locale."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> Path:
    """``text`` into ``path``, UTF-8: written beside it and renamed over it, so that a reader (the
    reports page, a dashboard, a run killed mid-write) never sees half a report. Returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def write_report(out: Path, stem: str, data: object, markdown: str) -> tuple[Path, Path]:
    """A report's two files, ``out/stem.md`` and ``out/stem.json`` (indented), each written whole."""
    page = write_atomic(out / f"{stem}.md", markdown)
    return page, write_atomic(out / f"{stem}.json", json.dumps(data, indent=2) + "\n")
