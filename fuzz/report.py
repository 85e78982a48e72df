"""fuzz.json / fuzz.md and replay.json / replay.md under the report directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from fuzz.options import format_duration


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _failure_md(f: Dict[str, Any]) -> List[str]:
    out = [f"### `{f['nodeid']}`", ""]
    if f.get("error"):
        out += [f"- error: `{f['error']}`"]
    for key, label in (("round", "first found in round"), ("placements", "placements"),
                       ("found_after_s", "found after (s)"), ("seen", "times seen"), ("saved", "saved examples")):
        if f.get(key) is not None:
            out.append(f"- {label}: {f[key]}")
    out += ["", "Minimal example:", "", "```", (f.get("example") or "(see the failure text)").strip(), "```", ""]
    if f.get("blob"):
        out += ["Reproduce (decorate the test with):", "", "```python", f["blob"], "```", ""]
    if f.get("text"):
        out += ["<details><summary>failure text</summary>", "", "```", f["text"].strip(), "```", "", "</details>", ""]
    return out


def write_run(summary: Dict[str, Any], report_dir: Path) -> Path:
    _write(report_dir / "fuzz.json", json.dumps(summary, indent=2))
    s = summary
    lines = [
        "# Fuzz run", "",
        f"- started: {s['started_at']}; ran {format_duration(s['elapsed_s'])} of a {format_duration(s['budget_s'])} budget"
        + ("" if s["complete"] else f" (stopped early by {s['stopped_by']}: partial report)"),
        f"- implementation: `{s['impl']}`; tests: `{s['tests'] or 'all Hypothesis tests'}`; placements: {', '.join(s['placements'])}",
        f"- example database: `{s['db']}`",
        f"- examples: {s['examples']:,} ({s['examples_per_s']:,}/s) in {len(s['rounds'])} rounds",
        f"- per-call time limit: {s['timeout_s']:g} s",
        f"- failures: **{len(s['failures'])}**"
        + (f"; interrupted (still running when stopped, no verdict): {len(s['interrupted'])}" if s.get("interrupted") else ""), "",
        "| round | placement | examples/test | tests | examples | ended by |", "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {r['round']} | {r['placement']} | {r['max_examples']} | {r['tests']} | {r['examples']:,} | {r['ended_by']} |"
              for r in s["rounds"]]
    if s.get("interrupted"):
        lines += ["", "## Interrupted", "", "Still running when their round was stopped: no verdict for these runs.", ""]
        lines += [f"- `{i['nodeid']}` (round {i['round']}, {i['placement']}; stopped by {i['stopped_by']})" for i in s["interrupted"]]
    lines += ["", "## Failures", ""]
    if not s["failures"]:
        lines += ["None.", ""]
    for f in s["failures"]:
        lines += _failure_md(f)
    lines += ["Replay every saved failure: `python -m fuzz replay --db " + s["db"] + "`", ""]
    _write(report_dir / "fuzz.md", "\n".join(lines))
    return report_dir / "fuzz.md"


def write_replay(summary: Dict[str, Any], report_dir: Path) -> Path:
    _write(report_dir / "replay.json", json.dumps(summary, indent=2))
    s = summary
    lines = [
        "# Replay of saved fuzz failures", "",
        f"- at: {s['at']}; implementation: `{s['impl']}`; database: `{s['db']}`; placement: {s['placement']}",
        f"- tests with saved failures: {s['tests_with_saved_failures']} ({s['saved_examples']} saved examples)",
        f"- still failing: **{len(s['still_failing'])}**; no longer failing: {len(s['no_longer_failing'])}", "",
    ]
    if s["no_longer_failing"]:
        lines += ["## No longer failing", ""] + [f"- `{r['nodeid']}` ({r['saved']} saved)" for r in s["no_longer_failing"]] + [""]
    lines += ["## Still failing", ""]
    if not s["still_failing"]:
        lines += ["None.", ""]
    for f in s["still_failing"]:
        lines += _failure_md(f)
    _write(report_dir / "replay.md", "\n".join(lines))
    return report_dir / "replay.md"
