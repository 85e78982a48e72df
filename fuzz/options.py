"""Checking the command line of ``python -m fuzz``: each bad value is one line for the user."""

from __future__ import annotations

import re
from typing import List, Tuple

from ppaux.cli.usage import UsageError  # noqa: F401 - one kind of usage error for every ppaux command

_BUDGET = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?")


def parse_budget(text: str) -> float:
    """Seconds in ``30m``, ``1h30m``, ``90s``, ``2h`` or a plain number of seconds."""
    match = _BUDGET.fullmatch(text.strip())
    if not text.strip() or match is None or not any(match.groups()):
        raise UsageError(f"--budget {text!r}: expected a duration such as 30m, 1h30m, 90s")
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise UsageError(f"--budget {text!r}: the budget must be longer than 0 s")
    return float(total)


def placements(devices: str, cuda_count: int) -> Tuple[List[str], str | None]:
    """The device placements to cycle through, and a note to print once (or None).

    ``cpu`` hides every GPU from the round (CUDA_VISIBLE_DEVICES=""), so tensors are drawn
    on the CPU only; ``cuda`` shows them all, so tensors are drawn on cpu and every cuda:N.
    """
    if devices == "cpu":
        return ["cpu"], None
    if devices == "cuda":
        if cuda_count == 0:
            raise UsageError("--devices cuda: no CUDA device is visible on this machine (use auto or cpu)")
        return ["cuda"], None
    if cuda_count == 0:
        return ["cpu"], "no CUDA device visible: fuzzing on CPU only"
    return ["cuda", "cpu"], None


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"
