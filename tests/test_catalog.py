"""The error catalog: the contract's nine errors, exact texts, lookup by code or pasted message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ppaux.core.errors import CATALOG, AuxiliaryPPError, lookup, markdown_table

ROOT = Path(__file__).resolve().parent.parent

# Transcribed from the agreed contract's table, independently of the catalog, so that a typo in either shows.
CONTRACT_TEXTS = {
    "A1": "auxiliary output does not support pipeline-parallel transport",
    "A2": "auxiliary PP output must contain at least one tensor",
    "A3": "auxiliary PP tensor names must be non-empty strings",
    "A4": "auxiliary PP output {name!r} is not a tensor",
    "A5": "duplicate auxiliary PP tensor {name!r}",
    "P1": "received auxiliary PP output without a sampling observer",
    "P2": "sampling observer does not support pipeline-parallel transport",
    "P3": "received a non-tensor auxiliary PP output",
    "P4": "sampling observer did not reconstruct its PP output",
}


def test_catalog_holds_the_contract_errors_verbatim():
    assert {code: CATALOG[code].template for code in CONTRACT_TEXTS} == CONTRACT_TEXTS
    assert {code: CATALOG[code].raised_by for code in CONTRACT_TEXTS} == {
        c: ("add" if c[0] == "A" else "pop") for c in CONTRACT_TEXTS
    }


def test_every_entry_says_when_what_and_how_to_fix():
    for entry in CATALOG.values():
        assert entry.when and entry.meaning and entry.fixes and all(entry.fixes), entry.code


def test_p1_lists_the_three_fixes():
    assert CATALOG["P1"].fixes == (
        "install a `PipelineParallelSamplingObserver` on the stage that pops",
        "stop emitting auxiliary output on the last stage when the first has no observer",
        "propagate the observer wiring with the batch result",
    )


@pytest.mark.parametrize("name", ["scores", "it's", "", "é\n"])
def test_named_messages_use_the_repr_of_the_name(name):
    err = AuxiliaryPPError("A4", name)
    assert str(err) == f"auxiliary PP output {name!r} is not a tensor"
    assert err.code == "A4" and err.entry is CATALOG["A4"] and isinstance(err, RuntimeError)


@pytest.mark.parametrize("name", ["scores", "it's", "", "é\n", 3, ("a", 1)])
def test_the_name_is_read_back_from_a_named_message(name):
    for code in ("A4", "A5"):
        assert CATALOG[code].name_in(CATALOG[code].message(name)) == name


def test_an_unnamed_message_carries_no_name_and_a_foreign_text_is_refused():
    assert CATALOG["P1"].name_in(CONTRACT_TEXTS["P1"]) is None
    with pytest.raises(ValueError) as info:
        CATALOG["A4"].name_in(CONTRACT_TEXTS["A5"])
    assert str(info.value) == "'duplicate auxiliary PP tensor {name!r}' is not one of A4's messages"


def test_unnamed_messages_ignore_a_name():
    assert str(AuxiliaryPPError("P1")) == CONTRACT_TEXTS["P1"]
    assert CATALOG["P1"].message("ignored") == CONTRACT_TEXTS["P1"]


@pytest.mark.parametrize(
    "query, code",
    [
        ("p1", "P1"),
        (" A5 ", "A5"),
        ("received auxiliary PP output without a sampling observer", "P1"),
        ("RuntimeError: duplicate auxiliary PP tensor 'scores'", "A5"),
        ("ppaux.errors.AuxiliaryPPError: auxiliary PP output 'top.k' is not a tensor", "A4"),
        ('auxiliary PP output "it\'s" is not a tensor', "A4"),
    ],
)
def test_lookup_by_code_or_pasted_message(query, code):
    assert lookup(query) is CATALOG[code]


@pytest.mark.parametrize(
    "query",
    [
        "Z9",
        "",
        "received auxiliary PP output",
        "duplicate auxiliary PP tensor",
        "auxiliary PP output  is not a tensor x",
    ],
)
def test_lookup_rejects_what_is_not_a_whole_message(query):
    assert lookup(query) is None


def test_the_contracts_error_table_is_generated_from_the_catalog():
    contract = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    assert markdown_table() in contract, "docs/contract.md's error table is stale: paste `ppaux errors --markdown`"
    for entry in CATALOG.values():
        assert re.search(
            rf"^\| {entry.code} \| {entry.raised_by} \| `{re.escape(entry.template)}` \|", markdown_table(), re.M
        )
