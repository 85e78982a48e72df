"""What a mutation run's report says, in the words both reports use: ``ppaux mutate``'s
``mutate.md``/``.json`` and ppaux's own runs' ``mutation.md``/``.json``. The score phrase, the
verdicts, each shown mutant with its diff, the judged-equivalent and stale entries, and the files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ppaux.mutation.score import Score
from ppaux.report import write_report as write_both

__all__ = [
    "STALE",
    "diff_block",
    "equivalent_lines",
    "score_fields",
    "score_phrase",
    "stale_lines",
    "verdicts_line",
    "write_report",
]

# How a stale equivalence entry is named, on the console and in the report.
STALE = "stale equivalence entry (killed, or no such mutant)"


def score_fields(score: Score) -> dict[str, object]:
    """The score's fields of a report's JSON."""
    return {"equivalent": score.equivalent, "killed": score.killed, "score": score.percent}


def score_phrase(score: Score) -> str:
    """``**97.5%** (39/40 mutants killed; 2 judged equivalent)``: killed of the counted mutants."""
    judged = f"; {score.equivalent} judged equivalent" if score.equivalent else ""
    return f"**{score.percent}%** ({score.killed}/{score.counted} mutants killed{judged})"


def verdicts_line(verdicts: Mapping[str, int]) -> str:
    """mutmut's verdicts and how many mutants got each, as a list item."""
    return "- verdicts: " + ", ".join(f"{status} {n}" for status, n in verdicts.items())


def diff_block(diff: str) -> list[str]:
    """A mutant's unified diff, fenced."""
    return ["```diff", diff.strip(), "```", ""]


def equivalent_lines(judged: Mapping[str, str], *, source: str | None = None) -> list[str]:
    """The section of the mutants judged equivalent, each with its reason (``source``: the files they come from)."""
    lines = ["## Judged equivalent" + (f" ({source})" if source else ""), ""]
    lines += [f"- `{name}`: {why}" for name, why in sorted(judged.items())] or ["None."]
    return lines + [""]


def stale_lines(stale: Sequence[str]) -> list[str]:
    """The section of stale equivalence entries; none without any."""
    if not stale:
        return []
    return ["## Stale equivalence entries (killed, or no such mutant)", "", *(f"- `{name}`" for name in stale)]


def write_report(out: Path, stem: str, report: Mapping[str, object], markdown: Sequence[str]) -> Path:
    """``out/stem.json`` (indented, one entry a line) and ``out/stem.md`` (the ``markdown`` lines,
    ending with one newline), UTF-8 both, each written whole; the Markdown's path."""
    return write_both(out, stem, report, "\n".join(markdown).rstrip() + "\n")[0]
