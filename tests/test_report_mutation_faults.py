"""The mutation reports (``ppaux mutate``'s mutate.json, a checkout's own mutation.json) and the
fault matrix (``ppaux faults``), read as a CI job would: each validates against the JSON Schema
shipped for its kind, reads back into the same typed report, the schema rejects what ppaux does
not write, and a file of another format version is refused with one line. The files of real runs
are checked where they are written: tests/test_mutate.py, tests/test_mutation_runs.py,
tests/test_faults.py and here (tests/typed_reports.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from ppaux.cli.faults import build_report as faults_report
from ppaux.cli.main import main
from ppaux.mutation import mutate
from ppaux.mutation.mutate import KillSet, MutateOptions, MutateRun
from ppaux.mutation.target import Target
from ppaux.relay.faults import OUTCOMES, Verdict
from ppaux.report import (
    FaultsReport,
    Marking,
    ModuleScore,
    MutateReport,
    MutationReport,
    ReportFormatError,
    ReviewEntry,
    Survivor,
    SurvivorIdentity,
    schema,
)
from ppaux.report.render import faults_markdown, mutate_markdown, mutation_markdown
from reports.build import build
from tests.typed_reports import MODELS, read_valid, validate

D, X, H, S, OK = OUTCOMES


def mutate_json() -> dict:
    """mutate.json of a run beside a baseline: a survivor each side, one judged equivalent, one to review."""
    options = MutateOptions(impl="m.py", baseline="pytest t.py", tests="p4")
    suite = {"m.x_f__mutmut_1": "killed", "m.x_f__mutmut_2": "survived", "m.x_f__mutmut_3": "timeout"}
    baseline = {"m.x_f__mutmut_1": "killed", "m.x_f__mutmut_2": "killed", "m.x_f__mutmut_3": "survived"}
    diffs = {name: "-    return 1\n+    return 2\n" for name in suite}
    run = MutateRun(
        options, Target("m", Path("m.py")), KillSet(["t::a"], ["t::robust"]), suite, baseline, diffs, {}, 2.5
    )
    run.review = [ReviewEntry("m.x_f__mutmut_2", "eq.json: m:f: a -> b", "0" * 64)]
    return mutate.build_report(run).to_json()


def mutation_json() -> dict:
    """mutation.json of a scope's run: a gated module with a survivor, a reported one, a marking refused."""
    identity = SurvivorIdentity("p.m", "f", "return 1", "return 2", 0, "ab" * 32)
    survivor = Survivor("p.m.x_f__mutmut_2", "survived")
    return MutationReport(
        scope="contract",
        scope_doc="the contract modules",
        wall_s=3.0,
        mutmut="3.8.1",
        total=3,
        reused=1,
        ran=2,
        equivalent=1,
        killed=1,
        score=50.0,
        verdict="fail",
        verdicts={"killed": 1, "survived": 2},
        only=("p.m*",),
        modules={
            "p.m": ModuleScore(2, 1, 0, (survivor,), 50.0, 100.0, "fail"),
            "p.n": ModuleScore(1, 0, 1, (), 100.0, None, "pass"),
        },
        survivors=(Survivor(survivor.mutant, survivor.status, "-return 1\n+return 2\n", identity),),
        equivalents_files=("eq.json",),
        judged_equivalent={"p.n.x_g__mutmut_1": "no caller sees it"},
        stale_equivalents=("p.m.x_f__mutmut_9",),
        unmatched_equivalents=("no mutant matches: eq.json: p.m:gone: a -> b",),
        review_equivalents=(ReviewEntry("p.m.x_f__mutmut_2", "eq.json: p.m:f: a -> b", "cd" * 32),),
        markings=(Marking("p/m.py:3", False, None, "no reason given"), Marking("p/m.py:9", True, "why", None)),
    ).to_json()


def sglang_faults_json() -> dict:
    """A matrix over SGLang's code, ppaux's model's column beside it (the cells ppaux faults builds)."""
    cells = {"none": Verdict(OK, "fine"), "bit_flip": Verdict(S, "x")}
    model = {"none": Verdict(OK, "also fine"), "bit_flip": Verdict(H, "y")}
    expected = {"none": OK, "bit_flip": S}
    return faults_report(cells, channel="sglang", integrity=False, expected=expected, model=model).to_json()


