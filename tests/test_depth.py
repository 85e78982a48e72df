"""Depth (issue 36): the scope the strategies take their bounds from, swarm configurations, and how the
fuzz job grows the one and draws the other per round, records both and replays each finding under them."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import ppaux_strategies as ps
import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ppaux.fuzz.depth import RAMP_ROUNDS, RoundDepth, recorded_depths, round_depth
from ppaux.fuzz.rounds import Suite
from ppaux.fuzz.runner import Replay
from ppaux.testing.depth import TUNING_SCOPES, DepthError, drawn_swarm, grown_scope, read_depth, scope_options
from tests.planted_deep import DEEP_BUGS, plant_deep

LARGE = ps.SCOPES["large"]
FEW = settings(max_examples=30, database=None, deadline=None, suppress_health_check=list(HealthCheck))


def aux_count(d):
    return sum(1 for k in d if isinstance(k, str) and k.startswith(ps.SGLANG_PREFIX))


def test_the_small_scope_builds_the_strategies_ci_always_drew():
    # The strategies are built once per set of arguments: no argument in the small scope is the very strategy
    # the bounds the issue names (3 extra keys, 2 aux keys, rank 2, side 3; 3 payload items) build.
    item_tensors = ps.tensors(max_dims=2, max_side=3)
    assert ps.active_scope() is ps.SCOPES["small"]
    assert ps.transport_dicts(aux=True) is ps.transport_dicts(aux=True, max_extra=3, max_aux=2, tensors=item_tensors)
    assert ps.aux_payloads() is ps.aux_payloads(max_size=3, tensors=item_tensors)
    assert ps.tensors() is ps.tensors(max_dims=3, max_side=4)
    with ps.use_scope(ps.SCOPES["small"]):
        assert ps.transport_dicts() is ps.transport_dicts(max_extra=3, max_aux=2, tensors=item_tensors)


# Reaching is the claim, not the minimal example: shrinking a dict of a dozen tensors costs seconds.
REACH = settings(FEW, max_examples=100, derandomize=True, phases=[Phase.generate])


def test_a_larger_scope_reaches_what_the_small_one_cannot():
    small = ps.SCOPES["small"]
    zeros = ps.tensors(shape=())  # cheap values: the counts are what this test is about
    with ps.use_scope(ps.SCOPES["medium"]):
        dicts = ps.transport_dicts(aux=True, tensors=zeros)
        many_aux = find(dicts, lambda d: aux_count(d) > small.max_aux, settings=REACH)
        many_keys = find(dicts, lambda d: len(d) > 12, settings=REACH)
        wide = find(ps.aux_payloads(tensors=zeros), lambda p: len(p) > small.max_payload, settings=REACH)
        deep = find(ps.tensors(fill=False, views=("contiguous",)), lambda t: t.dim() > small.max_dims, settings=REACH)
    assert aux_count(many_aux) > small.max_aux and len(many_keys) > 12 and len(wide) > small.max_payload
    assert deep.dim() > small.max_dims
    assert ps.active_scope() is small


@FEW
@given(st.data())
def test_an_explicit_bound_wins_over_the_scope(data):
    with ps.use_scope(LARGE):
        d = data.draw(ps.transport_dicts(aux=True, max_aux=2, max_extra=0))
        payload = data.draw(ps.aux_payloads(max_size=2))
        t = data.draw(ps.tensors(max_dims=1))
    assert aux_count(d) <= 2 and len(d) <= 2 + 2 and len(payload) <= 2 and t.dim() <= 1


@FEW
@given(st.data())
def test_a_swarm_configuration_keeps_only_what_it_names(data):
    swarm = ps.Swarm(dtypes=("bfloat16",), views=("contiguous",), names=("plain",), wide=("aux",), empty=False)
    with ps.use_scope(LARGE, swarm):
        assert ps.active_swarm() is swarm
        d = data.draw(ps.transport_dicts(aux=True))
        t = data.draw(ps.tensors())
    tensors = [v for v in d.values() if torch.is_tensor(v)] + [t]
    assert all(v.dtype == torch.bfloat16 and v.is_contiguous() and 0 not in v.shape for v in tensors)
    names = [k[len(ps.SGLANG_PREFIX) :] for k in d if isinstance(k, str) and k.startswith(ps.SGLANG_PREFIX)]
    assert all(n.isascii() and n.replace("_", "a").isalnum() for n in names), names
    # "rank" is not widened: the small scope's item rank and side; "extra" is not either.
    assert all(v.dim() <= ps.SCOPES["small"].item_max_dims for v in tensors[:-1])
    assert len(d) - aux_count(d) <= 1 + ps.SCOPES["small"].max_extra + 1


@FEW
@given(st.data())
def test_a_tricky_swarm_draws_only_names_that_trip_a_parser_of_keys(data):
    with ps.use_scope(ps.SCOPES["small"], ps.Swarm(names=("tricky",))):
        name = data.draw(ps.aux_names())
    assert not name.isascii() or name in ("scores", "top.k", " ", "a b") or ps.SGLANG_PREFIX.rstrip(".") in name


def test_a_scope_grows_from_small_to_large():
    assert LARGE.at(0.0) is ps.SCOPES["small"]
    assert {k: v for k, v in LARGE.at(1.0).as_dict().items() if k != "name"} == {
        k: v for k, v in LARGE.as_dict().items() if k != "name"
    }
    half = LARGE.at(0.5)
    assert half.name == "large@0.5"
    assert ps.SCOPES["small"].max_aux < half.max_aux < LARGE.max_aux
    with pytest.raises(InvalidArgument) as info:
        LARGE.at(1.5)
    assert str(info.value) == "size=1.5 must be between 0 and 1"


def test_scopes_and_swarms_survive_a_report_and_bad_ones_are_one_line():
    scope = LARGE.at(0.5)
    assert ps.parse_scope(json.dumps(scope.as_dict())) == scope
    assert ps.parse_scope("medium") is ps.SCOPES["medium"]
    swarm = ps.Swarm.draw(7, ("float32", "bfloat16"), ("contiguous", "transpose"))
    assert ps.Swarm.draw(7, ("float32", "bfloat16"), ("contiguous", "transpose")) == swarm
    assert ps.parse_swarm(json.dumps(swarm.as_dict())) == swarm
    assert ps.parse_swarm("{}") == ps.Swarm()
    with pytest.raises(DepthError) as info:
        read_depth("huge", None, None)
    assert str(info.value).startswith("scope 'huge': expected one of small, medium, large or a JSON object")
    with pytest.raises(DepthError) as info:
        read_depth(None, "[1]", None)
    assert str(info.value).startswith("swarm '[1]': expected a JSON object of Swarm's fields")


def test_each_tuning_has_its_scope_and_an_asked_scope_wins():
    assert {t: read_depth(None, None, t)[0] for t in TUNING_SCOPES} == {
        "ci": ps.SCOPES["small"],
        "mutation": ps.SCOPES["small"],
        "dev": ps.SCOPES["medium"],
        "nightly": ps.SCOPES["large"],
    }
    assert read_depth(None, None, None) == (ps.SCOPES["small"], None)
    swarm = drawn_swarm(3)
    scope, drawn = read_depth(*scope_options(grown_scope(0.5), swarm)[1::2], "ci")
    assert scope == LARGE.at(0.5) and drawn == ps.parse_swarm(json.dumps(swarm))


def test_a_worker_s_rounds_grow_to_the_large_scope_and_draw_a_swarm_after_the_first():
    rng = random.Random(0)
    first, second = round_depth(1, 11, rng), round_depth(2, 12, rng)
    assert first == RoundDepth(grown_scope(1 / RAMP_ROUNDS)) and first.swarm is None
    assert second == RoundDepth(grown_scope(2 / RAMP_ROUNDS), drawn_swarm(12), 12)
    assert round_depth(RAMP_ROUNDS + 5, 1, rng).scope == grown_scope(1.0)
    # Worker W leads by W - 1 rounds: the second worker's first round is as large as the first's second.
    assert round_depth(1, 11, rng, lead=1).scope == second.scope
    # Without --seed a swarm seed is drawn, and recorded: the round can be run again.
    unseeded = round_depth(2, None, random.Random(5))
    assert unseeded.swarm == drawn_swarm(unseeded.swarm_seed)
    assert unseeded.options() == scope_options(unseeded.scope, unseeded.swarm)
    failures = [{"nodeid": "a"}, second.record(), dict(second.record(), nodeid="b"), first.record()]
    assert recorded_depths(failures) == [RoundDepth(), second, first]


# A replay round's stand-in: it says which scope and swarm it was told (its argv), and fails the test
# only under the scope named in $FAILS_UNDER.
FAKE_REPLAY = """
import json, os, sys
argv = sys.argv[1:]
scope = json.loads(argv[argv.index("--ppaux-scope") + 1])["name"] if "--ppaux-scope" in argv else None
outcome = "failed" if scope == os.environ.get("FAILS_UNDER") else "passed"
with open(os.environ["PPAUX_FUZZ_EVENTS"], "a") as fh:
    fh.write(json.dumps({"kind": "test", "nodeid": "t.py::t", "outcome": outcome, "saved": 1}) + "\\n")
    if outcome == "failed":
        fh.write(json.dumps({"kind": "failure", "nodeid": "t.py::t", "example": scope, "error": "E"}) + "\\n")
