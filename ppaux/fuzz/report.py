"""fuzz.json / fuzz.md and replay.json / replay.md under the report directory; shards' reports merged into one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ppaux.fuzz.options import FuzzUsageError, format_duration
from ppaux.fuzz.timeline import add_up, thin
from ppaux.isolation import DEFAULT_TIMEOUT
from ppaux.report import write_atomic
from ppaux.testing.advice import rerun_command
from ppaux.testing.impl import DEFAULT_IMPL
from ppaux.testing.results import JSONObject

__all__ = ["check_report_dir", "merge_runs", "read_run", "write_replay", "write_run"]


def check_report_dir(path: Path, option: str = "--report") -> Path:
    """``path`` resolved, or one line for the user when it cannot hold a report."""
    if path.exists() and not path.is_dir():
        raise FuzzUsageError(f"{option} {str(path)!r} is a file; expected a directory")
    return path.resolve()


def _failure_md(f: JSONObject) -> list[str]:
    out = [f"### `{f['nodeid']}`", ""]
    if f.get("error"):
        out += [f"- error: `{f['error']}`"]
    for key, label in (
        ("clause", "clause"),
        ("shard", "shard"),
        ("worker", "first found by worker"),
        ("round", "in round"),
        ("placements", "placements"),
        ("found_after_s", "found after (s)"),
        ("seen", "times seen"),
        ("saved", "saved examples"),
    ):
        if f.get(key) is not None:
            out.append(f"- {label}: {f[key]}")
    if f.get("scope") is not None:
        out.append(f"- scope: {depth_md(f)}")
        # Every bound and feature, so that the finding can be reproduced with --ppaux-scope/--ppaux-swarm.
        out.append(f"- scope bounds: `{json.dumps(f['scope'], sort_keys=True)}`")
    if f.get("swarm") is not None:
        out.append(f"- swarm configuration: `{json.dumps(f['swarm'], sort_keys=True)}`")
    out += ["", "Minimal example:", "", "```", (f.get("example") or "(see the failure text)").strip(), "```", ""]
    if f.get("blob"):
        out += ["Reproduce (decorate the test with):", "", "```python", f["blob"], "```", ""]
    if f.get("text"):
        out += ["<details><summary>failure text</summary>", "", "```", f["text"].strip(), "```", "", "</details>", ""]
    return out


def depth_md(r: JSONObject) -> str:
    """A round's (or failure's) scope and swarm configuration in a few words: ``large@0.667, swarm 42``."""
    scope = (r.get("scope") or {}).get("name") or "-"
    return scope if r.get("swarm") is None else f"{scope}, swarm {r.get('swarm_seed')}"


def _rounds_md(s: JSONObject) -> list[str]:
    lines = [
        "| shard | worker | round | placement | examples/test | tests | examples | ended by | scope |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    return lines + [
        f"| {r.get('shard') or s.get('shard') or '-'} | {r.get('worker', 1)} | {r['round']} | {r['placement']} | "
        f"{r['max_examples']} | {r['tests']} | {r['examples']:,} | {r['ended_by']} | {depth_md(r)} |"
        for r in s["rounds"]
    ]


def _dead_md(s: JSONObject) -> list[str]:
    if not s.get("dead_workers"):
        return []
    lines = [
        "",
        "## Dead workers",
        "",
        "A worker whose round ended without a verdict (killed, crashed): the others went on.",
        "",
    ]
    return lines + [
        f"- worker {d['worker']}{' of shard ' + d['shard'] if d.get('shard') else ''}: round {d['round']} "
        f"({d['placement']}), running `{d['test'] or 'no test yet'}`, exit status {d['exit_status']}; log {d['log']}"
        for d in s["dead_workers"]
    ]


def write_run(summary: JSONObject, report_dir: Path) -> Path:
    write_atomic(report_dir / "fuzz.json", json.dumps(summary, indent=2))
    s = summary
    shards = s.get("shards")
    lines = [
        "# Fuzz run" + (f" ({len(shards)} shards merged)" if shards else ""),
        "",
        f"- started: {s['started_at']}; ran {format_duration(s['elapsed_s'])} "
        f"of a {format_duration(s['budget_s'])} budget"
        + ("" if s["complete"] else f" (stopped early by {s['stopped_by']}: partial report)"),
        f"- implementation: `{s['impl']}`; suite: {s.get('suite', 'ppaux.conformance')}; "
        f"tests: `{s['tests'] or 'all Hypothesis tests'}`" + (f"; shard {s['shard']}" if s.get("shard") else ""),
        f"- workers: {len(s['workers'])}; placements: {', '.join(s['placements'])}",
        f"- example database: `{s['db']}`",
        f"- examples: {s['examples']:,} ({s['examples_per_s']:,}/s) in {len(s['rounds'])} rounds",
        f"- per-call time limit: {s['timeout_s']:g} s",
        f"- failures: **{len(s['failures'])}**"
        + (f"; dead workers: **{len(s['dead_workers'])}**" if s.get("dead_workers") else "")
        + (
            f"; interrupted (still running when stopped, no verdict): {len(s['interrupted'])}"
            if s.get("interrupted")
            else ""
        ),
        "",
    ]
    if shards:
        lines += ["| shard | examples | failures | workers | ended by |", "| --- | --- | --- | --- | --- |"]
        lines += [
            f"| {h['shard']} | {h['examples']:,} | {h['failures']} | {h['workers']} | {h['stopped_by']} |"
            for h in shards
        ]
        lines.append("")
    lines += [
        "| worker | placements | rounds | examples | failures found first | died |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {w.get('shard', '') + ' ' if w.get('shard') else ''}{w['worker']} | {', '.join(w['placements'])} | "
        f"{w['rounds']} | {w['examples']:,} | {w['failures']} | {'yes' if w.get('died') else 'no'} |"
        for w in s["workers"]
    ]
    lines += [""] + _rounds_md(s) + _dead_md(s)
    if s.get("interrupted"):
        lines += [
            "",
            "## Interrupted",
            "",
            "Still running when their round was stopped: no verdict for these runs.",
            "",
        ]
        lines += [
            f"- `{i['nodeid']}` (worker {i.get('worker', 1)}, round {i['round']}, {i['placement']}; "
            f"stopped by {i['stopped_by']})"
            for i in s["interrupted"]
        ]
    lines += ["", "## Failures", ""]
    if not s["failures"]:
        lines += ["None.", ""]
    for f in s["failures"]:
        lines += _failure_md(f)
    lines += _replay_lines(s.get("shards") or [s])
    write_atomic(report_dir / "fuzz.md", "\n".join(lines))
    return report_dir / "fuzz.md"


def _replay_command(impl: str, db: str, timeout_s: float) -> str:
    """The ``ppaux fuzz replay`` that re-runs a run's saved failures against what the run fuzzed: without
    its --impl, a replay would run them against ppaux's own transport and find them all fixed."""
    return rerun_command(
        ["ppaux", "fuzz", "replay"],
        [("--impl", impl, DEFAULT_IMPL), ("--db", db, None), ("--timeout", timeout_s, DEFAULT_TIMEOUT)],
    )


