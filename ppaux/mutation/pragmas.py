"""The no-mutate pragmas (mutmut's markings) of a source tree, each with its one-line reason and the
problem that makes the gate refuse it: what ppaux's own runs report beside the equivalents files
(:mod:`ppaux.mutation.own`; the report's section is :func:`ppaux.report.render.markings_section`),
while the markings last."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from ppaux.report import Marking

__all__ = ["NO_REASON", "REGION_AFTER_CODE", "REGION_INSIDE_BRACKETS", "markings"]

_PRAGMA = re.compile(r"#\s*pragma:\s*no mutate(?: (?P<kind>block|start|end))?(?:\s+-\s+(?P<reason>\S.*?))?\s*$")


# What the gate refuses in a marking, in the words the report and the console use.
NO_REASON = "'# pragma: no mutate' without a reason (write ' - equivalent: why')"
# mutmut 3.8 opens a start/end region only from a comment on a line of its own; after code, the
# comment marks that one line and the lines in between stay mutated.
REGION_AFTER_CODE = "a start/end region after code marks only its own line (put the comment on a line of its own)"
# mutmut 3.8 reads a region's comments only between statements: inside brackets they mark nothing.
REGION_INSIDE_BRACKETS = (
    "a start/end region inside brackets marks nothing (open it before the statement, between statements)"
)


def _bracket_depths(text: str) -> dict[int, int]:
    """For each line with a comment, how many brackets are open where the comment stands."""
    depth, depths = 0, {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.COMMENT:
            depths[tok.start[0]] = depth
    return depths


def markings(source: Path) -> list[Marking]:
    """Every no-mutate pragma under ``source``: where it is, whether it covers more than its
    line, the one-line reason after its `` - `` (``None`` when it gives none), and the
    ``problem`` that makes the gate refuse it (``None`` for a sound marking)."""
    found = []
    for path in sorted(source.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "no mutate" not in text:  # nothing to read, and no need to tokenize it
            continue
        depths = _bracket_depths(text)
        for number, line in enumerate(text.splitlines(), 1):
            m = _PRAGMA.search(line)
            if not m:
                continue
            after_code = m["kind"] in ("start", "end") and line[: m.start()].strip() != ""
            if m["kind"] == "end" and not after_code:  # a region's reason is on its start line
                continue
            inside = m["kind"] in ("start", "block") and depths.get(number, 0) > 0
            problem = (
                REGION_AFTER_CODE
                if after_code
                else REGION_INSIDE_BRACKETS
                if inside
                else None
                if m["reason"]
                else NO_REASON
            )
            found.append(
                Marking(
                    where=f"{path.relative_to(source.parent).as_posix()}:{number}",
                    block=m["kind"] in ("block", "start") and not after_code,
                    reason=m["reason"],
                    problem=problem,
                )
            )
    return found
