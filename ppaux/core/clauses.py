"""The contract's clauses: one id and one statement each, the one source of truth for them.

The conformance tests carry these ids in their ``clause`` marks, ``ppaux check`` prints each
statement beside its verdict, and ``docs/contract.md``'s clause table is generated from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Clause:
    id: str
    statement: str
    # Where SGLang 0.5.23 behaves otherwise (its conformance tests carry the ``robustness`` mark).
    sglang_differs: str | None = None


_CLAUSES = (
    Clause("add.1", "A `None` output is a no-op: add returns and the dict is untouched."),
    Clause("add.2", "An output that does not support PP transport (no `to_pp_tensors`) raises A1."),
    Clause("add.3", "`to_pp_tensors()` is called exactly once; an exception it raises propagates unchanged."),
    Clause("add.4", "A falsy payload (an empty mapping, `None`) raises A2."),
    Clause(
        "add.5",
        "Items are checked in iteration order and the first failing item decides; within an item a name "
        "that is not a non-empty `str` is A3, then a value that is not a tensor is A4, then a reserved key "
        "already in the dict is A5.",
    ),
    Clause(
        "add.6",
        "All or nothing: when add raises, for any reason, the dict is exactly as before "
        "(same keys, same order, the same value objects).",
        sglang_differs="it writes each key as soon as its item passes, so a bad later item leaves the earlier keys "
        "in the dict that is then relayed.",
    ),
    Clause(
        "add.7",
        "On success the dict gains exactly one key `prefix + name` per item, bound to the payload's own "
        "tensor object; every earlier key keeps its value object and its position.",
    ),
    Clause(
        "pop.1",
        "The aux items are the `str` keys that start with the prefix, each named by its key with the "
        "prefix removed once; keys that are not `str` are ordinary keys.",
        sglang_differs="a key that is not a `str` raises `AttributeError`.",
    ),
    Clause(
        "pop.2",
        "Without aux items pop returns `None`, leaves the dict untouched and calls no observer "
        "(any observer, `None` included, is fine).",
    ),
    Clause(
        "pop.3",
        "With aux items, in this order: no observer is P1, an observer without `from_pp_tensors` is P2, "
        "an aux value that is not a tensor is P3.",
    ),
    Clause(
        "pop.4",
        "`from_pp_tensors()` is called exactly once, with a new `{name: value}` dict of every aux item "
        "(the very value objects); changing that dict changes nothing in the PP dict; an exception it "
        "raises propagates unchanged.",
        sglang_differs="it deletes the keys named by the dict it handed the observer, so a name the observer "
        "dropped leaks its key and a name it added raises `KeyError` half-way through.",
    ),
    Clause("pop.5", "An observer that returns `None` raises P4."),
    Clause("pop.6", "All or nothing: when pop raises, for any reason, the dict is exactly as before."),
    Clause(
        "pop.7",
        "On success pop returns the observer's own object and the dict loses exactly the aux keys; every "
        "other key keeps its value object and its position.",
    ),
    Clause(
        "round-trip",
        "add then pop on a dict without aux keys returns what the observer returned, leaves the dict "
        "exactly as it was, and hands the observer the payload's own tensors, name for name.",
    ),
    Clause(
        "no-leaked-keys",
        "After any sequence of adds and pops, every aux key in the dict belongs to an add that "
        "succeeded and has not yet been taken by a pop that succeeded.",
        sglang_differs="it leaks keys through add.6 and pop.4: an output that fails half-way, or an observer that "
        "changes the dict it is handed.",
    ),
    Clause(
        "composition",
        "Outputs with disjoint names can be added one after the other; one pop hands the observer all of them.",
    ),
    Clause(
        "prefix-hygiene",
        "Keys that only resemble the prefix (no trailing dot, another case, the prefix mid-key) are ordinary keys.",
    ),
    Clause(
        "prefix-hazard",
        "An ordinary key that does start with the prefix is an aux key to pop: P1 without an "
        "observer, handed over and removed with one.",
    ),
    Clause(
        "values-never-read",
        "add and pop carry tensors of any dtype, shape (0-d and empty included), stride and "
        "device (`meta` included) without touching their data.",
    ),
)

CLAUSES: dict[str, Clause] = {c.id: c for c in _CLAUSES}


def statement(clause_id: str | None) -> str:
    """The clause's statement; empty for a test without a known clause."""
    clause = CLAUSES.get(clause_id or "")
    return clause.statement if clause else ""


def markdown_table() -> str:
    """docs/contract.md's clause table."""
    rows = ["| clause | statement | SGLang 0.5.23 |", "| --- | --- | --- |"]
    for c in _CLAUSES:
        rows.append(f"| {c.id} | {c.statement} | {'differs: ' + c.sglang_differs if c.sglang_differs else 'same'} |")
    return "\n".join(rows)