def _replay_lines(runs: Sequence[JSONObject]) -> list[str]:
    commands = list(dict.fromkeys(_replay_command(r["impl"], r["db"], r["timeout_s"]) for r in runs))
    if len(commands) == 1:
        return [f"Replay every saved failure: `{commands[0]}`", ""]
    # Shards of other implementations, databases or time limits: one replay each, each against its own.
    return (
        ["Replay every saved failure, one command per implementation, database and time limit:", ""]
        + [f"- `{c}`" for c in commands]
        + [""]
    )


def write_replay(summary: JSONObject, report_dir: Path) -> Path:
    write_atomic(report_dir / "replay.json", json.dumps(summary, indent=2))
    s = summary
    lines = [
        "# Replay of saved fuzz failures",
        "",
        f"- at: {s['at']}; implementation: `{s['impl']}`; database: `{s['db']}`; placement: {s['placement']}",
        f"- tests with saved failures: {s['tests_with_saved_failures']} ({s['saved_examples']} saved examples)",
        f"- still failing: **{len(s['still_failing'])}**; no longer failing: {len(s['no_longer_failing'])}",
        "",
    ]
    if s["no_longer_failing"]:
        lines += (
            ["## No longer failing", ""]
            + [f"- `{r['nodeid']}` ({r['saved']} saved)" for r in s["no_longer_failing"]]
            + [""]
        )
    lines += ["## Still failing", ""]
    if not s["still_failing"]:
        lines += ["None.", ""]
    for f in s["still_failing"]:
        lines += _failure_md(f)
    write_atomic(report_dir / "replay.md", "\n".join(lines))
    return report_dir / "replay.md"


