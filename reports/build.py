"""``python -m reports build``: every report under reports/out/ on one page, reports/index.html,
plus JUnit XML for CI systems (junit-fuzz.xml, junit-mutation.xml next to pytest's junit.xml).

Inputs that are not there yet become "not yet generated" sections with the command that makes
them. The conformance, mutation (``ppaux mutate``'s and ppaux's own) and fault-matrix reports are
read through their typed models (``ppaux.report``), each refusing a file of another format version
with one line; the others are read for their verdict and shown with their Markdown twin.
"""

from __future__ import annotations

import html
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore

from ppaux.isolation import describe_exitcode
from ppaux.report import (
    ConformanceReport,
    FaultsReport,
    FuzzReplayReport,
    FuzzRunReport,
    ModuleScore,
    MutateReport,
    MutationReport,
    ReportFormatError,
)

E = html.escape


def _below_the_page_headings(state: StateCore) -> None:
    """The page owns h1 and h2: a report's own headings start at h3 (``#`` is h3, ``##`` h4, down to h6)."""
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 2, 6)}"


# CommonMark with GitHub's tables, which the reports' Markdown twins use. Raw HTML is escaped, not
# passed through: a report quotes an implementation's error messages, which are not the page's markup.
# A report's consecutive lines (a replay command, then its blob) stay lines of their own on the page.
MARKDOWN = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable("table")
MARKDOWN.core.ruler.push("below_the_page_headings", _below_the_page_headings)


def to_html(md: str) -> str:
    """One of the reports' Markdown files as a fragment of the page."""
    fragment: str = MARKDOWN.render(md)
    return fragment


def inline(text: str) -> str:
    """One line of Markdown (code spans, emphasis) inside the page's own markup."""
    fragment: str = MARKDOWN.renderInline(text)
    return fragment


class Page:
    def __init__(self, out: Path, index: Path) -> None:
        self.out = out
        self.index = index
        self.sections: list[tuple[str, str, str, str]] = []  # (id, title, status, body)

    def link(self, path: Path, text: str) -> str:
        """A link to a generated file, only when it exists: the page never links to nothing."""
        if not path.exists():
            return ""
        rel = os.path.relpath(path, self.index.parent)
        return f'<a href="{E(rel)}">{E(text)}</a>'

    def add(self, sid: str, title: str, status: str, body: str) -> None:
        self.sections.append((sid, title, status, body))


