"""SGLang's released transport for the tests that run the suite against it: the release's wheel
(:func:`ppaux.relay.sglang.wheel`: downloaded once, cached, never committed), of which only the
three files the transport needs are extracted, under empty package ``__init__``s so that none of
SGLang's heavy imports run. Without the index and without a cached wheel the test is skipped,
with the reason."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import ppaux.relay.sglang as sglang

VERSION = sglang.DEFAULT_VERSION
MODULE = "sglang.srt.sampling.sampling_observer_pp"
FILES = (
    "sglang/srt/sampling/sampling_observer_pp.py",
    "sglang/srt/sampling/sampling_observer.py",
    "sglang/srt/managers/auxiliary_output.py",
)


def extract(dest: Path) -> Path:
    """A package tree holding just the transport and its two imports; returns its root."""
    try:
        wheel = sglang.wheel(VERSION)
    except sglang.ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    with zipfile.ZipFile(wheel) as zf:
        for name in FILES:
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    for pkg in ("sglang", "sglang/srt", "sglang/srt/sampling", "sglang/srt/managers"):
        (dest / pkg / "__init__.py").touch()
    return dest
