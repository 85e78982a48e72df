"""``python -m reports build``: the page renders in headless Chromium, every section is there, no broken links."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from ppaux.mutation.own import score_modules
from ppaux.mutation.pragmas import NO_REASON, REGION_AFTER_CODE, REGION_INSIDE_BRACKETS, markings
from ppaux.mutation.project import module_of, parse_results
from ppaux.report import (
    BaselineComparison,
    FaultCell,
    FaultsReport,
    FuzzFailure,
    FuzzReplayReport,
    FuzzRunReport,
    ModuleScore,
    MutateReport,
    MutationReport,
    Survivor,
    write_report,
)
from ppaux.report.fuzz import DeadWorker, FixedTest, FuzzRound, WorkerRun
from ppaux.report.render import mutation_markdown
from reports.build import build
from reports.mutation import CHECKOUT, SCOPES
from tests.marked_source import MARKED
from tests.support import build_report

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("tests", "conformance", "faults", "coverage", "mutation", "mutate", "fuzz", "benchmarks")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_mutation_score_per_module_and_gate():
    listing = """    ppaux.core.transport.xǁPPAuxTransportǁadd__mutmut_1: killed
    ppaux.core.transport.xǁPPAuxTransportǁadd__mutmut_2: survived
    ppaux.cli.x_main__mutmut_1: killed
    ppaux.cli.x_main__mutmut_2: timeout
    ppaux.cli.x_main__mutmut_3: segfault
