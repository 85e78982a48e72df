"""Checking a fuzz command line: each bad value is one line for the user (:class:`FuzzUsageError`)."""

from __future__ import annotations

import os
import re
import zlib

# A budget or a time so far as the progress line and fuzz.md write it: one function, in the reports.
from ppaux.report.render import format_duration
from ppaux.testing.suite import usable_cores

__all__ = [
    "FuzzUsageError",
    "format_duration",
    "in_shard",
    "parse_budget",
    "parse_shard",
    "parse_workers",
    "placements",
    "visible_gpus",
]

_BUDGET = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?")
_SHARD = re.compile(r"(\d+)/(\d+)")


class FuzzUsageError(Exception):
    """Bad input to the fuzz job: one line for the user, exit status 2 (``ppaux.cli`` prints it)."""


def parse_budget(text: str) -> float:
    """Seconds in ``30m``, ``1h30m``, ``90s``, ``2h`` or a plain number of seconds."""
    match = _BUDGET.fullmatch(text.strip())
    if not text.strip() or match is None or not any(match.groups()):
        raise FuzzUsageError(f"--budget {text!r}: expected a duration such as 30m, 1h30m, 90s")
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise FuzzUsageError(f"--budget {text!r}: the budget must be longer than 0 s")
    return float(total)


def parse_workers(text: str) -> int:
    """``--workers``: a positive number of processes, or ``auto`` (one per core)."""
    if text == "auto":
        return usable_cores()
    if not text.isdigit() or int(text) < 1:
        raise FuzzUsageError(f"--workers {text!r}: expected a number of worker processes, 1 or more, or auto")
    return int(text)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``--shard K/N``: this machine's share, the K-th of N (1-based); None for every test."""
    if text is None:
        return None
    match = _SHARD.fullmatch(text.strip())
    if match is None:
        raise FuzzUsageError(f"--shard {text!r}: expected K/N, this machine's share of N (e.g. 1/4)")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise FuzzUsageError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def in_shard(nodeid: str, shard: tuple[int, int] | None) -> bool:
    """Whether test ``nodeid`` is shard K of N's: by a hash of its id alone, so the same on every
    machine and night, whatever else is collected; every test is in exactly one shard."""
    if shard is None:
        return True
    k, n = shard
    return zlib.crc32(nodeid.encode("utf-8")) % n == k - 1


def visible_gpus() -> list[str]:
    """The ids a child may name in ``CUDA_VISIBLE_DEVICES``: this process's own list when it has one."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    listed = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return listed[:count] if listed else [str(i) for i in range(count)]


def placements(devices: str, gpus: list[str], worker: int = 0) -> tuple[list[str], str | None]:
    """The device placements worker ``worker`` (0-based) cycles through, and a note to print once (or None).

    ``cpu`` hides every GPU (CUDA_VISIBLE_DEVICES=""). ``cuda:G`` binds the worker to GPU G, the
    workers taking the GPUs in turn; ``cuda:G,H`` shows it G and the next GPU, so that tensors
    are drawn across two devices, when two or more are visible.
    """
    if devices == "cpu":
        return ["cpu"], None
    if devices == "cuda" and not gpus:
        raise FuzzUsageError("--devices cuda: no CUDA device is visible on this machine (use auto or cpu)")
    if not gpus:
        return ["cpu"], "no CUDA device visible: fuzzing on CPU only"
    own = gpus[worker % len(gpus)]
    where = [f"cuda:{own}"]
    if len(gpus) >= 2:
        where.append(f"cuda:{own},{gpus[(worker + 1) % len(gpus)]}")
    return where + ([] if devices == "cuda" else ["cpu"]), None
