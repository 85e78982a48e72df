"""``python -m fuzz``: arguments, progress, and real runs that find, save and replay a planted failure."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.__main__ import main
from fuzz.options import UsageError, format_duration, parse_budget, placements
from fuzz.progress import Progress
from ppaux.testing.results import EXAMPLE_HEADER

ROOT = Path(__file__).resolve().parents[1]
BROKEN = str(ROOT / "tests" / "impls" / "broken_contiguous_copy.py")
# Seed 7 finds the planted bug in round 1 (the only test selected), a few seconds in.
PLANTED = ["--impl", BROKEN, "--tests", "bound_to_the_same_tensor", "--seed", "7"]
BROKEN_TEST = "ppaux/conformance/test_add.py::test_success_adds_one_key_per_item_bound_to_the_same_tensor"


@pytest.mark.parametrize("text, seconds", [("30m", 1800), ("1h30m", 5400), ("90s", 90), ("2h", 7200), ("45", 45)])
def test_budget_accepts_durations(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "0m", "1.5h", "30 minutes", "-5"])
def test_budget_rejects_other_text(text):
    with pytest.raises(UsageError):
        parse_budget(text)


def test_placements_cycle_cuda_and_cpu_only_where_cuda_exists():
    assert placements("auto", 2) == (["cuda", "cpu"], None)
    assert placements("auto", 0) == (["cpu"], "no CUDA device visible: fuzzing on CPU only")
    assert placements("cpu", 2) == (["cpu"], None)
    assert placements("cuda", 1) == (["cuda"], None)
    with pytest.raises(UsageError, match="no CUDA device is visible"):
        placements("cuda", 0)
    assert format_duration(3725) == "1:02:05" and format_duration(65) == "01:05"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("argv, message", [
    (["run", "--budget", "soon"], "fuzz: error: --budget 'soon': expected a duration such as 30m, 1h30m, 90s"),
    (["run", "--max-failures", "0"], "fuzz: error: --max-failures must be at least 1"),
    (["run", "--progress-every", "0"], "fuzz: error: --progress-every must be a positive number of seconds"),
    (["run", "--impl", "no/such/impl.py"], "fuzz: error: --impl: implementation file 'no/such/impl.py' does not exist"),
    (["replay", "--db", "redis://"], "fuzz: error: --db 'redis://': expected redis://HOST:PORT"),
    (["run", "--devices", "tpu"], "fuzz: error: python -m fuzz run: argument --devices: invalid choice: 'tpu' (choose from 'auto', 'cpu', 'cuda')"),
    (["fly"], "fuzz: error: python -m fuzz: argument command: invalid choice: 'fly' (choose from 'run', 'replay')"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == message + "\n"


def test_unreachable_redis_is_a_usage_error(capsys):
    port = _free_port()
    assert main(["replay", "--db", f"redis://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fuzz: error: --db redis://127.0.0.1:{port}: cannot reach Redis (ConnectionError")
    assert err.count("\n") == 1


def test_db_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "db").write_text("")
    assert main(["replay", "--db", str(tmp_path / "db")]) == 2
    assert capsys.readouterr().err == f"fuzz: error: --db {str(tmp_path / 'db')!r} is a file; expected a directory or redis://HOST:PORT\n"


def test_progress_redraws_one_line_on_a_terminal_and_prints_lines_otherwise():
    tty = io.StringIO()
    p = Progress(tty, 60, tty=True)
    p.update(10, 500, 0, "cpu", 1)
    p.say("fuzz: note")
    p.finish(20, 1000, 1, "cpu", 2)
    assert tty.getvalue() == ("\r\x1b[Kfuzz 00:10/01:00  round 1 (cpu)  examples 500  50/s  failures 0"
                              "\r\x1b[Kfuzz: note\n"
                              "\r\x1b[Kfuzz 00:20/01:00  round 2 (cpu)  examples 1,000  50/s  failures 1\n")
    plain = io.StringIO()
    p = Progress(plain, 60, every=3600, tty=False)
    p.update(1, 10, 0, "cpu", 1)
    p.update(2, 20, 0, "cpu", 1)  # within `every`: no line
    p.finish(3, 30, 0, "cpu", 1)
    assert plain.getvalue().splitlines() == [
        "fuzz 00:01/01:00  round 1 (cpu)  examples 10  10/s  failures 0",
        "fuzz 00:03/01:00  round 1 (cpu)  examples 30  10/s  failures 0",
    ]


def _env() -> dict:
    # pytest-cov would measure every fuzz round too (3x slower); the rounds cover nothing new.
    return {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE_", "COVERAGE_"))}


def fuzz(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuzz", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=_env())


def _find_save_replay(db: str, report: Path, *, replay_fixed: bool) -> None:
    run = fuzz("run", "--budget", "90s", "--max-failures", "1", "--db", db, "--report", str(report), *PLANTED)
    assert run.returncode == 1, run.stderr
    summary = json.loads((report / "fuzz.json").read_text())
    assert summary["stopped_by"] == "max-failures" and summary["complete"]
    [failure] = summary["failures"]
    assert failure["nodeid"] == BROKEN_TEST
    assert EXAMPLE_HEADER.match(failure["example"])
    assert failure["example"].splitlines()[0].endswith(" test_success_adds_one_key_per_item_bound_to_the_same_tensor(")
    assert failure["blob"].startswith("@reproduce_failure(")
    # The round that finds it depends on the seeds Hypothesis draws; the line's form does not.
    assert re.search(rf"^fuzz: FAILURE {re.escape(BROKEN_TEST)} \(round \d+, cpu\): ", run.stderr, re.M), run.stderr
    assert BROKEN_TEST in (report / "fuzz.md").read_text()

    still = fuzz("replay", "--db", db, "--report", str(report), "--impl", BROKEN)
    assert still.returncode == 1, still.stderr
    replay = json.loads((report / "replay.json").read_text())
    assert [r["nodeid"] for r in replay["still_failing"]] == [BROKEN_TEST]
    assert EXAMPLE_HEADER.match(replay["still_failing"][0]["example"])

    if not replay_fixed:
        return
    fixed = fuzz("replay", "--db", db, "--report", str(report))
    assert fixed.returncode == 0, fixed.stderr
    replay = json.loads((report / "replay.json").read_text())
    assert replay["still_failing"] == [] and [r["nodeid"] for r in replay["no_longer_failing"]] == [BROKEN_TEST]


@pytest.mark.slow
def test_planted_failure_is_found_saved_and_replayed_from_a_directory(tmp_path):
    _find_save_replay(str(tmp_path / "db"), tmp_path / "report", replay_fixed=True)
    assert any((tmp_path / "db").iterdir())


@pytest.fixture
def redis_url(tmp_path):
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    port = _free_port()
    proc = subprocess.Popen([server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}", client
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - watchdog
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_planted_failure_is_found_saved_and_replayed_from_a_real_redis(redis_url, tmp_path):
    url, client = redis_url
    _find_save_replay(url, tmp_path / "report", replay_fixed=False)
    assert client.keys(b"hypothesis-example:*")


@pytest.mark.slow
def test_sigterm_stops_cleanly_with_a_partial_report(tmp_path):
    report = tmp_path / "report"
    proc = subprocess.Popen([sys.executable, "-m", "fuzz", "run", "--budget", "10m", "--db", str(tmp_path / "db"),
                             # A round far longer than the wait for its first progress event, so that the
                             # signal lands inside round 1 and not after it ended on its own.
                             "--report", str(report), "--tests", "test_add or test_pop or test_properties or test_stateful"],
                            cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, env=_env())
    try:
        events = report / "rounds" / "round-001.events.jsonl"
        deadline = time.monotonic() + 60
        while not (events.exists() and '"kind": "progress"' in events.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None, "the first round never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # pragma: no cover - watchdog
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    summary = json.loads((report / "fuzz.json").read_text())
    assert summary["stopped_by"] == "SIGTERM" and not summary["complete"]
    assert summary["rounds"][0]["ended_by"] == "SIGTERM" and summary["failures"] == []
    assert "stopped early by SIGTERM: partial report" in (report / "fuzz.md").read_text()
    assert err.splitlines()[0] == "fuzz: no CUDA device visible: fuzzing on CPU only" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