"""
    results = parse_results(listing)
    assert module_of("ppaux.core.transport.xǁPPAuxTransportǁadd__mutmut_1") == "ppaux.core.transport"

    def score(results, scope):
        # As mutation.json has them.
        return {m: s.to_json() for m, s in score_modules(results, {}, lambda m: CHECKOUT.gate_for(m, scope)).items()}

    modules = score(results, SCOPES["package"])
    assert modules["ppaux.core.transport"]["score"] == 50.0 and modules["ppaux.core.transport"]["verdict"] == "fail"
    assert modules["ppaux.core.transport"]["survivors"] == [
        {"mutant": "ppaux.core.transport.xǁPPAuxTransportǁadd__mutmut_2", "status": "survived"}
    ]
    # Outside the contract modules the package scope reports a score and gates nothing.
    assert modules["ppaux.cli"] == {
        "total": 3,
        "killed": 3,
        "equivalent": 0,
        "survivors": [],
        "score": 100.0,
        "gate": None,
        "verdict": "pass",
    }
    partly = score({**results, "ppaux.cli.x_main__mutmut_4": "survived"}, SCOPES["package"])["ppaux.cli"]
    assert (partly["score"], partly["verdict"]) == (75.0, "pass")
    assert score(results, SCOPES["contract"])["ppaux.cli"]["gate"] == 100.0


def test_equivalence_markings_are_listed_with_their_reasons_and_problems(tmp_path):
    src = tmp_path / "pkg"
    src.mkdir()
    (src / "m.py").write_text(MARKED)
    found = markings(src)
    assert [m.to_json() for m in found] == [
        {"where": "pkg/m.py:2", "block": False, "reason": "equivalent: same codec", "problem": None},
        {"where": "pkg/m.py:3", "block": True, "reason": "runs in a child", "problem": None},
        {"where": "pkg/m.py:5", "block": False, "reason": None, "problem": NO_REASON},
        {"where": "pkg/m.py:6", "block": True, "reason": "a tuned region", "problem": None},
        {"where": "pkg/m.py:9", "block": False, "reason": "after code", "problem": REGION_AFTER_CODE},
        {"where": "pkg/m.py:11", "block": False, "reason": None, "problem": REGION_AFTER_CODE},
        {"where": "pkg/m.py:13", "block": True, "reason": "inside a list", "problem": REGION_INSIDE_BRACKETS},
    ]
    report = MutationReport(
        scope="contract",
        scope_doc=SCOPES["contract"].doc,
        wall_s=1.0,
        mutmut="3.8.1",
        total=1,
        reused=0,
        ran=1,
        equivalent=0,
        killed=1,
        score=100.0,
        verdict="fail",
        verdicts={"killed": 3, "crashed (SIGABRT)": 1},
        only=(),
        modules={},
        markings=tuple(found),
    )
    write_report(tmp_path / "out", "mutation", report.to_json(), mutation_markdown(report))
    text = (tmp_path / "out" / "mutation.md").read_text()
    assert (
        "command: `python -m reports mutation --scope contract`\n"
        "- verdicts: killed 3, crashed (SIGABRT) 1\n\n| module |" in text
    )
    assert (
        "## Marked equivalent (`# pragma: no mutate`)\n\n"
        "- `pkg/m.py:2`: equivalent: same codec\n"
        "- `pkg/m.py:3` (block): runs in a child\n"
        f"- `pkg/m.py:5`: **{NO_REASON}**\n"
        "- `pkg/m.py:6` (block): a tuned region\n"
        f"- `pkg/m.py:9`: after code **{REGION_AFTER_CODE}**\n"
        f"- `pkg/m.py:11`: **{REGION_AFTER_CODE}**\n"
        f"- `pkg/m.py:13` (block): inside a list **{REGION_INSIDE_BRACKETS}**\n"
    ) in text


def test_the_regions_the_report_accepts_are_the_ones_mutmut_honours():
    # The report's rule for start/end regions copies what mutmut 3.8 does; if mutmut changes,
    # this fails and the rule must follow.
    import libcst
    from mutmut.mutation.pragma_handling import PragmaVisitor

    visitor = PragmaVisitor("m.py")
    libcst.MetadataWrapper(libcst.parse_module(MARKED)).visit(visitor)
    unmutated = visitor.no_mutate_lines | visitor.ignore_node_lines
    assert {3, 4, 6, 7, 8} <= unmutated  # the block and the region on lines of their own
    assert 10 not in unmutated  # inside the region opened after code
    assert 14 not in unmutated  # inside the region opened inside the list


def test_mutmut_reads_every_marking_in_ppaux():
    # A region mutmut cannot parse (an end it does not see, say between an if and its else) stops
    # the whole mutation run before the first mutant.
    import libcst
    from mutmut.mutation.pragma_handling import PragmaVisitor

    # Only "no mutate" comments open or close a region: a file without one has nothing to misread.
    marked = [
        path for path in sorted((ROOT / "ppaux").rglob("*.py")) if "no mutate" in path.read_text(encoding="utf-8")
    ]
    assert marked
    for path in marked:
        libcst.MetadataWrapper(libcst.parse_module(path.read_text(encoding="utf-8"))).visit(PragmaVisitor(str(path)))


def test_every_equivalence_marking_in_ppaux_gives_its_reason():
    marked = markings(ROOT / "ppaux")
    assert marked and [(e.where, e.problem) for e in marked if e.problem] == []


def _inputs(out: Path) -> None:
    (out / "fuzz").mkdir(parents=True)
    dead = DeadWorker(worker=2, round=3, placement="cpu", test="tests/t.py::u", exit_status=-9, log="l")
    failure = FuzzFailure(
        nodeid="tests/t.py::t",
        error="assert 1",
        example="Falsifying example: t()",
        blob="@reproduce_failure('x', b'y')",
        worker=1,
        workers=(1,),
        round=1,
        placements=("cpu",),
        found_after_s=30.0,
        seen=1,
    )
    fuzz = FuzzRunReport(
        started_at="2026-12-02T01:00:00+00:00",
        budget_s=60.0,
        elapsed_s=60.0,
        stopped_by="budget",
        complete=True,
        impl="x.py",
        db="d",
        suite="ppaux.conformance",
        tests=None,
        seed=None,
        shard=None,
        placements=("cpu",),
        workers=(
            WorkerRun(1, ("cpu",), 3, 700, 1, None, ((0, 0, 0), (60, 700, 1))),
            WorkerRun(2, ("cpu",), 3, 500, 0, dead, ((0, 0, 0), (60, 500, 0))),
        ),
        dead_workers=(dead,),
        examples=1200,
        examples_per_s=20.0,
        timeout_s=10.0,
        rounds=(FuzzRound(1, 1, "cpu", 50, 1200, 3, 0, "budget", "l"),),
        failures=(failure,),
        interrupted=(),
        timeline=((0, 0, 0), (30, 600, 1), (60, 1200, 1)),
    )
    (out / "fuzz" / "fuzz.json").write_text(json.dumps(fuzz.to_json()))
    replay = FuzzReplayReport(
        "2026-12-02T02:00:00+00:00", "x.py", "d", "cpu", 2, 5, (failure,), (FixedTest("t.py::u", 2),)
    )
    (out / "fuzz" / "replay.json").write_text(json.dumps(replay.to_json()))
    (out / "fuzz" / "fuzz.md").write_text("# Fuzz run\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n")
    (out / "mutation").mkdir()
    survivor = Survivor("ppaux.cli.x_main__mutmut_2", "survived")
    mutation = MutationReport(
        scope="contract",
        scope_doc="the contract modules",
        wall_s=50,
        mutmut="3.8.1",
        total=40,
        reused=0,
        ran=40,
        equivalent=0,
        killed=39,
        score=97.5,
        verdict="fail",
        verdicts={"killed": 39, "survived": 1},
        only=(),
        modules={"ppaux.cli": ModuleScore(40, 39, 0, (survivor,), 97.5, 100.0, "fail")},
        survivors=(Survivor(survivor.mutant, survivor.status, "-a\n+b"),),
    )
    (out / "mutation" / "mutation.json").write_text(json.dumps(mutation.to_json()))
    (out / "mutate").mkdir()
    side_by_side = {"both": 36, "only ppaux": 17, "only the baseline": 0, "neither": 0}
    mutate = MutateReport(
        implementation="sglang.srt.sampling.sampling_observer_pp",
        module="sglang.srt.sampling.sampling_observer_pp",
        mutmut="3.8.1",
        profile="mutation",
        marks="contract",
        tests=None,
        kill_set=40,
        left_out=(),
        wall_s=42.0,
        total=53,
        equivalent=0,
        killed=53,
        score=100.0,
        gate=100.0,
        verdict="pass",
        verdicts={"killed": 53},
        baseline=BaselineComparison("pytest t.py", 36, 67.92, side_by_side),
    )
    (out / "mutate" / "mutate.json").write_text(json.dumps(mutate.to_json()))
    (out / "mutate" / "mutate.md").write_text("# Mutation testing\n")
    (out / "junit.xml").write_text(
        '<testsuites><testsuite tests="2" failures="0" errors="0" skipped="0" time="1.5">'
        '<testcase classname="t" name="a"/><testcase classname="t" name="b"/></testsuite></testsuites>'
    )


def test_the_markdown_twins_render_below_the_page_headings_with_their_tables_and_code(tmp_path):
    out = tmp_path / "out"
    (out / "conformance").mkdir(parents=True)
    row = {"nodeid": "t.py::test_b", "clause": "add.1", "marks": ["contract"], "outcome": "failed", "error": "E"}
    report = build_report([row], impl="m", profile="ci", marks="contract")
    (out / "conformance" / "conformance.json").write_text(json.dumps(report))
    (out / "conformance" / "conformance.md").write_text(
        "# Conformance report: `m`\n\nVerdict: **FAIL**\n\n| clause | verdict |\n| --- | --- |\n| add.1 | fail |\n\n"
        "## Counterexamples\n\n### add.1: `t.py::test_b`\n\nError: `<class 'ValueError'>` & <b>raw</b>\n\n"
        "```\nFalsifying example: f(\n    n=0,\n)\n```\n\n"
        "Replay: `ppaux check --tests test_b`.\nBlob: `@reproduce_failure('6', b'AAA=')`\n"
    )
    (out / "bench.md").write_text("## PP auxiliary relay benchmarks\n\n| op | us |\n| --- | --- |\n| add+pop | 1.5 |\n")
    index = tmp_path / "index.html"
    build(str(out), str(index))
    page = index.read_text()
    assert "<h3>Conformance report: <code>m</code></h3>\n<p>Verdict: <strong>FAIL</strong></p>" in page
    assert "<th>clause</th>\n<th>verdict</th>" in page and "<td>add.1</td>\n<td>fail</td>" in page
    assert "<h4>Counterexamples</h4>\n<h5>add.1: <code>t.py::test_b</code></h5>" in page
    # An implementation's words are text on the page, never its markup.
    assert "<p>Error: <code>&lt;class 'ValueError'&gt;</code> &amp; &lt;b&gt;raw&lt;/b&gt;</p>" in page
    assert "<pre><code>Falsifying example: f(\n    n=0,\n)\n</code></pre>" in page
    assert "<p>Replay: <code>ppaux check --tests test_b</code>.<br />\nBlob: <code>@reproduce_failure" in page
    assert "<h4>PP auxiliary relay benchmarks</h4>\n<table>" in page and "<td>add+pop</td>\n<td>1.5</td>" in page


@pytest.mark.parametrize(
    "written, why",
    [
        pytest.param(
            json.dumps({"verdict": "pass", "clauses": []}),
            "this conformance report was written before 0.4 (no schema_version); ppaux reads format version 1: "
            "run the check again",
            id="of 0.3",
        ),
        # A check stopped between its two files, or a file cut short: the page says so and is built.
        pytest.param(None, "it is missing or not a JSON object", id="its Markdown only"),
        pytest.param("[]", "it is missing or not a JSON object", id="not an object"),
    ],
)
def test_a_conformance_report_that_cannot_be_read_is_shown_as_such_with_why_and_the_command(tmp_path, written, why):
    out = tmp_path / "out"
    (out / "conformance").mkdir(parents=True)
    (out / "conformance" / "conformance.md").write_text("# Conformance report\n")
    if written is not None:
        (out / "conformance" / "conformance.json").write_text(written)
    index = tmp_path / "index.html"
    build(str(out), str(index))
    section = index.read_text().split('<section id="conformance">', 1)[1].split("</section>", 1)[0]
    assert section.startswith('<h2>Conformance <span class="tile missing">missing</span></h2>')
    assert (
        f"<p class='missing'>conformance.json cannot be read: {why}. "
        "Run <code>ppaux check --report reports/out/conformance</code>.</p>"
    ) in section


def test_a_fuzz_report_of_0_3_is_shown_as_unreadable_with_its_version_and_the_command(tmp_path):
    # 0.3's fuzz.json and replay.json: no schema_version; the page says so, and writes no JUnit file from them.
    out = tmp_path / "out"
    (out / "fuzz").mkdir(parents=True)
    (out / "fuzz" / "fuzz.json").write_text(json.dumps({"kind": "fuzz-run", "failures": [], "workers": []}))
    (out / "fuzz" / "replay.json").write_text(json.dumps({"kind": "fuzz-replay", "still_failing": []}))
    index = tmp_path / "index.html"
    build(str(out), str(index))
    section = index.read_text().split('<section id="fuzz">', 1)[1].split("</section>", 1)[0]
    assert section.startswith('<h2>Fuzz run <span class="tile missing">missing</span></h2>')
    assert (
        "<p class='missing'>fuzz.json cannot be read: this fuzz-run report was written before 0.4 "
        "(no schema_version); ppaux reads format version 1: run the fuzz job again. "
        "Run <code>ppaux fuzz run --budget 30m --report reports/out/fuzz</code>.</p>"
    ) in section
    assert not (out / "junit-fuzz.xml").exists()


def test_a_replay_of_0_3_beside_a_fuzz_report_is_shown_as_unreadable(tmp_path):
    out = tmp_path / "out"
    _inputs(out)
    (out / "fuzz" / "replay.json").write_text(json.dumps({"kind": "fuzz-replay", "still_failing": []}))
    index = tmp_path / "index.html"
    build(str(out), str(index))
    assert (
        "<h3>Replay</h3><p class='missing'>replay.json cannot be read: this fuzz-replay report was written before "
        "0.4 (no schema_version); ppaux reads format version 1: run the replay again.</p>"
    ) in index.read_text()


def test_the_depth_benchmark_s_table_joins_the_benchmarks_section(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "depth_bench.md").write_text("| planted bug | fuzz |\n| --- | --- |\n| loop | 54.6 s |\n")
    index = tmp_path / "index.html"
    build(str(out), str(index))
    section = index.read_text().split('<section id="benchmarks">', 1)[1].split("</section>", 1)[0]
    assert "<h3>Depth: planted bugs beyond CI's scope</h3>" in section and "<td>loop</td>\n<td>54.6 s</td>" in section
    assert "Not yet generated." not in section


def test_missing_inputs_are_not_yet_generated_sections(tmp_path):
    index = tmp_path / "index.html"
    assert build(str(tmp_path / "out"), str(index)) == 0
    page = index.read_text()
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in page
    assert page.count("Not yet generated.") == len(SECTIONS)
    assert '<a href="out/' not in page
    # The commands' own defaults are .ppaux/<command>: each says where the page reads its files.
    for command in (
        "ppaux check --report reports/out/conformance",
        "python -m ppaux faults --channel gloo --integrity --report reports/out/faults",
        "ppaux mutate --impl MODULE_OR_FILE [--baseline COMMAND] --report reports/out/mutate",
        "ppaux fuzz run --budget 30m --report reports/out/fuzz",
    ):
        assert f"Run <code>{command}</code>." in page, command


def _links(page: str) -> list:
    return re.findall(r'href="([^"]+)"', page)


def test_page_has_every_section_a_fuzz_chart_a_mutation_chart_and_no_broken_links(tmp_path):
    out = tmp_path / "out"
    _inputs(out)
    index = tmp_path / "index.html"
    build(str(out), str(index))
    page = index.read_text()
    assert 'aria-label="fuzz run: examples over time and failures"' in page and "failure 1" in page
    # Over time per worker: a line each, named in the legend, beside the run's total.
    assert page.count('<polyline fill="none" stroke="#') == 3 and 'fill="#ef6c00">worker 2</text>' in page
    assert (
        "Worker 2 died in round 3 running <code>tests/t.py::u</code>: killed the process with SIGKILL (signal 9)."
        in page
    )
    assert (
        "<h3>Replay</h3><p>5 saved examples in 2 tests (implementation <code>x.py</code>): 1 still fail, "
        "1 no longer fail.</p>"
    ) in page
    assert 'aria-label="mutation score per module"' in page and "97.5% (39/40)" in page
    assert 'aria-label="mutants killed by ppaux and by the baseline"' in page and ">killed by only ppaux</text>" in page
    assert "ppaux's suite kills 100.0% (53/53)" in page and "which kills 67.92%" in page
    assert "tests/t.py::t" in page and "@reproduce_failure(&#x27;x&#x27;, b&#x27;y&#x27;)" in page
    assert "2 tests, 0 failed" in page
    for href in _links(page):
        if href.startswith("#"):
            assert f'id="{href[1:]}"' in page, href
        else:
            assert (index.parent / unquote(urlsplit(href).path)).exists(), href
    assert (out / "junit-fuzz.xml").read_text().count("<failure") == 1
    assert "&lt; gate 100.0%" in (out / "junit-mutation.xml").read_text()


@pytest.mark.subprocess
def test_page_renders_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    out = tmp_path / "out"
    _inputs(out)
    index = tmp_path / "index.html"
    build(str(out), str(index))
    dom = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", index.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in dom.stdout
    assert "<svg" in dom.stdout and "ppaux reports" in dom.stdout
    shot = tmp_path / "page.png"
    subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile2'}",
            f"--screenshot={shot}",
            "--window-size=1100,2400",
            index.as_uri(),
        ],
        capture_output=True,
        timeout=60,
    )
    assert shot.exists() and shot.stat().st_size > 10_000


def test_fault_matrices_show_each_channel_and_mode_against_the_expectation(tmp_path):
    out = tmp_path / "out"
    (out / "faults").mkdir(parents=True)
    cells = {
        "none": FaultCell("no fault", "harmless", "ok", "harmless"),
        "bit_flip": FaultCell("a bit flips", "silent corruption", "bytes differ", "silent corruption"),
    }
    (out / "faults" / "faults-gloo.json").write_text(json.dumps(FaultsReport("gloo", False, cells).to_json()))
    (out / "faults" / "faults-gloo.md").write_text("# matrix\n")
    index = tmp_path / "index.html"
    build(str(out), str(index))
    page = index.read_text()
    assert "<h3>gloo, SGLang&#x27;s wire: 1 silent corruption</h3>" in page
    assert '<a class="tile pass" href="#faults">Fault matrix: pass</a>' in page
    assert 'href="out/faults/faults-gloo.md"' in page and 'href="out/faults/faults-gloo.json"' in page
    cells["bit_flip"] = FaultCell("a bit flips", "silent corruption", "bytes differ", "documented error")
    (out / "faults" / "faults-gloo-integrity.json").write_text(json.dumps(FaultsReport("gloo", True, cells).to_json()))
    build(str(out), str(index))
    page = index.read_text()
    assert "<h3>gloo, integrity on: 1 silent corruption, 1 cells differ from the expectation</h3>" in page
    assert '<a class="tile fail" href="#faults">Fault matrix: fail</a>' in page
