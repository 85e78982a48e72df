"""SGLang's released transport, fetched from the package index at test time and never committed.

Only the three files the transport needs are extracted, under empty package ``__init__``s so
that none of SGLang's heavy imports run. The wheel is cached under ``$PPAUX_CACHE_DIR`` (default
``~/.cache/ppaux``); without the index and without a cached wheel the calling test is skipped,
with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

VERSION = "0.5.23"
MODULE = "sglang.srt.sampling.sampling_observer_pp"
FILES = (
    "sglang/srt/sampling/sampling_observer_pp.py",
    "sglang/srt/sampling/sampling_observer.py",
    "sglang/srt/managers/auxiliary_output.py",
)


def cache_dir() -> Path:
    return Path(os.environ.get("PPAUX_CACHE_DIR", Path.home() / ".cache" / "ppaux")) / f"sglang-{VERSION}"


def wheel() -> Path:
    """The cached wheel, downloaded once with pip; skips the test when it cannot be had."""
    cache = cache_dir()
    found = sorted(cache.glob(f"sglang-{VERSION}-*.whl"))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
             "--retries", "1", "--timeout", "15", f"sglang=={VERSION}", "-d", str(cache)],
            capture_output=True, text=True, timeout=600,
        )
        found = sorted(cache.glob(f"sglang-{VERSION}-*.whl"))
        if proc.returncode != 0 or not found:
            why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"sglang=={VERSION} could not be downloaded from the package index (offline?): {why}")
    return found[0]


def extract(dest: Path) -> Path:
    """A package tree holding just the transport and its two imports; returns its root."""
    with zipfile.ZipFile(wheel()) as zf:
        for name in FILES:
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    for pkg in ("sglang", "sglang/srt", "sglang/srt/sampling", "sglang/srt/managers"):
        (dest / pkg / "__init__.py").touch()
    return dest