SAMPLES = {"mutate": mutate_json, "mutation": mutation_json, "faults": sglang_faults_json}


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_the_shipped_schema_is_a_valid_json_schema(kind):
    jsonschema.Draft202012Validator.check_schema(schema(kind))


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_field_a_report_can_hold_is_what_the_schema_describes_and_reads_back(kind):
    data = SAMPLES[kind]()
    validate(data, kind)
    assert MODELS[kind].from_json(data).to_json() == data


def test_a_real_fault_matrix_in_integrity_mode_is_what_the_schema_describes(tmp_path, capsys):
    assert main(["faults", "--integrity", "--report", str(tmp_path)]) == 0
    data = read_valid(tmp_path / "faults-loopback-integrity.json", "faults")
    assert (data["kind"], data["integrity"], data["verdict"], data["silent_corruptions"]) == (
        "faults",
        True,
        "pass",
        [],
    )
    # The Markdown is the typed report's, read back from the file.
    assert faults_markdown(FaultsReport.from_json(data)) == capsys.readouterr().out


def test_a_matrix_where_sglang_and_the_model_part_fails_and_names_the_fault():
    data = sglang_faults_json()
    assert (data["verdict"], data["differs"], data["silent_corruptions"]) == ("fail", ["bit_flip"], ["bit_flip"])
    assert data["cells"]["bit_flip"]["model"] == {"outcome": H, "detail": "y"}


def _changed(data: dict, path: tuple, value: object) -> dict:
    changed = copy.deepcopy(data)
    *inner, last = path
    target = changed
    for key in inner:
        target = target[key]
    target[last] = value
    return changed


@pytest.mark.parametrize(
    "kind, path, value, why",
    [
        ("mutate", ("verdict",), True, "True is not one of ['pass', 'fail']"),
        ("mutate", ("passes",), True, "Additional properties are not allowed ('passes' was unexpected)"),
        ("mutate", ("schema_version",), 2, "1 was expected"),
        ("mutate", ("mutants", 1, "baseline"), "passed", "'passed' is not one of ['survived', 'killed', 'timeout']"),
        ("mutate", ("mutants", 1, "line"), None, "None is not of type 'string'"),
        ("mutate", ("baseline", "side_by_side", "both"), -1, "-1 is less than the minimum of 0"),
        (
            "mutation",
            ("modules", "p.m", "passes"),
            False,
            "Additional properties are not allowed ('passes' was unexpected)",
        ),
        ("mutation", ("score",), 100.5, "100.5 is greater than the maximum of 100"),
        ("mutation", ("equivalents", 0, "block"), "no", "'no' is not of type 'boolean'"),
        ("mutation", ("survivors", 0, "identity", "occurrence"), "0", "'0' is not of type 'integer'"),
        ("faults", ("cells", "none", "outcome"), "fine", f"'fine' is not one of {list(OUTCOMES)}"),
        ("faults", ("channel",), "nccl", "'nccl' is not one of ['loopback', 'gloo', 'sglang']"),
        ("faults", ("verdict",), "passed", "'passed' is not one of ['pass', 'fail']"),
        (
            "faults",
            ("cells", "none", "passes"),
            True,
            "Additional properties are not allowed ('passes' was unexpected)",
        ),
    ],
)
def test_the_schema_rejects_what_ppaux_does_not_write(kind, path, value, why):
    data = SAMPLES[kind]()
    validate(data, kind)
    with pytest.raises(jsonschema.ValidationError) as caught:
        validate(_changed(data, path, value), kind)
    assert caught.value.message == why


def test_a_mutant_shown_without_the_line_it_changes_is_refused():
    data = mutate_json()
    del data["mutants"][1]["line"]
    with pytest.raises(jsonschema.ValidationError) as caught:
        validate(data, "mutate")
    assert caught.value.message == "'line' is a dependency of 'diff'"