sys.exit(1 if outcome == "failed" else 0)
"""


class ReplaySuite(Suite):
    def command(self):
        return [sys.executable, "-c", FAKE_REPLAY]


@pytest.mark.parametrize("fails_under", ["large@0.333333", "large@0.666667", "none"])
def test_a_replay_runs_each_recorded_depth_and_a_test_failing_under_any_still_fails(fails_under, tmp_path, monkeypatch):
    monkeypatch.setenv("FAILS_UNDER", fails_under)
    depths = [round_depth(1, 1, random.Random(0)), round_depth(2, 2, random.Random(0))]
    replay = Replay(suite=ReplaySuite(db="d", workdir=tmp_path), placement="cpu", depths=depths)
    replay.run()
    summary = replay.summary().to_json()
    still = [(r["nodeid"], r["scope"]["name"], r["example"]) for r in summary["still_failing"]]
    if fails_under == "none":
        assert still == [] and [r["nodeid"] for r in summary["no_longer_failing"]] == ["t.py::t"]
    else:
        assert still == [("t.py::t", fails_under, fails_under)] and summary["no_longer_failing"] == []
    assert summary["saved_examples"] == 1


def _fuzz(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ppaux", "fuzz", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=dict(os.environ), timeout=600)


# A real fuzz run that must find, shrink and replay (a minute on 2 cores): nightly, with the longest
# end-to-end runs; CI checks the scope's bounds and shrinking in this process (above).
@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.thorough
def test_a_deep_bug_is_found_shrunk_to_its_threshold_and_replayed(tmp_path):
    """The loop bound (pop deletes only 4 aux keys): a short fuzz run with a fixed seed finds it, shrinks it to
    exactly five aux keys, records the scope that found it, and the replay reproduces it."""
    impl = plant_deep("delete_stops_after_four", tmp_path)
    assert DEEP_BUGS["delete_stops_after_four"].threshold == "5 aux keys"
    test = "test_success_returns_observer_object_and_removes_exactly_aux_keys"
    common = ["--impl", str(impl), "--db", str(tmp_path / "db"), "--report", str(tmp_path / "r"), "--tests", test]
    run = _fuzz("run", "--budget", "5m", "--workers", "1", "--seed", "36", "--max-failures", "1", *common, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    [failure] = json.loads((tmp_path / "r" / "fuzz.json").read_text())["failures"]
    assert failure["scope"]["name"].startswith("large@") and failure["scope"]["max_aux"] >= 5
    example = failure["example"]
    assert aux_keys_in(example) == 5, example
    replay = _fuzz("replay", *common, cwd=tmp_path)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    [still] = json.loads((tmp_path / "r" / "replay.json").read_text())["still_failing"]
    assert still["nodeid"] == failure["nodeid"] and still["scope"] == failure["scope"]


def aux_keys_in(example: str) -> int:
    """The aux keys of the drawn dict, as the minimal example prints it (after the transport's own repr)."""
    return example.partition("(d): ")[2].count("'" + ps.SGLANG_PREFIX)


@pytest.mark.subprocess
def test_a_fuzz_round_fuzzes_the_suite_s_stateful_runs_at_its_scope(tmp_path):
    """The stateful runs call Hypothesis themselves (not @given): a round keeps them and counts their examples."""
    from ppaux.fuzz.events import Collected
    from ppaux.fuzz.rounds import Round

    suite = Suite(db=str(tmp_path / "db"), workdir=tmp_path, tests="test_interleaved_adds_and_pops_leak_no_key")
    suite = Suite(**{**suite.__dict__, "checkout": False, "cwd": tmp_path})
    rnd = Round.start(suite, 1, "cpu", 3, mode="run", depth=RoundDepth(grown_scope(1.0)))
    assert rnd.proc.wait(timeout=300) == 0, rnd.log_tail()
    events = rnd.poll_events()
    assert [e.tests for e in events if isinstance(e, Collected)] == [1], rnd.log_tail()
    assert rnd.examples == 3


def test_a_depth_the_database_cannot_keep_is_said_and_the_run_goes_on(tmp_path, monkeypatch):
    from tests.test_fuzz import COLLECTED, FAILURE, scripted_run

    events = [COLLECTED, {"kind": "running", "nodeid": "t.py::t"}, FAILURE]
    run = scripted_run(tmp_path, monkeypatch, {"*": {"events": events, "end": "exit 1"}}, workers=1, max_failures=1)
    (tmp_path / "a-file").write_text("")
    run.suite = dataclasses.replace(run.suite, db=str(tmp_path / "a-file"))
    run.run()
    said = run.progress.stream.getvalue().splitlines()
    assert f"fuzz: --db {str(tmp_path / 'a-file')!r} is a file; expected a directory or redis://HOST:PORT" in said
    assert [f.nodeid for f in run.summary().failures] == ["t.py::t"]


def test_a_replay_takes_the_depths_of_the_database_and_of_the_run_s_report(tmp_path):
    from ppaux.fuzz.command import _run_depths
    from ppaux.fuzz.database import open_database
    from ppaux.fuzz.depth import save_depth
    from ppaux.fuzz.report import write_run
    from ppaux.report import FuzzRunReport

    rng = random.Random(0)
    kept, reported = round_depth(2, 5, rng), round_depth(3, 6, rng)
    save_depth(open_database(str(tmp_path / "db")), kept)
    assert _run_depths(tmp_path / "report", str(tmp_path / "db")) == [RoundDepth(), kept]
    write_run(FuzzRunReport.from_json(json.loads(json.dumps(_summary_with(reported)))), tmp_path / "report")
    assert _run_depths(tmp_path / "report", str(tmp_path / "db")) == [RoundDepth(), kept, reported]
    page = (tmp_path / "report" / "fuzz.md").read_text()
    assert f"- scope: {reported.scope['name']}, swarm 6" in page.splitlines()
    assert f"- swarm configuration: `{json.dumps(reported.swarm, sort_keys=True)}`" in page.splitlines()


def _summary_with(depth: RoundDepth) -> dict:
    failure = {"nodeid": "t.py::t", "clause": "pop.7", "worker": 1, "round": 3, "placements": ["cpu"]}
    failure |= {"found_after_s": 1.0, "example": "ex", "blob": None, "error": "E", "text": "", "seen": 1}
    round_ = {"worker": 1, "round": 3, "placement": "cpu", "max_examples": 50, "examples": 9, "tests": 1}
    round_ |= {"exit_status": 1, "ended_by": "finished", "log": "l", **depth.record()}
    return {
        "kind": "fuzz-run",
        "schema_version": 1,
        "verdict": "fail",
        "merged": False,
        "shards": [],
        "started_at": "2026-12-05T00:00:00+00:00",
        "budget_s": 60.0,
        "elapsed_s": 1.0,
        "stopped_by": "budget",
        "complete": True,
        "impl": "x.py",
        "db": "d",
        "suite": "ppaux.conformance",
        "tests": None,
        "seed": 1,
        "shard": None,
        "placements": ["cpu"],
        "workers": [],
        "dead_workers": [],
        "examples": 9,
        "examples_per_s": 9.0,
        "timeout_s": 10.0,
        "rounds": [round_],
        "failures": [dict(failure, **depth.record())],
        "interrupted": [],
        "timeline": [],
    }
