"""The error catalog: the one source of truth for every documented PP auxiliary error.

The transport raises from here, the README's error table is generated from here, and
the tests compare against here. Each entry keeps the contract's exact message template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class CatalogEntry:
    code: str
    raised_by: str
    template: str
    when: str
    meaning: str
    fixes: Tuple[str, ...]

    @property
    def takes_name(self) -> bool:
        return "{name!r}" in self.template

    def message(self, name: object = None) -> str:
        """The exact ``str()`` of this error; ``name`` fills ``{name!r}`` templates."""
        if self.takes_name:
            return self.template.format(name=name)
        return self.template

    def matches(self, text: str) -> bool:
        """Whether ``text`` is this entry's message, with any name filled in."""
        return _message_pattern(self).fullmatch(text) is not None


def _message_pattern(entry: CatalogEntry) -> "re.Pattern[str]":
    # A pasted message carries the repr of a real name: accept any text in its place.
    head, sep, tail = entry.template.partition("{name!r}")
    body = re.escape(head) + ("(.+)" + re.escape(tail) if sep else "")
    return re.compile(body)


_ENTRIES = (
    CatalogEntry(
        code="A1",
        raised_by="add",
        template="auxiliary output does not support pipeline-parallel transport",
        when="add got an output that has no `to_pp_tensors` attribute.",
        meaning="The last stage's observer produced an auxiliary output type that cannot ride in the PP dict.",
        fixes=(
            "implement `to_pp_tensors() -> Mapping[str, Tensor]` on the auxiliary output class",
            "or return `None` from the observer on the last stage when there is nothing to relay",
        ),
    ),
    CatalogEntry(
        code="A2",
        raised_by="add",
        template="auxiliary PP output must contain at least one tensor",
        when="`to_pp_tensors()` returned an empty mapping or another falsy value (`None`).",
        meaning="An output was produced but it has nothing to send; the first stage could not rebuild it.",
        fixes=(
            "return at least one named tensor from `to_pp_tensors()`",
            "or return `None` instead of an empty output from the observer",
        ),
    ),
    CatalogEntry(
        code="A3",
        raised_by="add",
        template="auxiliary PP tensor names must be non-empty strings",
        when="a name in `to_pp_tensors()` is not a `str`, or is the empty string.",
        meaning="The name becomes part of a dict key; only non-empty `str` names survive the relay.",
        fixes=("name every tensor in `to_pp_tensors()` with a non-empty `str`",),
    ),
    CatalogEntry(
        code="A4",
        raised_by="add",
        template="auxiliary PP output {name!r} is not a tensor",
        when="a value in `to_pp_tensors()` is not a tensor (`torch.is_tensor` is false).",
        meaning="Only tensors travel as tensors; other values would be pickled into the metadata.",
        fixes=("convert the value to a `torch.Tensor` in `to_pp_tensors()` (e.g. `torch.as_tensor`)",),
    ),
    CatalogEntry(
        code="A5",
        raised_by="add",
        template="duplicate auxiliary PP tensor {name!r}",
        when="the reserved key for a name is already in the PP dict.",
        meaning="Two outputs (or a stale one never popped) claim the same name; one would overwrite the other.",
        fixes=(
            "give each auxiliary output distinct tensor names",
            "pop the previous step's auxiliary output before adding a new one to the same dict",
        ),
    ),
    CatalogEntry(
        code="P1",
        raised_by="pop",
        template="received auxiliary PP output without a sampling observer",
        when="the dict holds reserved aux keys and the popping stage's observer is `None`.",
        meaning="The last stage emits auxiliary output but the first stage cannot rebuild it.",
        fixes=(
            "install a `PipelineParallelSamplingObserver` on the stage that pops",
            "stop emitting auxiliary output on the last stage when the first has no observer",
            "propagate the observer wiring with the batch result",
        ),
    ),
    CatalogEntry(
        code="P2",
        raised_by="pop",
        template="sampling observer does not support pipeline-parallel transport",
        when="the dict holds aux keys and the observer has no `from_pp_tensors` attribute.",
        meaning="The first stage's observer cannot rebuild outputs that arrive over PP.",
        fixes=("implement `from_pp_tensors(Mapping[str, Tensor])` on the sampling observer",),
    ),
    CatalogEntry(
        code="P3",
        raised_by="pop",
        template="received a non-tensor auxiliary PP output",
        when="a value under a reserved aux key is not a tensor.",
        meaning="Something other than add wrote a reserved key, or an ordinary key starts with the prefix.",
        fixes=(
            "write reserved keys only through add",
            "rename ordinary keys that start with the reserved prefix",
        ),
    ),
    CatalogEntry(
        code="P4",
        raised_by="pop",
        template="sampling observer did not reconstruct its PP output",
        when="`from_pp_tensors()` returned `None`.",
        meaning="The observer received tensors but produced nothing; the output would be lost silently.",
        fixes=("return the rebuilt auxiliary output object from `from_pp_tensors()`",),
    ),
)

CATALOG: Dict[str, CatalogEntry] = {entry.code: entry for entry in _ENTRIES}


class AuxiliaryPPError(RuntimeError):
    """A documented PP auxiliary error; ``.code`` names its catalog entry."""

    def __init__(self, code: str, name: object = None) -> None:
        self.code = code
        self.entry = CATALOG[code]
        super().__init__(self.entry.message(name))


def lookup(query: str) -> Optional[CatalogEntry]:
    """The entry for a code (``p1``) or for a pasted message, names filled in; else ``None``."""
    text = query.strip()
    by_code = CATALOG.get(text.upper())
    if by_code is not None:
        return by_code
    # Tracebacks prefix the message with the exception's class name.
    text = re.sub(r"^(?:[\w.]+(?:Error|Exception)):\s*", "", text)
    return next((e for e in _ENTRIES if e.matches(text)), None)


def markdown_table() -> str:
    """The README's error table."""
    rows = ["| code | raised by | exact message | how to fix |", "| --- | --- | --- | --- |"]
    for e in _ENTRIES:
        fixes = "; ".join(e.fixes)
        rows.append(f"| {e.code} | {e.raised_by} | `{e.template}` | {fixes} |")
    return "\n".join(rows)