# What the refusal line tells the reader to run again, each kind its own command.
REMAKES = {
    "mutate": "run ppaux mutate again",
    "mutation": "run the mutation run again",
    "faults": "run ppaux faults again",
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
@pytest.mark.parametrize(
    "change, line",
    [
        (
            {"schema_version": None},
            "this {kind} report was written before 0.4 (no schema_version); ppaux reads format version 1: {remake}",
        ),
        (
            {"schema_version": 2},
            "this {kind} report was written in format version 2; ppaux reads format version 1: {remake}",
        ),
        ({"kind": "conformance"}, "not a {kind} report: its kind is 'conformance'"),
    ],
)
def test_a_report_of_another_format_version_is_refused_with_one_line(kind, change, line):
    data = {**SAMPLES[kind](), **change}
    if data["schema_version"] is None:
        del data["schema_version"], data["kind"]  # as 0.3 wrote it
    with pytest.raises(ReportFormatError) as caught:
        MODELS[kind].from_json(data)
    assert str(caught.value) == line.format(kind=kind, remake=REMAKES[kind])


# The files 0.3 wrote: "passes" where 0.4 writes "verdict", no kind (the fault matrix) and no schema_version.
OLD_FILES = {
    "mutation": ("mutation/mutation.json", {"kind": "mutation", "score": 97.5, "passes": False, "modules": {}}),
    "mutate": ("mutate/mutate.json", {"kind": "mutate", "score": 100.0, "passes": True}),
    "faults": ("faults/faults-gloo.json", {"channel": "gloo", "integrity": False, "cells": {}}),
}
COMMANDS = {
    "mutation": "python -m reports mutation",
    "mutate": "ppaux mutate --impl MODULE_OR_FILE [--baseline COMMAND] --report reports/out/mutate",
    "faults": "python -m ppaux faults --channel gloo --integrity --report reports/out/faults",
}


@pytest.mark.parametrize("kind", sorted(OLD_FILES))
def test_a_report_of_0_3_is_shown_on_the_page_as_unreadable_with_its_version_and_the_command(tmp_path, kind):
    name, data = OLD_FILES[kind]
    out = tmp_path / "out"
    (out / name).parent.mkdir(parents=True)
    (out / name).write_text(json.dumps(data))
    index = tmp_path / "index.html"
    build(str(out), str(index))
    section = index.read_text().split(f'<section id="{kind}">', 1)[1].split("</section>", 1)[0]
    assert '<span class="tile missing">missing</span></h2>' in section
    assert (
        f"<p class='missing'>{Path(name).name} cannot be read: this {kind} report was written before 0.4 "
        f"(no schema_version); ppaux reads format version 1: {REMAKES[kind]}. "
        f"Run <code>{COMMANDS[kind]}</code>.</p>"
    ) in section


def test_the_markdown_of_a_report_read_back_lists_the_judgements_to_review_and_those_matching_nothing():
    mutate_md = mutate_markdown(MutateReport.from_json(mutate_json()))
    assert mutate_md.endswith(
        "## Equivalence judgements to review (their function changed since)\n\n"
        f"- eq.json: m:f: a -> b: now `m.x_f__mutmut_2`, function_hash `{'0' * 64}`\n"
    )
    mutation_md = mutation_markdown(MutationReport.from_json(mutation_json()))
    assert (
        "## Equivalence judgements that match no mutant, or several (the run fails)\n\n"
        "- no mutant matches: eq.json: p.m:gone: a -> b\n\n"
        "## Equivalence judgements to review (their function changed since)\n\n"
        f"- eq.json: p.m:f: a -> b: now `p.m.x_f__mutmut_2`, function_hash `{'cd' * 32}`\n\n"
        "## Marked equivalent (`# pragma: no mutate`)\n\n"
        "- `p/m.py:3`: **no reason given**\n"
        "- `p/m.py:9` (block): why\n\n"
        "## Surviving mutants\n\n"
        "### `p.m.x_f__mutmut_2` (survived)\n\n"
        "```diff\n-return 1\n+return 2\n```\n"
    ) in mutation_md
