"""Mutants judged equivalent, keyed by what they are (:class:`~ppaux.mutation.identity.MutantIdentity`),
not by mutmut's ordinal names, and matched against a run's mutants.

The file (``docs/equivalents/<scope>.json`` for ppaux's own runs) is versioned::

    {"format": 2, "equivalents": [{"module": "pkg.mod", "function": "Class.method",
      "before": "...", "after": "...", "occurrence": 0, "function_hash": "<sha256>",
      "reason": "one line: why no test can tell"}]}

Each judgement must match exactly one mutant of the run (its module, function, change and
occurrence): one that matches none or several fails the run, named. One whose function's AST hash
is not the hash it was judged on still applies and is listed for review: the change is the same,
the code around it is not.

:func:`audit` reads the judgements against the code as it is, without mutmut (milliseconds, where
generating the mutants takes minutes): a CI step on every push, so that a judged function that
changes is looked at in the change that changed it, not by the next full mutation run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ppaux.mutation.identity import MutantIdentity, defined_functions
from ppaux.mutation.score import EquivalentsError, read_equivalents
from ppaux.report.files import write_atomic

__all__ = [
    "FORMAT",
    "MANY_MUTANTS",
    "NO_MUTANT",
    "REVIEW",
    "Audit",
    "Judgement",
    "Resolution",
    "audit",
    "read_any",
    "read_judgements",
    "resolve",
    "write_judgements",
]

FORMAT = 2
# What a judgement that does not hold exactly one mutant is called, on the console and in the report.
NO_MUTANT = "equivalence judgement matches no mutant"
MANY_MUTANTS = "equivalence judgement matches more than one mutant"
# A judgement whose function changed since: still applied, to be looked at again and restamped.
REVIEW = "equivalence judgement to review (its function changed since it was judged)"
_FIELDS = ("module", "function", "before", "after", "occurrence", "function_hash")


@dataclass(frozen=True)
class Judgement:
    """One mutant judged equivalent: its identity as judged (the hash of its function then), the
    one-line reason, and the file it comes from."""

    identity: MutantIdentity
    reason: str
    file: str = ""

    def describe(self) -> str:
        """The entry, named for a message: ``file: module:function: before -> after``."""
        return f"{self.file}: {self.identity.describe()}" if self.file else self.identity.describe()


def read_judgements(path: str | Path) -> list[Judgement]:
    """The judgements of the equivalents file at ``path``; raises :class:`EquivalentsError`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EquivalentsError(f"{str(path)!r}: {exc}") from None
    shape = f"{str(path)!r} must be a JSON object {{'format': {FORMAT}, 'equivalents': [...]}}"
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("equivalents"), list):
        raise EquivalentsError(shape)
    judgements = []
    for entry in data["equivalents"]:
        ok = (
            isinstance(entry, dict)
            and all(isinstance(entry.get(f), str) for f in (*_FIELDS[:4], "function_hash"))
            and type(entry.get("occurrence")) is int
            and isinstance(entry.get("reason"), str)
            and entry["reason"].strip()
        )
        if not ok:
            raise EquivalentsError(f"{shape}; each entry {', '.join(_FIELDS)} and a reason: {entry!r}")
        identity = MutantIdentity(**{f: entry[f] for f in _FIELDS})
        judgements.append(Judgement(identity, entry["reason"], str(path)))
    return judgements


