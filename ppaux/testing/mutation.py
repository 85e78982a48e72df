"""Mutation testing with mutmut 3: a scratch project around the code to mutate, mutmut's own run,
its verdicts, and the diffs of the mutants that survive.

``ppaux mutate`` (:mod:`ppaux.cli.mutate`) copies an implementation's module into such a project
and kills its mutants with the shipped conformance suite; ppaux's own mutation runs
(``python -m reports mutation``) use the same machinery on ppaux itself. mutmut does the work:
its operators make the mutants, its trampolines switch between them (``MUTANT_UNDER_TEST``),
its stats pick the tests each mutant needs; this module only sets the project up and reads back
what mutmut decided.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ppaux.testing.impl import ImplementationError, load

# mutmut's verdicts that mean the tests noticed the mutant. A mutant whose tests crash the test
# process ("segfault": killed by a signal) was detected as surely as one that fails a test.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
# mutmut files any exit code it has no name for as "suspicious", SIGABRT included: read the code.
SUSPICIOUS = "suspicious"
CRASHED = "crashed"
# Every test run of a mutation run: the cheapest tests first and the collected suite frozen for
# the garbage collector (ppaux.testing.mutant_runs). pytest's unraisable-exception plugin runs
# gc.collect() as each session ends, a quarter of a second in a child forked from a server that
# holds torch and the collected suite; the warning it gives kills no mutant.
# In process: mutmut maps each mutant to the tests that call its function by recording the calls
# in its own process, which a test run in a forked child (ppaux.isolation) would hide from it. A
# mutant that crashes or loops is mutmut's to stop (its own timeout); the per-call limit stays.
MUTANT_PYTEST_ARGS = ("-p", "ppaux.testing.mutant_runs", "-p", "no:unraisableexception", "--ppaux-isolation=off")
_RESULT_LINE = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+?)\s*$")
# mutmut's progress line: "⠹ 44/53  🎉 44 🫥 0  ⏰ 0  🤔 0  🙁 0  🔇 0".
_PROGRESS = re.compile(r"(\d+)/(\d+)\s+🎉 (\d+)\s+🫥 (\d+)\s+⏰ (\d+)\s+🤔 (\d+)\s+🙁 (\d+)")


def status_lines(chunks: Iterable[str]) -> Iterator[Tuple[str, List["re.Match[str]"]]]:
    """Each chunk of mutmut's output with the progress lines it completes: a line that a chunk
    boundary cuts in two is read once, whole (read alone, its second half looks like a line)."""
    pending = ""
    for chunk in chunks:
        pending += chunk
        cut = max(pending.rfind("\r"), pending.rfind("\n")) + 1
        complete, pending = pending[:cut], pending[cut:]
        yield chunk, list(_PROGRESS.finditer(complete))
    if pending:
        yield "", list(_PROGRESS.finditer(pending))


def parse_results(text: str) -> Dict[str, str]:
    """``{mutant: status}`` from ``mutmut results --all true``."""
    return {m["name"]: m["status"] for m in map(_RESULT_LINE.match, text.splitlines()) if m}


def _exit_codes(mutants: Path) -> Dict[str, Any]:
    # mutmut keeps every mutant's exit code (None until it ran) in the *.meta files under mutants/.
    codes: Dict[str, Any] = {}
    for meta in sorted(mutants.rglob("*.meta")):
        try:
            codes.update(json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {}))
        except (OSError, ValueError):
            continue
    return codes


def select(results: Dict[str, Any], only: Sequence[str]) -> Dict[str, Any]:
    """The entries of the mutants ``only`` names (fnmatch patterns, as ``mutmut run`` takes them); all when empty."""
    if not only:
        return dict(results)
    return {name: value for name, value in results.items() if any(fnmatch.fnmatch(name, p) for p in only)}


def crashes(mutants: Path) -> Dict[str, str]:
    """``{mutant: "crashed (SIGNAME)"}`` for each mutant whose test process died by a signal,
    read from the exit codes in mutmut's ``*.meta`` files under ``mutants``."""
    found = {}
    for name, code in _exit_codes(mutants).items():
        if isinstance(code, int) and code < 0:
            try:
                found[name] = f"{CRASHED} ({signal.Signals(-code).name})"
            except ValueError:
                found[name] = f"{CRASHED} (signal {-code})"
    return found


def name_crashes(results: Dict[str, str], crashed: Dict[str, str]) -> Dict[str, str]:
    """``results`` with each "suspicious" verdict that was a death by a signal named as such."""
    return {name: crashed.get(name, status) if status == SUSPICIOUS else status for name, status in results.items()}


def is_killed(status: str) -> bool:
    return status in KILLED or status.startswith(f"{CRASHED} (")


def verdicts(results: Dict[str, str]) -> Dict[str, int]:
    """How many mutants got each verdict, most common first: how the killed ones were killed."""
    return dict(sorted(Counter(results.values()).items(), key=lambda kv: (-kv[1], kv[0])))