def read_run(directory: Path) -> JSONObject:
    """A shard's ``fuzz.json``, or one line for the user saying why it cannot be merged."""
    path = directory / "fuzz.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FuzzUsageError(f"--merge {str(directory)!r}: no fuzz.json there") from None
    except (OSError, ValueError) as exc:
        raise FuzzUsageError(f"--merge {str(directory)!r}: cannot read fuzz.json ({type(exc).__name__})") from None
    if not isinstance(summary, dict) or summary.get("kind") != "fuzz-run" or "workers" not in summary:
        raise FuzzUsageError(f"--merge {str(directory)!r}: fuzz.json is not a report of `ppaux fuzz run`")
    return summary


def _tagged(rows: list[JSONObject], shard: str) -> list[JSONObject]:
    return [dict(row, shard=shard) for row in rows]


def merge_runs(runs: Sequence[JSONObject]) -> JSONObject:
    """One report of several shards' runs: every round, worker and failure tagged with its shard,
    a failure found by more than one shard listed once, and the shards' timelines added up."""
    labels = [r.get("shard") or f"run {i + 1}" for i, r in enumerate(runs)]
    failures: dict[tuple[str, str], JSONObject] = {}
    for run, label in zip(runs, labels):
        for f in run["failures"]:
            key = (f["nodeid"], f.get("example") or f.get("error") or "")
            if key in failures:
                failures[key]["seen"] += f.get("seen", 1)
            else:
                failures[key] = dict(f, shard=label)
    elapsed = max(r["elapsed_s"] for r in runs)
    examples = sum(r["examples"] for r in runs)
    return {
        "kind": "fuzz-run",
        "merged": True,
        "started_at": min(r["started_at"] for r in runs),
        "budget_s": max(r["budget_s"] for r in runs),
        "elapsed_s": elapsed,
        "stopped_by": next((r["stopped_by"] for r in runs if not r["complete"]), runs[0]["stopped_by"]),
        "complete": all(r["complete"] for r in runs),
        "impl": ", ".join(sorted({r["impl"] for r in runs})),
        "db": ", ".join(sorted({r["db"] for r in runs})),
        "suite": ", ".join(sorted({r.get("suite", "ppaux.conformance") for r in runs})),
        "tests": runs[0]["tests"],
        "seed": None,
        "shard": None,
        "shards": [
            {
                "shard": label,
                "examples": r["examples"],
                "failures": len(r["failures"]),
                "workers": len(r["workers"]),
                "stopped_by": r["stopped_by"],
                "impl": r["impl"],
                "db": r["db"],
                "timeout_s": r["timeout_s"],
                "timeline": r["timeline"],
            }
            for r, label in zip(runs, labels)
        ],
        "placements": sorted({p for r in runs for p in r["placements"]}),
        "workers": [w for r, label in zip(runs, labels) for w in _tagged(r["workers"], label)],
        "dead_workers": [d for r, label in zip(runs, labels) for d in _tagged(r.get("dead_workers", []), label)],
        "examples": examples,
        "examples_per_s": round(examples / elapsed, 1) if elapsed else 0.0,
        "timeout_s": max(r["timeout_s"] for r in runs),
        "rounds": [x for r, label in zip(runs, labels) for x in _tagged(r["rounds"], label)],
        "failures": list(failures.values()),
        "interrupted": [x for r, label in zip(runs, labels) for x in _tagged(r.get("interrupted", []), label)],
        "timeline": thin(add_up([r["timeline"] for r in runs]), 600),
    }
