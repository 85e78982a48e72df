"""One pytest subprocess per fuzz round, and the events it appends for the parent to read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ppaux.fuzz.depth import RoundDepth
from ppaux.fuzz.events import Collected, Progress, RoundEvent, Running, decode
from ppaux.isolation import MONOTONIC, Clock, signal_group
from ppaux.testing.results import split_jsonl
from ppaux.testing.suite import ROOT, SuiteRun, installed_suite, own_environment

__all__ = ["PROFILE", "Round", "Suite", "from_checkout"]

PROFILE = "ppaux-fuzz"
PLUGIN = "ppaux.fuzz.pytest_plugin"
# This checkout's tests that download SGLang's wheel need the network: never part of a fuzz round
# (the installed suite has none, and no such mark).
MARK_FILTER = "not sglang"
CHECKOUT_PATHS = ("ppaux/conformance", "tests")


def from_checkout() -> bool:
    """Whether ppaux runs from its own checkout, where its ``tests/`` are fuzzed beside the shipped suite."""
    return (ROOT / "pyproject.toml").is_file() and (ROOT / "tests" / "conftest.py").is_file()


@dataclass(frozen=True)
class Suite:
    """What every round of a run fuzzes, and against what: the same for every worker."""

    db: str
    workdir: Path
    tests: str | None = None
    impl: str | None = None
    timeout: float | None = None
    shard: tuple[int, int] | None = None
    # Keep each failing test's calls as code (a replay that writes regression tests).
    record_calls: bool = False
    checkout: bool = field(default_factory=from_checkout)
    # Where an installed suite runs: the user's directory, so that an --impl module imports from there.
    cwd: Path = field(default_factory=Path.cwd)

    @property
    def what(self) -> str:
        return "ppaux.conformance and ppaux's tests/" if self.checkout else "ppaux.conformance"

    def command(self) -> list[str]:
        # Every test of the suite, under the rounds' own profile (registered by the round's plugin).
        run = SuiteRun(
            impl=self.impl,
            marks=None,
            tests=self.tests,
            timeout=self.timeout,
            tuning=None,
            record_calls=self.record_calls,
        )
        cmd = [sys.executable, "-m", "pytest", "-p", PLUGIN, f"--hypothesis-profile={PROFILE}", "-q", "--no-header"]
        cmd += ["-p", "no:cacheprovider", "--strict-markers", *run.options()]
        if self.checkout:
            # -o addopts= drops the coverage gate and xdist: the fuzz plugin counts examples in this one process.
            return cmd + ["-m", MARK_FILTER, "-o", "addopts=", *CHECKOUT_PATHS]
        # As `ppaux check` runs it: the installed suite under an empty config of its own.
        ini = self.workdir / "pytest.ini"
        ini.write_text("[pytest]\n")
        return cmd + installed_suite(ini)

    def env(
        self,
        *,
        mode: str,
        events: Path,
        placement: str,
        max_examples: int | None,
        worker: tuple[int, int],
        seed: int | None = None,
    ) -> dict[str, str]:
        env = dict(os.environ)
        for name in ("PPAUX_FUZZ_SEED", "PPAUX_FUZZ_SHARD", "PPAUX_FUZZ_MAX_EXAMPLES"):
            env.pop(name, None)
        if seed is not None:
            env["PPAUX_FUZZ_SEED"] = str(seed)
        if self.shard is not None and mode == "run":
            env["PPAUX_FUZZ_SHARD"] = f"{self.shard[0]}/{self.shard[1]}"
        env.update(
            PPAUX_FUZZ_MODE=mode,
            PPAUX_FUZZ_DB=self.db,
            PPAUX_FUZZ_EVENTS=str(events),
            PPAUX_FUZZ_WORKER=f"{worker[0]}/{worker[1]}",
        )
        if max_examples is not None:
            env["PPAUX_FUZZ_MAX_EXAMPLES"] = str(max_examples)
        # "cpu" hides every GPU; "cuda:G" or "cuda:G,H" shows those.
        env["CUDA_VISIBLE_DEVICES"] = placement.partition(":")[2]
        # As `ppaux check` runs the installed suite.
        return env if self.checkout else own_environment(env)


@dataclass
class Round:
    """A running pytest round; ``poll_events`` returns what it appended since the last call."""

    number: int
    worker: int
    placement: str
    max_examples: int | None
    events_path: Path
    log_path: Path
    proc: subprocess.Popen[bytes] = field(repr=False)
    depth: RoundDepth = field(default_factory=RoundDepth)
    examples: int = 0
    collected: int | None = None
    selected: int | None = None
    running: str | None = None
    _offset: int = 0
    _partial: bytes = b""
    _kill_at: float | None = None
    clock: Clock = field(default=MONOTONIC, repr=False)

    @classmethod
    def start(
        cls,
        suite: Suite,
        number: int,
        placement: str,
        max_examples: int | None,
        *,
        mode: str,
        worker: tuple[int, int] = (1, 1),
        seed: int | None = None,
        clock: Clock = MONOTONIC,
        depth: RoundDepth | None = None,
    ) -> Round:
        stem = suite.workdir / f"worker-{worker[0]}-round-{number:03d}"
        events, log = stem.with_suffix(".events.jsonl"), stem.with_suffix(".log")
        depth = depth or RoundDepth()
        events.write_text("")
        with open(log, "wb") as out:
            # Own session: a Ctrl-C on the terminal reaches the parent only, which then stops the round.
            proc = subprocess.Popen(
                # The round's scope and swarm configuration reach its tests as ppaux's plugin options.
                suite.command() + depth.options(),
                cwd=ROOT if suite.checkout else suite.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=suite.env(
                    mode=mode, events=events, placement=placement, max_examples=max_examples, worker=worker, seed=seed
                ),
                start_new_session=True,
            )
        return cls(number, worker[0], placement, max_examples, events, log, proc, depth, clock=clock)

    def poll_events(self) -> list[RoundEvent]:
        """The events the round wrote since the last poll (a line still being written waits for the next)."""
        with open(self.events_path, "rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        lines, self._partial = split_jsonl(self._partial + chunk)
        events = [decode(line) for line in lines]
        for event in events:
            if isinstance(event, Progress):
                self.examples = max(self.examples, event.examples)
            elif isinstance(event, Collected):
                self.collected, self.selected = event.tests, event.selected
            elif isinstance(event, Running):
                self.running = event.nodeid
        return events

    def stop(self, grace: float = 10.0) -> None:
        """Ask the round to stop as Ctrl-C would (pytest still reports); ``reap`` kills it after ``grace`` s."""
        if self.proc.poll() is None and self._kill_at is None:
            self._kill_at = self.clock.monotonic() + grace
            self._signal(signal.SIGINT)

    def reap(self) -> bool:
        """Whether the round has ended; a stopped round past its grace is killed, with its children."""
        if self.proc.poll() is not None:
            return True
        if self._kill_at is not None and self.clock.monotonic() >= self._kill_at:
            self.kill()
            return True
        return False

    def kill(self) -> None:
        self._signal(signal.SIGKILL)
        self.proc.wait()

    def interrupt(self, grace: float = 10.0) -> None:
        """Stop the round and wait until it has ended."""
        self.stop(grace)
        while not self.reap():
            self.clock.sleep(0.05)

    def _signal(self, signum: int) -> None:
        signal_group(self.proc.pid, signum)

    def log_tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])