def module_of(mutant: str) -> str:
    """``pkg.mod.xǁClassǁmethod__mutmut_3`` -> ``pkg.mod``."""
    return mutant.rpartition(".")[0]


def changed_line(diff: str) -> str:
    """The line a mutant changes, as ``before -> after`` (from its unified diff)."""
    before = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    after = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return f"{' / '.join(before)} -> {' / '.join(after)}" if before or after else ""


@dataclass
class Progress:
    """Console progress of a long run: done/total, killed, survived, elapsed, ETA, at most every ``every`` seconds
    (on a terminal the line is rewritten in place)."""

    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    every: float = 5.0
    label: str = "mutants"
    started: float = field(default_factory=time.monotonic)
    _last: float = float("-inf")
    _shown: Tuple[int, ...] = ()

    def line(self, done: int, total: int, killed: int, survived: int) -> str:
        elapsed = time.monotonic() - self.started
        eta = f"{(total - done) * elapsed / done:.0f} s" if done and total >= done else "?"
        return f"{self.label} {done}/{total}  killed {killed}  survived {survived}  elapsed {elapsed:.0f} s  ETA {eta}"

    def update(self, done: int, total: int, killed: int, survived: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if (not force and now - self._last < self.every) or (force and self._shown == (done, total, killed, survived)):
            return
        self._last, self._shown = now, (done, total, killed, survived)
        text = self.line(done, total, killed, survived)
        if self.stream.isatty():
            self.stream.write("\r" + text + "\033[K" + ("\n" if force else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def say(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def mutmut_table(config: Dict[str, Any]) -> str:
    """``config`` as a TOML ``[tool.mutmut]`` table."""
    # Imported here: only mutate needs it, and tomli-w comes with the mutate extra, as mutmut does.
    import tomli_w

    return tomli_w.dumps({"tool": {"mutmut": config}})


# pragma: no mutate start - runs mutmut itself: only the slow end-to-end test (-m slow) reaches it, not mutmut's own run
def _counts(match: "re.Match[str]", selected: Optional[int] = None) -> Tuple[int, int, int, int]:
    # (done, total, killed, survived); "suspicious" stays out of both until the verdicts are read.
    done, total, killed, _, timeout, _, survived = map(int, match.groups())
    return done, total if selected is None else selected, killed + timeout, survived


class MutmutProject:
    """A directory mutmut runs in (its ``pyproject.toml`` holds the ``[tool.mutmut]`` table)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _mutmut(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=self.root, text=True, **kwargs)

    def run(self, *, max_children: Optional[int], only: Sequence[str] = (), log: Path, progress: Progress,
            env: Optional[Mapping[str, str]] = None) -> int:
        """``mutmut run`` (in ``env``, default this process's); its output goes to ``log`` while
        ``progress`` reports on it. mutmut's exit status."""
        cmd = [sys.executable, "-m", "mutmut", "run", *([f"--max-children={max_children}"] if max_children else []), *only]
        with open(log, "w", encoding="utf-8") as out:
            proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    encoding="utf-8", errors="replace")
            seen = None
            # mutmut's total counts every mutant even when ``only`` picks a few: count the picked ones
            # once mutmut has generated them (its first progress line).
            selected: Optional[int] = None
            # mutmut rewrites its status line with "\r": read it in chunks, not lines.
            stdout: Any = proc.stdout
            for chunk, matches in status_lines(iter(lambda: stdout.read(256), "")):
                out.write(chunk)
                for match in matches:
                    if only and selected is None:
                        selected = len(select(_exit_codes(self.root / "mutants"), only))
                    seen = match
                    progress.update(*_counts(match, selected))
            code = proc.wait()
        if seen is not None:
            progress.update(*_counts(seen, selected), force=True)
        return code

    def results(self) -> Dict[str, str]:
        """Every mutant's verdict, deaths by a signal named as crashes."""
        listing = self._mutmut("results", "--all", "true", capture_output=True)
        return name_crashes(parse_results(listing.stdout), crashes(self.root / "mutants"))

    def diffs(self, mutants: Iterable[str], source_of: Callable[[str], str]) -> Dict[str, str]:
        """Each mutant's unified diff, in one process (``mutmut show`` costs ~0.5 s a mutant)."""
        pairs = [(name, source_of(name)) for name in mutants]
        if not pairs:
            return {}
        proc = subprocess.run([sys.executable, "-c", _DIFF_SCRIPT], cwd=self.root, input=json.dumps(pairs),
                              capture_output=True, text=True)
        return json.loads(proc.stdout) if proc.returncode == 0 else {}


# pragma: no mutate end


_DIFF_SCRIPT = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
out = {}
for name, path in json.load(sys.stdin):
    try:
        out[name] = get_diff_for_mutant(name, path=path)
    except Exception as exc:
        out[name] = f"(no diff: {type(exc).__name__}: {exc})"
print(json.dumps(out))
"""


def run_with_mutant(command: Sequence[str], *, pythonpath: Sequence[Path], timeout: float, mutant: str = "") -> Tuple[str, float]:
    """Run ``command`` in the caller's directory with ``mutant`` active (mutmut's trampolines
    read ``MUTANT_UNDER_TEST``): ``("survived" | "killed" | "timeout", seconds)``; without a
    mutant it runs the unmutated code."""
    # The user's own PYTHONPATH after the copy; none when unset (an empty entry would add the cwd).
    paths = [*map(str, pythonpath), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant, PYTHONPATH=os.pathsep.join(paths))
    start = time.monotonic()
    try:
        proc = subprocess.run(list(command), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start
    return ("survived" if proc.returncode == 0 else "killed"), time.monotonic() - start


def resolve(spec: str) -> "Target":
    """The module ``spec`` names (a module name or a ``.py`` file), checked as an implementation;
    raises :class:`~ppaux.testing.impl.ImplementationError` with one line for the user."""
    impl = load(spec)
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        module, source, packages = path.stem, path.resolve(), ()
        if not module.isidentifier():
            raise ImplementationError(f"implementation file {spec!r}: {module!r} is not a module name; rename the file")
        defined_here = {impl.add.__module__, impl.pop.__module__} & {m for m, mod in sys.modules.items()
                                                                      if getattr(mod, "__file__", None) == str(source)}
    else:
        found = importlib.util.find_spec(spec)
        if found is None or not found.origin or not found.origin.endswith(".py"):
            raise ImplementationError(f"implementation {spec!r} has no Python source to mutate")
        module, source = spec, Path(found.origin)
        parents = [".".join(spec.split(".")[:i]) for i in range(1, len(spec.split(".")))]
        packages = tuple((name, tuple(importlib.util.find_spec(name).submodule_search_locations or ())) for name in parents)
        defined_here = {impl.add.__module__, impl.pop.__module__} & {spec}
    if not defined_here:
        raise ImplementationError(
            f"implementation {spec!r} defines neither add_auxiliary_output_to_pp_tensors nor pop_auxiliary_output_from_pp_tensors "
            f"(they come from {impl.add.__module__}); point --impl at the module that defines them")
    return Target(module, source, packages)


@dataclass(frozen=True)
class Target:
    """What ``ppaux mutate`` mutates: ``module`` (the name the suite's ``--ppaux-impl`` and a
    baseline import) from ``source``, inside its parent packages (``(name, their directories)``)."""

    module: str
    source: Path
    packages: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()

    @property
    def relative_path(self) -> Path:
        return Path(*self.module.split(".")).with_suffix(".py")


def scratch_package_init(original_dirs: Sequence[str]) -> str:
    """A package ``__init__`` that finds the mutated module in its own directory first and every
    other submodule where the original package has it, then runs the original ``__init__``."""
    inits = [str(Path(d) / "__init__.py") for d in original_dirs if (Path(d) / "__init__.py").is_file()]
    # pragma: no mutate start - equivalent: a comment in the generated file, which Python ignores
    header = ["# Written by ppaux mutate: this package holds only the module under mutation; every other",
              "# submodule comes from the original package, whose __init__ runs below."]
    # pragma: no mutate end
    lines = [*header, f"__path__.extend({list(original_dirs)!r})"]
    if inits:
        lines += [f"with open({inits[0]!r}, encoding='utf-8') as _original:",
                  f"    exec(compile(_original.read(), {inits[0]!r}, 'exec'))",
                  "del _original"]
    return "\n".join(lines) + "\n"


def write_scratch(target: Target, root: Path, *, tests: Sequence[Path], source: Optional[bytes] = None) -> None:
    """The scratch project: the target module under its own name (``source``, or the target's own)
    and a copy of the tests."""
    dest = root / target.relative_path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(target.source.read_bytes() if source is None else source)
    for package, dirs in target.packages:
        (root / Path(*package.split(".")) / "__init__.py").write_text(scratch_package_init(dirs), encoding="utf-8")
    (root / "tests").mkdir(exist_ok=True)
    for test in tests:
        (root / "tests" / test.name).write_bytes(test.read_bytes())


def write_config(target: Target, root: Path, *, pytest_args: Sequence[str]) -> None:
    """mutmut's configuration: mutate the target alone, kill with the tests run with ``pytest_args``."""
    config = {
        "source_paths": [target.module.split(".")[0] + ("" if target.packages else ".py")],
        "only_mutate": [target.relative_path.as_posix()],
        "pytest_add_cli_args": [*MUTANT_PYTEST_ARGS, *pytest_args],
        "pytest_add_cli_args_test_selection": ["tests/"],
    }
    # Fork each mutant from a server that has already imported torch and collected the suite.
    # pragma: no mutate start - equivalent here: speed only; a value mutmut does not know fails its run, which only the slow end-to-end test makes
    config.update({"process_isolation": "forkserver", "forkserver_warmup": "collect"})
    # pragma: no mutate end
    # The [tool.pytest.ini_options] table stops pytest from reading any configuration above this project.
    (root / "pyproject.toml").write_text(mutmut_table(config) + '\n[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n',
                                         encoding="utf-8")
