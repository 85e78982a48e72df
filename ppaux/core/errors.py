"""The error catalog: the one source of truth for every documented PP auxiliary error.

The transport raises from here, the error table in docs/contract.md is generated from here,
and the tests compare against here. Each entry keeps the contract's exact message template.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogEntry:
    code: str
    raised_by: str
    template: str
    when: str
    meaning: str
    fixes: tuple[str, ...]

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

    def name_in(self, text: str) -> object:
        """The name that ``text``, one of this entry's messages, carries; ``None`` for an entry
        without a name. Raises ``ValueError`` when ``text`` is not one of its messages."""
        match = _message_pattern(self).fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not one of {self.code}'s messages")
        return ast.literal_eval(match.group(1)) if self.takes_name else None


def _message_pattern(entry: CatalogEntry) -> re.Pattern[str]:
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
    # Integrity mode (ppaux.integrity): off by default, so the default wire stays SGLang's.
    CatalogEntry(
        code="I1",
        raised_by="integrity add",
        template="auxiliary PP tensor {name!r} is not contiguous",
        when="integrity mode is on and a tensor of `to_pp_tensors()` is a non-contiguous view.",
        meaning=(
            "gloo refuses non-contiguous tensors (`input tensor has to be contiguous`) and SGLang's relay does not fix "
            "them: the send would fail mid-dict and leave the receiving stage waiting."
        ),
        fixes=("return `tensor.contiguous()` from `to_pp_tensors()`",),
    ),
    CatalogEntry(
        code="I2",
        raised_by="integrity pop",
        template="auxiliary PP output arrived without its integrity manifest",
        when="integrity mode is on, aux keys arrived, and the manifest key did not.",
        meaning=(
            "The sending stage does not run integrity mode, or the manifest was lost on the way; the aux tensors "
            "cannot be trusted."
        ),
        fixes=(
            "turn integrity mode on at both ends of the relay (the last stage adds, the first pops)",
            "look for a stage that rewrites the PP dict between them",
        ),
    ),
    CatalogEntry(
        code="I3",
        raised_by="integrity pop",
        template="auxiliary PP tensor {name!r} is missing",
        when="the manifest lists a tensor that did not arrive under its reserved key.",
        meaning="A key was dropped or renamed between the stages; the observer would rebuild a partial output.",
        fixes=(
            "find what drops or renames reserved keys between add and pop",
            "do not write or delete reserved keys outside add/pop",
        ),
    ),
    CatalogEntry(
        code="I4",
        raised_by="integrity pop",
        template="unexpected auxiliary PP tensor {name!r}",
        when="a reserved aux key arrived that the manifest does not list.",
        meaning="A key was renamed or injected between the stages, or a stale aux key was never popped.",
        fixes=(
            "find what renames or adds reserved keys between add and pop",
            "pop every step's auxiliary output before the dict is reused",
        ),
    ),
    CatalogEntry(
        code="I5",
        raised_by="integrity pop",
        template="auxiliary PP tensor {name!r} changed dtype or shape",
        when="a received tensor's dtype or shape differs from the manifest.",
        meaning="The tensor metadata was altered on the way; the receiver reinterpreted the bytes.",
        fixes=(
            "find what casts or reshapes the tensor between add and pop",
            "check that both stages run the same wire format",
        ),
    ),
    CatalogEntry(
        code="I6",
        raised_by="integrity pop",
        template="auxiliary PP tensor {name!r} failed its checksum",
        when="a received tensor's bytes do not match the checksum the sender computed.",
        meaning=(
            "The values changed on the way: corrupted bytes, a tensor moved off its device, or a tensor that differed "
            "across the ranks of the all-gather group (only one rank's slice of each survives)."
        ),
        fixes=(
            (
                "make aux tensors identical on every rank of the attention-TP group, or relay them without "
                "`all_gather_group`"
            ),
            "check the link between the stages for corruption",
        ),
    ),
    CatalogEntry(
        code="I7",
        raised_by="integrity pop",
        template="auxiliary PP output belongs to another batch: {name!r}",
        when="the manifest's batch id is not the batch the popping stage is processing.",
        meaning="Messages were reordered or one was lost; the output would be attached to the wrong requests.",
        fixes=(
            "pass the batch id to integrity add and pop",
            "keep one in-flight output message per micro-batch and match them by id",
        ),
    ),
)

CATALOG: dict[str, CatalogEntry] = {entry.code: entry for entry in _ENTRIES}


class AuxiliaryPPError(RuntimeError):
    """A documented PP auxiliary error; ``.code`` names its catalog entry."""

    def __init__(self, code: str, name: object = None) -> None:
        self.code = code
        self.entry = CATALOG[code]
        super().__init__(self.entry.message(name))


def lookup(query: str) -> CatalogEntry | None:
    """The entry for a code (``p1``) or for a pasted message, names filled in; else ``None``."""
    text = query.strip()
    by_code = CATALOG.get(text.upper())
    if by_code is not None:
        return by_code
    # Tracebacks prefix the message with the exception's class name.
    text = re.sub(r"^(?:[\w.]+(?:Error|Exception)):\s*", "", text)
    return next((e for e in _ENTRIES if e.matches(text)), None)


def markdown_table() -> str:
    """docs/contract.md's error table."""
    rows = ["| code | raised by | exact message | how to fix |", "| --- | --- | --- | --- |"]
    for e in _ENTRIES:
        fixes = "; ".join(e.fixes)
        rows.append(f"| {e.code} | {e.raised_by} | `{e.template}` | {fixes} |")
    return "\n".join(rows)
