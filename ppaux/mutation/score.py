"""What a mutation run scores: which of mutmut's verdicts count as killed, the mutants judged
equivalent (here the older file of mutmut's names, ``{mutant: one-line reason}``; the file keyed by
mutant identity is :mod:`ppaux.mutation.equivalents`), and the one score formula that
``ppaux mutate`` and ppaux's own runs (``python -m reports mutation``) both report."""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CRASHED",
    "KILLED",
    "SUSPICIOUS",
    "EquivalentsError",
    "Score",
    "crashed",
    "is_killed",
    "judged_equivalent",
    "read_equivalents",
    "score",
    "stale",
    "verdicts",
]

# mutmut's verdicts that mean the tests noticed the mutant. A mutant whose tests crash the test
# process ("segfault": killed by a signal) was detected as surely as one that fails a test.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
# mutmut files any exit code it has no name for as "suspicious", SIGABRT included: read the code.
SUSPICIOUS = "suspicious"
CRASHED = "crashed"


def is_killed(status: str) -> bool:
    """Whether a verdict means the tests noticed the mutant ("no tests" and "survived" do not)."""
    return status in KILLED or status.startswith(f"{CRASHED} (")


def crashed(exit_code: int) -> str:
    """The verdict of a test process that died by signal ``-exit_code``: ``"crashed (SIGABRT)"``."""
    try:
        return f"{CRASHED} ({signal.Signals(-exit_code).name})"
    except ValueError:
        return f"{CRASHED} (signal {-exit_code})"


def verdicts(results: Mapping[str, str]) -> dict[str, int]:
    """How many mutants got each verdict, most common first: how the killed ones were killed."""
    return dict(sorted(Counter(results.values()).items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass(frozen=True)
class Score:
    """The score of a set of mutants: ``killed`` of ``counted`` (every mutant but the ``equivalent``
    ones still alive, which no test can kill); ``percent`` rounded to 2 places, 100 when none count."""

    killed: int
    counted: int
    equivalent: int = 0

    @property
    def percent(self) -> float:
        return round(100.0 * self.killed / self.counted, 2) if self.counted else 100.0

    def reaches(self, gate: float) -> bool:
        """Whether the score reaches ``gate`` percent (the rounded score, as the report shows it)."""
        return self.percent >= gate


def score(results: Mapping[str, str], equivalent: Iterable[str] = ()) -> Score:
    """``results`` (``{mutant: verdict}``) scored: a mutant judged equivalent counts only when it
    was killed after all (then its entry is stale); a mutant without tests counts as not killed."""
    judged = {name for name in equivalent if name in results and not is_killed(results[name])}
    counted = [status for name, status in results.items() if name not in judged]
    return Score(killed=sum(map(is_killed, counted)), counted=len(counted), equivalent=len(judged))


def judged_equivalent(results: Mapping[str, str], equivalents: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``equivalents`` that hold: the mutant exists and survived."""
    return {name: why for name, why in equivalents.items() if name in results and not is_killed(results[name])}


def stale(results: Mapping[str, str], equivalents: Mapping[str, str]) -> list[str]:
    """The entries of ``equivalents`` that no longer hold: no such mutant, or it was killed."""
    return sorted(set(equivalents) - set(judged_equivalent(results, equivalents)))


class EquivalentsError(ValueError):
    """An equivalents file that cannot be read, or is not ``{mutant: reason}`` with a reason for each."""


def read_equivalents(path: str | Path) -> dict[str, str]:
    """``{mutant: one-line reason}`` from the JSON file at ``path``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EquivalentsError(f"{str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) and v.strip() for v in data.values()):
        raise EquivalentsError(f"{str(path)!r} must be a JSON object {{mutant: reason}} with a reason for each")
    return data