def _load(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _missing(command: str) -> str:
    return f'<p class="missing">Not yet generated. Run <code>{E(command)}</code>.</p>'


def _md(path: Path, summary: str = "full report") -> str:
    if not path.exists():
        return ""
    html = to_html(path.read_text(encoding="utf-8"))
    return f"<details><summary>{E(summary)}</summary><div class='md'>{html}</div></details>"


def _scalars(data: dict[str, Any]) -> str:
    rows = [(k, v) for k, v in data.items() if isinstance(v, (str, int, float, bool)) or v is None]
    rows += [
        (k, ", ".join(f"{a}: {b}" for a, b in v.items()))
        for k, v in data.items()
        if isinstance(v, dict) and all(isinstance(b, (str, int, float, bool)) for b in v.values())
    ]
    if not rows:
        return ""
    return (
        "<table class='kv'>"
        + "".join(f"<tr><th>{E(str(k))}</th><td>{E(str(v))}</td></tr>" for k, v in rows)
        + "</table>"
    )


def section_tests(page: Page) -> None:
    path = page.out / "junit.xml"
    if not path.exists():
        return page.add(
            "tests",
            "Test suite",
            "missing",
            _missing("pytest --hypothesis-profile=ci --junitxml=reports/out/junit.xml"),
        )
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    secs = sum(float(s.get("time", 0)) for s in suites)
    bad = counts["failures"] + counts["errors"]
    failed = [
        f"{c.get('classname')}::{c.get('name')}"
        for s in suites
        for c in s.iter("testcase")
        if c.find("failure") is not None or c.find("error") is not None
    ]
    body = (
        f"<p>{counts['tests']} tests, {bad} failed, {counts['skipped']} skipped in {secs:.1f} s. "
        f"{page.link(path, 'JUnit XML')}</p>"
        + ("<ul>" + "".join(f"<li><code>{E(f)}</code></li>" for f in failed) + "</ul>" if failed else "")
    )
    page.add("tests", "Test suite", "fail" if bad else "pass", body)


def section_conformance(page: Page) -> None:
    """``ppaux check``'s report, read as typed data: its verdict, what was checked, the broken clauses."""
    js, md = page.out / "conformance" / "conformance.json", page.out / "conformance" / "conformance.md"
    command = "ppaux check --report reports/out/conformance"
    data = _load(js)
    if data is None and not md.exists():
        return page.add("conformance", "Conformance", "missing", _missing(command))
    links = " ".join(x for x in (page.link(md, "conformance.md"), page.link(js, "conformance.json")) if x)
    try:
        # The Markdown without its JSON: a check stopped between the two, or a file cut short.
        if not isinstance(data, dict):
            raise ReportFormatError("it is missing or not a JSON object")
        report = ConformanceReport.from_json(data)
    except ReportFormatError as exc:
        return page.add("conformance", "Conformance", "missing", _unreadable(js, exc, command) + f"<p>{links}</p>")
    counts = ", ".join(f"{n} {outcome}" for outcome, n in report.counts.items())
    broken = ", ".join(report.failed_clauses) or "none"
    summary = _scalars(
        {"implementation": report.implementation, "profile": report.profile, "tests": report.marks, "counts": counts}
    )
    body = summary + f"<p>Clauses broken: {E(broken)}</p><p>{links}</p>" + _md(md)
    page.add("conformance", "Conformance", report.verdict, body)


def section_coverage(page: Page) -> None:
    xml, htmlindex = page.out / "coverage" / "coverage.xml", page.out / "coverage" / "html" / "index.html"
    if not xml.exists():
        return page.add(
            "coverage",
            "Coverage",
            "missing",
            _missing(
                "pytest --hypothesis-profile=ci --cov-report=xml:reports/out/coverage/coverage.xml "
                "--cov-report=html:reports/out/coverage/html"
            ),
        )
    root = ET.parse(xml).getroot()
    line, branch = float(root.get("line-rate", 0)) * 100, float(root.get("branch-rate", 0)) * 100
    body = (
        f"<p class='big'>{line:.1f}% lines, {branch:.1f}% branches of <code>ppaux/</code> (goal 100%).</p>"
        f"<p>{page.link(htmlindex, 'HTML report')} {page.link(xml, 'coverage.xml')}</p>"
    )
    page.add("coverage", "Coverage", "pass" if line >= 100 and branch >= 100 else "fail", body)


def _unreadable(path: Path, exc: ReportFormatError, command: str) -> str:
    """A report that cannot be read (of another format version, say): the one line that says why, and the
    command that writes it again."""
    return f"<p class='missing'>{E(path.name)} cannot be read: {E(str(exc))}. Run <code>{E(command)}</code>.</p>"


def _bar_chart(modules: Mapping[str, ModuleScore]) -> str:
    names = list(modules)
    h = 26 * len(names) + 30
    rows = []
    for i, name in enumerate(names):
        m = modules[name]
        y = 10 + 26 * i
        w = 4.2 * m.score
        colour = "#2e7d32" if m.verdict == "pass" else "#c62828"
        # A module with a gate shows it as a dashed line; a reported-only one has none.
        gate = (
            ""
            if m.gate is None
            else (
                f'<line x1="{190 + 4.2 * m.gate:.1f}" x2="{190 + 4.2 * m.gate:.1f}" y1="{y - 2}" y2="{y + 20}" '
                'stroke="#000" stroke-dasharray="3,2"/>'
            )
        )
        rows.append(
            f'<text x="185" y="{y + 14}" text-anchor="end">{E(name)}</text>'
            f'<rect x="190" y="{y}" width="{w:.1f}" height="18" fill="{colour}"/>{gate}'
            f'<text x="{195 + w:.1f}" y="{y + 14}">'
            f"{m.score}% ({m.killed}/{m.total - m.equivalent})</text>"
        )
    return (
        f'<svg class="chart" role="img" aria-label="mutation score per module" width="720" height="{h}" '
        f'viewBox="0 0 720 {h}" xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>'
    )


def section_mutation(page: Page) -> None:
    """ppaux's own mutation run, read as typed data: the score, the chart per module, the survivors."""
    js, md = page.out / "mutation" / "mutation.json", page.out / "mutation" / "mutation.md"
    command = "python -m reports mutation"
    data = _load(js)
    if not isinstance(data, dict):
        return page.add("mutation", "Mutation testing", "missing", _missing(command))
    try:
        report = MutationReport.from_json(data)
    except ReportFormatError as exc:
        return page.add("mutation", "Mutation testing", "missing", _unreadable(js, exc, command))
    surv = report.survivors
    body = (
        f"<p class='big'>{report.score}% killed ({report.killed}/{report.counted} mutants), {report.wall_s} s; "
        f"gate {'pass' if report.verdict == 'pass' else 'FAIL'} "
        f"(scope <code>{E(report.scope)}</code>: {E(report.scope_doc)}).</p>"
        + _bar_chart(report.modules)
        + f"<p>{len(surv)} surviving mutants. "
        f"{page.link(md, 'mutation.md (every diff)')} {page.link(js, 'mutation.json')}</p>"
        + (
            "<details><summary>surviving mutants</summary>"
            + "".join(f"<h4><code>{E(s.mutant)}</code> ({E(s.status)})</h4><pre>{E(s.diff or '')}</pre>" for s in surv)
            + "</details>"
            if surv
            else ""
        )
    )
    page.add("mutation", "Mutation testing", report.verdict, body)


def _side_by_side_chart(sides: dict[str, int]) -> str:
    """One bar per kind of mutant: killed by both, by ppaux's suite only, by the baseline only, by neither."""
    total = max(sum(sides.values()), 1)
    colours = {"both": "#2e7d32", "only ppaux": "#1565c0", "only the baseline": "#ef6c00", "neither": "#c62828"}
    rows = []
    for i, (kind, n) in enumerate(sides.items()):
        y, w = 10 + 26 * i, 420 * n / total
        rows.append(
            f'<text x="185" y="{y + 14}" text-anchor="end">killed by {E(kind)}</text>'
            f'<rect x="190" y="{y}" width="{w:.1f}" height="18" fill="{colours.get(kind, "#555")}"/>'
            f'<text x="{195 + w:.1f}" y="{y + 14}">{n}</text>'
        )
    h = 26 * len(sides) + 20
    return (
        '<svg class="chart" role="img" aria-label="mutants killed by ppaux and by the baseline" '
        f'width="720" height="{h}" '
        f'viewBox="0 0 720 {h}" xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>'
    )


def section_mutate(page: Page) -> None:
    """``ppaux mutate``'s report, read as typed data: the suite's score, beside the baseline's where one ran."""
    js, md = page.out / "mutate" / "mutate.json", page.out / "mutate" / "mutate.md"
    command = "ppaux mutate --impl MODULE_OR_FILE [--baseline COMMAND] --report reports/out/mutate"
    data = _load(js)
    if not isinstance(data, dict):
        return page.add("mutate", "ppaux mutate", "missing", _missing(command))
    try:
        report = MutateReport.from_json(data)
    except ReportFormatError as exc:
        return page.add("mutate", "ppaux mutate", "missing", _unreadable(js, exc, command))
    body = (
        f"<p class='big'><code>{E(report.implementation)}</code>: ppaux's suite kills {report.score}% "
        f"({report.killed}/{report.counted}); gate {report.gate}% {'pass' if report.verdict == 'pass' else 'FAIL'}, "
        f"{report.wall_s} s.</p>"
    )
    if report.baseline is not None:
        b = report.baseline
        body += f"<p>Beside <code>{E(b.command)}</code>, which kills {b.score}%:</p>" + _side_by_side_chart(
            dict(b.side_by_side)
        )
    body += f"<p>{page.link(md, 'mutate.md (every survivor with its diff)')} {page.link(js, 'mutate.json')}</p>"
    page.add("mutate", "ppaux mutate", report.verdict, body)


# One colour per worker (or shard), the run's total in blue above them.
_SERIES_COLOURS = ("#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#283593")


# x and y map a point's time and count to the chart's pixels.
Scale = Callable[[float], float]


def _polyline(points: Sequence[Sequence[float]], x: Scale, y: Scale, colour: str, width: float) -> str:
    pts = " ".join(f"{x(t):.1f},{y(e):.1f}" for t, e, _ in points)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="{width}" points="{pts}"/>'


def _fuzz_series(report: FuzzRunReport) -> list[tuple[str, Sequence[Sequence[float]]]]:
    """The chart's thin lines: each shard of a merged run, else each worker of a run with several."""
    if report.shards:
        return [(f"shard {s.shard}", s.timeline) for s in report.shards]
    workers = report.workers
    return [(f"worker {w.worker}", w.timeline) for w in workers] if len(workers) > 1 else []


def _fuzz_chart(
    timeline: Sequence[Sequence[float]], budget: float, series: Sequence[tuple[str, Sequence[Sequence[float]]]] = ()
) -> str:
    w, h, left, bottom = 720, 240, 60, 30
    pw, ph = w - left - 20, h - bottom - 20
    tmax = max([budget] + [p[0] for p in timeline]) or 1
    emax = max([p[1] for p in timeline] + [1])

    def x(t: float) -> float:
        return left + pw * t / tmax

    def y(e: float) -> float:
        return 20 + ph - ph * e / emax

    lines = [
        _polyline(points, x, y, _SERIES_COLOURS[i % len(_SERIES_COLOURS)], 1) for i, (_, points) in enumerate(series)
    ]
    legend = [
        f'<text x="{left + 8}" y="{34 + 13 * i}" fill="{_SERIES_COLOURS[i % len(_SERIES_COLOURS)]}">{E(name)}</text>'
        for i, (name, _) in enumerate(series[:8])
    ]
    marks: list[str] = []
    last, label_x = 0.0, float("-inf")
    for t, _e, f in timeline:
        if f > last:
            marks.append(
                f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="20" y2="{20 + ph}" stroke="#c62828" stroke-width="2"/>'
            )
            if x(t) - label_x > 90:  # labels of close failures would overlap: the next one far enough says the count
                marks.append(
                    f'<text x="{x(t) + 3:.1f}" y="{32 + 14 * (len(marks) % 3)}" fill="#c62828">failure {f}</text>'
                )
                label_x = x(t)
            last = f
    axes = (
        f'<line x1="{left}" y1="{20 + ph}" x2="{left + pw}" y2="{20 + ph}" stroke="#000"/>'
        f'<line x1="{left}" y1="20" x2="{left}" y2="{20 + ph}" stroke="#000"/>'
        f'<text x="{left - 5}" y="26" text-anchor="end">{emax:,}</text>'
        f'<text x="{left - 5}" y="{20 + ph}" text-anchor="end">0</text>'
        f'<text x="{left + pw}" y="{h - 8}" text-anchor="end">{tmax:.0f} s</text>'
        f'<text x="{left}" y="{h - 8}">0 s</text>'
        f'<text x="{left + pw / 2}" y="{h - 8}" text-anchor="middle">elapsed</text>'
        f'<text x="14" y="{20 + ph / 2}" transform="rotate(-90 14 {20 + ph / 2})" '
        'text-anchor="middle">examples run</text>'
    )
    return (
        '<svg class="chart" role="img" aria-label="fuzz run: examples over time and failures" '
        f'width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">{axes}{"".join(lines)}'
        f"{_polyline(timeline, x, y, '#1565c0', 2)}{''.join(legend)}{''.join(marks)}</svg>"
    )


def _fuzz_summary(report: FuzzRunReport) -> str:
    workers, shards = report.workers, report.shards
    who = (f"{len(shards)} shards, " if shards else "") + (f"{len(workers)} workers, " if workers else "")
    return (
        f"<p class='big'>{report.examples:,} examples in {report.elapsed_s:.0f} s "
        f"of a {report.budget_s:.0f} s budget "
        f"({report.examples_per_s}/s), {who}{len(report.rounds)} rounds on {', '.join(map(E, report.placements))}; "
        f"<strong>{len(report.failures)} failures</strong>.</p>"
        + ("" if report.complete else f"<p class='warn'>Stopped early by {E(report.stopped_by)}: partial report.</p>")
        + "".join(
            f"<p class='warn'>Worker {d.worker}{' of shard ' + E(d.shard) if d.shard else ''} died in "
            f"round {d.round} running <code>{E(str(d.test))}</code>: {E(describe_exitcode(d.exit_status))}.</p>"
            for d in report.dead_workers
        )
        + f"<p>Implementation <code>{E(report.impl)}</code>, database <code>{E(report.db)}</code>.</p>"
    )


def _fuzz_replay(path: Path) -> str:
    """The replay's line, read as typed data: how many saved failures still fail."""
    data = _load(path)
    if not isinstance(data, dict):
        return ""
    try:
        replay = FuzzReplayReport.from_json(data)
    except ReportFormatError as exc:
        return f"<h3>Replay</h3><p class='missing'>replay.json cannot be read: {E(str(exc))}.</p>"
    return (
        f"<h3>Replay</h3><p>{replay.saved_examples} saved examples in {replay.tests_with_saved_failures} tests "
        f"(implementation <code>{E(replay.impl)}</code>): {len(replay.still_failing)} still fail, "
        f"{len(replay.no_longer_failing)} no longer fail.</p>"
    )


def section_fuzz(page: Page) -> None:
    """The fuzz job's report, read as typed data: its verdict, examples over time, each failure; the replay's line."""
    d = page.out / "fuzz"
    command = "ppaux fuzz run --budget 30m --report reports/out/fuzz"
    data = _load(d / "fuzz.json")
    links = (
        "<p>"
        + " ".join(
            x
            for x in (
                page.link(d / "fuzz.md", "fuzz.md"),
                page.link(d / "fuzz.json", "fuzz.json"),
                page.link(d / "replay.md", "replay.md"),
            )
            if x
        )
        + "</p>"
    )
    if not isinstance(data, dict):
        return page.add("fuzz", "Fuzz run", "missing", _missing(command))
    try:
        report = FuzzRunReport.from_json(data)
    except ReportFormatError as exc:
        return page.add("fuzz", "Fuzz run", "missing", _unreadable(d / "fuzz.json", exc, command) + links)
    body = _fuzz_summary(report) + _fuzz_chart(report.timeline, report.budget_s, _fuzz_series(report))
    for f in report.failures:
        where = f"shard {f.shard}, " if f.shard else ""
        body += (
            f"<h4><code>{E(f.nodeid)}</code></h4><p>{inline(f.error or '')} "
            f"({where}round {f.round}, {E(', '.join(f.placements))}, after {f.found_after_s} s)</p>"
            f"<pre>{E(f.example or '(see the report)')}</pre>" + (f"<pre>{E(f.blob)}</pre>" if f.blob else "")
        )
    page.add("fuzz", "Fuzz run", report.verdict, body + _fuzz_replay(d / "replay.json") + links)


def section_faults(page: Page) -> None:
    """Every matrix `ppaux faults` wrote (one per channel and mode), read as typed data: outcome per
    fault against the recorded expectation."""
    command = "python -m ppaux faults --channel gloo --integrity --report reports/out/faults"
    found = [(p, _load(p)) for p in sorted((page.out / "faults").glob("faults-*.json"))]
    matrices: list[tuple[Path, FaultsReport]] = []
    refused = ""
    for path, data in found:
        if not isinstance(data, dict):
            continue
        try:
            matrices.append((path, FaultsReport.from_json(data)))
        except ReportFormatError as exc:
            refused += _unreadable(path, exc, command)
    if not matrices:
        return page.add("faults", "Fault matrix", "missing", refused or _missing(command))
    body = refused
    for path, m in matrices:
        silent, off = len(m.silent_corruptions), m.differs
        mode = "integrity on" if m.integrity else "SGLang's wire"
        rows = "".join(
            f"<tr><td>{E(f)}</td><td{' class=warn' if f in m.silent_corruptions else ''}>{E(c.outcome)}</td>"
            f"<td>{E(c.expected)}</td><td>{E(c.detail[:160])}</td></tr>"
            for f, c in m.cells.items()
        )
        links = (page.link(path.with_suffix(".md"), path.stem + ".md"), page.link(path, path.name))
        body += (
            f"<h3>{E(m.channel)}, {E(mode)}: {silent} silent corruption{'s' if silent != 1 else ''}"
            f"{', ' + str(len(off)) + ' cells differ from the expectation' if off else ''}</h3>"
            f"<table><tr><th>fault</th><th>outcome</th><th>expected</th><th>detail</th></tr>{rows}</table>"
            f"<p>{' '.join(x for x in links if x)}</p>"
        )
    page.add("faults", "Fault matrix", "fail" if any(m.verdict == "fail" for _, m in matrices) else "pass", body)


def _depth_bench(page: Page) -> str:
    """The depth benchmark's table (``python -m reports.depth_bench``), where it was run."""
    md = page.out / "depth_bench.md"
    if not md.exists():
        return ""
    link = page.link(md, "depth_bench.md") or ""
    return f"<h3>Depth: planted bugs beyond CI's scope</h3><div class='md'>{to_html(md.read_text('utf-8'))}</div>{link}"


def section_bench(page: Page) -> None:
    js, md = page.out / "bench.json", page.out / "bench.md"
    data = _load(js)
    depth = _depth_bench(page)
    if data is None and not md.exists() and not depth:
        return page.add("benchmarks", "Benchmarks", "missing", _missing("python -m reports.bench"))
    links = " ".join(x for x in (page.link(md, "bench.md"), page.link(js, "bench.json")) if x)
    body = (_scalars(data) if isinstance(data, dict) else "") + f"<p>{links}</p>"
    body += f"<div class='md'>{to_html(md.read_text(encoding='utf-8'))}</div>" if md.exists() else ""
    page.add("benchmarks", "Benchmarks", "info", body + depth)


SECTIONS: list[Callable[[Page], None]] = [
    section_tests,
    section_conformance,
    section_faults,
    section_coverage,
    section_mutation,
    section_mutate,
    section_fuzz,
    section_bench,
]
STYLE = """body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:980px;padding:1em 2em;color:#222}
nav a{margin-right:.8em}.tile{display:inline-block;padding:.3em .7em;margin:.2em;border-radius:4px;color:#fff}
.pass{background:#2e7d32}.fail{background:#c62828}.missing{background:#9e9e9e}.info{background:#1565c0}
p.missing{background:none;color:#555;font-style:italic}section{border-top:1px solid #ddd;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}
pre{background:#f5f5f5;padding:.6em;overflow-x:auto;font-size:13px}.big{font-size:17px}.warn{color:#c62828}
svg.chart text{font-size:12px}h2 .tile{font-size:13px;vertical-align:middle}"""


def render(page: Page) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    tiles = "".join(f'<a class="tile {s}" href="#{sid}">{E(t)}: {s}</a>' for sid, t, s, _ in page.sections)
    body = "".join(
        f'<section id="{sid}"><h2>{E(t)} <span class="tile {s}">{s}</span></h2>{b}</section>'
        for sid, t, s, b in page.sections
    )
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>ppaux reports</title>"
        f"<style>{STYLE}</style></head><body><h1>ppaux reports</h1>"
        f"<p>Built {now} by <code>python -m reports build</code>.</p>"
        f"<nav id='summary'>{tiles}</nav>{body}</body></html>\n"
    )


