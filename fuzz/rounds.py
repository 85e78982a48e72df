"""One pytest subprocess per fuzz round, and the events it appends for the parent to read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "ppaux-fuzz"
# Tests that download SGLang's wheel need the network: never part of a fuzz round.
MARK_FILTER = "not sglang"
TEST_PATHS = ("ppaux/conformance", "tests")


def pytest_command(*, tests: Optional[str], impl: Optional[str], timeout: Optional[float] = None) -> List[str]:
    # -o addopts= drops the coverage gate and xdist: the fuzz plugin counts examples in this one process.
    cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "fuzz.pytest_plugin", f"--hypothesis-profile={PROFILE}",
           "-q", "--no-header", "-p", "no:cacheprovider", "--strict-markers", "-m", MARK_FILTER]
    if tests:
        cmd += ["-k", tests]
    if impl:
        cmd += ["--ppaux-impl", impl]
    if timeout is not None:
        cmd += ["--ppaux-timeout", repr(timeout)]
    return cmd + list(TEST_PATHS)


def round_env(*, mode: str, db: str, events: Path, placement: str, max_examples: Optional[int],
              seed: Optional[int] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PPAUX_FUZZ_SEED", None)
    if seed is not None:
        env["PPAUX_FUZZ_SEED"] = str(seed)
    env.update(PPAUX_FUZZ_MODE=mode, PPAUX_FUZZ_DB=db, PPAUX_FUZZ_EVENTS=str(events))
    if max_examples is not None:
        env["PPAUX_FUZZ_MAX_EXAMPLES"] = str(max_examples)
    if placement == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


@dataclass
class Round:
    """A running pytest round; ``poll_events`` returns what it appended since the last call."""

    number: int
    placement: str
    max_examples: Optional[int]
    events_path: Path
    log_path: Path
    proc: subprocess.Popen = field(repr=False)
    examples: int = 0
    collected: Optional[int] = None
    _offset: int = 0
    _partial: bytes = b""

    @classmethod
    def start(cls, number: int, placement: str, max_examples: Optional[int], *, mode: str, db: str,
              tests: Optional[str], impl: Optional[str], workdir: Path, seed: Optional[int] = None,
              timeout: Optional[float] = None) -> "Round":
        events = workdir / f"round-{number:03d}.events.jsonl"
        log = workdir / f"round-{number:03d}.log"
        events.write_text("")
        with open(log, "wb") as out:
            # Own session: a Ctrl-C on the terminal reaches the parent only, which then stops the round.
            proc = subprocess.Popen(pytest_command(tests=tests, impl=impl, timeout=timeout), cwd=ROOT, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=round_env(mode=mode, db=db, events=events, placement=placement,
                                                  max_examples=max_examples, seed=seed),
                                    start_new_session=True)
        return cls(number, placement, max_examples, events, log, proc)

    def poll_events(self) -> List[Dict[str, Any]]:
        with open(self.events_path, "rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        events = [json.loads(line) for line in lines if line.strip()]
        for event in events:
            if event["kind"] == "progress":
                self.examples = max(self.examples, event["examples"])
            elif event["kind"] == "collected":
                self.collected = event["tests"]
        return events

    def interrupt(self, grace: float = 10.0) -> None:
        """Stop the round as Ctrl-C would (pytest still reports), then kill what is left after ``grace`` s."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:  # pragma: no cover - it exited between poll and kill
            self.proc.wait()

    def log_tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])