def read_any(path: str | Path) -> list[Judgement] | dict[str, str]:
    """The file at ``path`` in either format: judgements keyed by identity (a file with a
    ``format``), or the older ``{mutmut name: reason}`` (:func:`~ppaux.mutation.score.read_equivalents`)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return read_equivalents(path)  # it says what is wrong
    return read_judgements(path) if isinstance(data, dict) and "format" in data else read_equivalents(path)


def write_judgements(path: str | Path, judgements: Iterable[Judgement], *, sort: bool = True) -> None:
    """The equivalents file at ``path``, one entry per judgement, in module, function, change order
    (``sort=False``: in the order given, as a file read and written back keeps its own)."""
    ordered = sorted(judgements, key=lambda j: j.identity.key) if sort else judgements
    entries = [{**asdict(j.identity), "reason": j.reason} for j in ordered]
    text = json.dumps({"format": FORMAT, "equivalents": entries}, indent=2, ensure_ascii=False)
    write_atomic(Path(path), text + "\n")


@dataclass
class Resolution:
    """Judgements matched to a run's mutants: ``judged`` (``{mutmut name: reason}``), the entries
    that match no mutant or several (``problems``: one line each, the entry named) and those whose
    function changed (``review``: ``{mutmut name: judgement}``)."""

    judged: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    review: dict[str, Judgement] = field(default_factory=dict)


def resolve(judgements: Iterable[Judgement], identities: Mapping[str, MutantIdentity]) -> Resolution:
    """Each judgement on the one mutant of ``identities`` (``{mutmut name: identity}``) with its key."""
    by_key: dict[tuple[str, str, str, str, int], list[str]] = {}
    for name, identity in identities.items():
        by_key.setdefault(identity.key, []).append(name)
    out = Resolution()
    for judgement in judgements:
        names = by_key.get(judgement.identity.key, [])
        if len(names) != 1:
            out.problems.append(f"{NO_MUTANT if not names else MANY_MUTANTS}: {judgement.describe()}")
            continue
        (name,) = names
        out.judged[name] = judgement.reason
        if identities[name].function_hash != judgement.identity.function_hash:
            out.review[name] = judgement
    return out


@dataclass
class Audit:
    """Judgements read against the code as it is (:func:`audit`): ``gone``, those that can match no
    mutant any more (their function, or the line they change, is no longer there: a run would fail
    on them); ``changed``, those whose function changed since (``(judgement, its function's hash
    now)``: to review, as a run would list them, then :meth:`restamped`)."""

    gone: list[Judgement] = field(default_factory=list)
    changed: list[tuple[Judgement, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per judgement to look at, as a mutation run words it."""
        return [f"{NO_MUTANT}: {j.describe()}" for j in self.gone] + [
            f"{REVIEW}: {j.describe()} (function_hash now {now})" for j, now in self.changed
        ]

    def restamped(self, judgements: Iterable[Judgement]) -> list[Judgement]:
        """``judgements`` with each changed one stamped with its function's hash now: what a reviewer
        who found them still equivalent writes back (:func:`write_judgements`)."""
        now = dict(self.changed)
        return [replace(j, identity=replace(j.identity, function_hash=now[j])) if j in now else j for j in judgements]


def _changes(lines: list[str], before: str) -> bool:
    # A change over several lines is joined by " / " (identity.line_change): any run of lines may be it.
    most = before.count(" / ") + 1
    return any(" / ".join(lines[i : i + k]) == before for k in range(1, most + 1) for i in range(len(lines)))


def audit(judgements: Iterable[Judgement], module_source: Callable[[str], str | None]) -> Audit:
    """Each judgement against its function as ``module_source(module)`` (the module's text, ``None``
    when there is none) defines it now. A function whose hash is the stamped one is the function
    judged: its mutants are the same. Otherwise the judgement is gone when the function, or the line
    its mutant changes, is no longer there, and changed when it still is."""
    out = Audit()
    # Each module read and parsed once: its judgements are many.
    modules: dict[str, dict[str, tuple[str, list[str]]]] = {}
    for judgement in judgements:
        identity = judgement.identity
        if identity.module not in modules:
            text = module_source(identity.module)
            modules[identity.module] = defined_functions(text) if text is not None else {}
        found = modules[identity.module].get(identity.function)
        if found is None or (found[0] != identity.function_hash and not _changes(found[1], identity.before)):
            out.gone.append(judgement)
        elif found[0] != identity.function_hash:
            out.changed.append((judgement, found[0]))
    return out