def junit(name: str, cases: list[tuple[str, str | None]], path: Path) -> None:
    suite = ET.Element(
        "testsuite", name=name, tests=str(len(cases)), failures=str(sum(m is not None for _, m in cases))
    )
    for case, failure in cases:
        tc = ET.SubElement(suite, "testcase", classname=name, name=case)
        if failure is not None:
            ET.SubElement(tc, "failure", message=failure.splitlines()[0] if failure else "failed").text = failure
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _fuzz_run(path: Path) -> FuzzRunReport | None:
    """fuzz.json as typed data; none where it is missing or of another format version (the page says which)."""
    data = _load(path)
    try:
        return FuzzRunReport.from_json(data) if isinstance(data, dict) else None
    except ReportFormatError:
        return None


def write_junit(out: Path) -> None:
    fuzz = _fuzz_run(out / "fuzz" / "fuzz.json")
    if fuzz is not None:
        cases: list[tuple[str, str | None]] = [
            (f.nodeid, f"{f.error}\n{f.example or ''}\n{f.blob or ''}") for f in fuzz.failures
        ]
        junit("fuzz", cases or [("fuzz run", None)], out / "junit-fuzz.xml")
    mutation = _load(out / "mutation" / "mutation.json")
    try:
        report = MutationReport.from_json(mutation) if isinstance(mutation, dict) else None
    except ReportFormatError:
        report = None  # the page says why; JUnit has no test to report
    if report is not None:
        junit(
            "mutation",
            [
                (
                    mod,
                    None
                    if m.verdict == "pass"
                    else f"{m.score}% < gate {m.gate}%: " + ", ".join(s.mutant for s in m.survivors),
                )
                for mod, m in report.modules.items()
            ],
            out / "junit-mutation.xml",
        )


def build(out_dir: str, index_path: str) -> int:
    out, index = Path(out_dir).resolve(), Path(index_path).resolve()
    write_junit(out)
    page = Page(out, index)
    for section in SECTIONS:
        section(page)
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(render(page), encoding="utf-8")
    print(f"reports: wrote {index} ({', '.join(f'{t}: {s}' for _, t, s, _ in page.sections)})")
    return 0
