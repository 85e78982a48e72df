"""mutmut 3 in a directory of its own: its run (with the progress line), its verdicts, the
mutants it generates and the diffs of the ones asked for.

``ppaux mutate`` (:mod:`ppaux.mutation.mutate`) and ppaux's own runs (:mod:`ppaux.mutation.own`)
both use it. mutmut does the work: its operators make the mutants, its trampolines switch between
them (``MUTANT_UNDER_TEST``), its stats pick the tests each mutant needs; this module only runs it
and reads back what it decided.
"""

from __future__ import annotations

import codecs
import contextlib
import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ppaux.isolation import MONOTONIC, Clock, signal_group
from ppaux.mutation.score import SUSPICIOUS, crashed
from ppaux.testing.progress import Progress

__all__ = [
    "MUTANT_PYTEST_ARGS",
    "UNREADABLE_MUTANTS",
    "MutmutProgress",
    "MutmutProject",
    "changed_line",
    "crashes",
    "module_of",
    "mutmut_table",
    "name_crashes",
    "parse_mutmut_progress",
    "parse_results",
    "run_with_mutant",
    "select",
    "show_counts",
    "status_lines",
]

# Every test run of a mutation run: the cheapest tests first and the collected suite frozen for
# the garbage collector (ppaux.mutation.mutant_runs). pytest's unraisable-exception plugin runs
# gc.collect() as each session ends, a quarter of a second in a child forked from a server that
# holds torch and the collected suite; the warning it gives kills no mutant.
# In process: mutmut maps each mutant to the tests that call its function by recording the calls
# in its own process, which a test run in a forked child (ppaux.isolation) would hide from it. A
# mutant that crashes or loops is mutmut's to stop (its own timeout); the per-call limit stays.
MUTANT_PYTEST_ARGS = ("-p", "ppaux.mutation.mutant_runs", "-p", "no:unraisableexception", "--ppaux-isolation=off")
# A mutant's functions could not be read back from mutmut's mutated files (followed by its error).
UNREADABLE_MUTANTS = "mutmut's mutated functions could not be read"
_RESULT_LINE = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+?)\s*$")
# How often, and how far apart, a .meta file that does not parse is read again (a fifth of a second in all).
_META_READS = 10
_META_REREAD_S = 0.02


@dataclass(frozen=True)
class MutmutProgress:
    """What one of mutmut's progress lines says: mutants ``done`` of ``total``, those ``killed``
    (mutmut's killed and timed out) and those that ``survived``. "suspicious" stays out of both
    until the verdicts are read."""

    done: int
    total: int
    killed: int
    survived: int


def parse_mutmut_progress(text: str) -> list[MutmutProgress]:
    """Every progress line of mutmut's in ``text``, in order.

    mutmut offers its progress as no data (no API, no machine-readable output), only a status line
    of emoji rewritten with a carriage return; this function is the one place that reads it.
    Written for the releases ppaux supports, mutmut 3.x (``mutmut>=3.3,<4``; CI pins 3.8.1), whose
    line reads ``done/total  🎉 killed 🫥 no-tests  ⏰ timeout  🤔 suspicious  🙁 survived`` and
    more counts after it, as in this line of a real 3.8.1 run (after its spinner):
    ``⠸ 2/2  🎉 2 🫥 0  ⏰ 0  🤔 0  🙁 0  🔇 0  🧙 0``. Nothing past the survived count is read. A
    release that changes the line shows here (tests/test_mutate.py pins it), not as a run whose
    progress stays at nothing."""
    line = re.compile(r"(\d+)/(\d+)\s+🎉 (\d+)\s+🫥 (\d+)\s+⏰ (\d+)\s+🤔 (\d+)\s+🙁 (\d+)")
    found = []
    for match in line.finditer(text):
        done, total, killed, _, timeout, _, survived = map(int, match.groups())
        found.append(MutmutProgress(done, total, killed + timeout, survived))
    return found


def show_counts(
    progress: Progress,
    done: int,
    total: int,
    killed: int,
    survived: int,
    *,
    label: str = "mutants",
    final: bool = False,
) -> None:
    """A mutation run's progress line: done/total, killed, survived, elapsed, and the time left at
    the pace so far. ``final``: the last counts, shown once."""
    elapsed = progress.elapsed()
    eta = f"{(total - done) * elapsed / done:.0f} s" if done and total >= done else "?"
    text = f"{label} {done}/{total}  killed {killed}  survived {survived}  elapsed {elapsed:.0f} s  ETA {eta}"
    counts = (done, total, killed, survived)
    if final:
        progress.finish(text, state=counts)
    else:
        progress.update(text, state=counts)


def status_lines(chunks: Iterable[str]) -> Iterator[tuple[str, list[MutmutProgress]]]:
    """Each chunk of mutmut's output with the progress lines it completes: a line that a chunk
    boundary cuts in two is read once, whole (read alone, its second half looks like a line)."""
    pending = ""
    for chunk in chunks:
        pending += chunk
        cut = max(pending.rfind("\r"), pending.rfind("\n")) + 1
        complete, pending = pending[:cut], pending[cut:]
        yield chunk, parse_mutmut_progress(complete)
    if pending:
        yield "", parse_mutmut_progress(pending)


def parse_results(text: str) -> dict[str, str]:
    """``{mutant: status}`` from ``mutmut results --all true``."""
    return {m["name"]: m["status"] for m in map(_RESULT_LINE.match, text.splitlines()) if m}


def _exit_codes(mutants: Path) -> dict[str, int | None]:
    # mutmut keeps every mutant's exit code (None until it ran) in the *.meta files under mutants/.
    codes: dict[str, int | None] = {}
    for meta in sorted(mutants.rglob("*.meta")):
        codes.update(_read_meta(meta).get("exit_code_by_key", {}))
    return codes


def _read_meta(meta: Path) -> dict[str, Any]:
    # mutmut rewrites a module's .meta in place as its mutants finish: a read may catch it half
    # written, and is tried again (a rewrite takes milliseconds); one that never parses counts nothing.
    for _ in range(_META_READS):
        try:
            data: dict[str, Any] = json.loads(meta.read_text(encoding="utf-8"))
        except OSError:
            return {}
        except ValueError:
            time.sleep(_META_REREAD_S)
            continue
        return data
    return {}


def select(results: dict[str, Any], only: Sequence[str]) -> dict[str, Any]:
    """The entries of the mutants ``only`` names (fnmatch patterns, as ``mutmut run`` takes them); all when empty."""
    if not only:
        return dict(results)
    return {name: value for name, value in results.items() if any(fnmatch.fnmatch(name, p) for p in only)}


def crashes(mutants: Path) -> dict[str, str]:
    """``{mutant: "crashed (SIGNAME)"}`` for each mutant whose test process died by a signal,
    read from the exit codes in mutmut's ``*.meta`` files under ``mutants``."""
    return {name: crashed(code) for name, code in _exit_codes(mutants).items() if isinstance(code, int) and code < 0}


def name_crashes(results: dict[str, str], crashed: dict[str, str]) -> dict[str, str]:
    """``results`` with each "suspicious" verdict that was a death by a signal named as such."""
    return {name: crashed.get(name, status) if status == SUSPICIOUS else status for name, status in results.items()}


def module_of(mutant: str) -> str:
    """``pkg.mod.xǁClassǁmethod__mutmut_3`` -> ``pkg.mod``."""
    return mutant.rpartition(".")[0]


def changed_line(diff: str) -> str:
    """The line a mutant changes, as ``before -> after`` (from its unified diff)."""
    before = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    after = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return f"{' / '.join(before)} -> {' / '.join(after)}" if before or after else ""


def mutmut_table(config: Mapping[str, object]) -> str:
    """``config`` as a TOML ``[tool.mutmut]`` table."""
    # Imported here: only mutate needs it, and tomli-w comes with the mutate extra, as mutmut does.
    import tomli_w

    return tomli_w.dumps({"tool": {"mutmut": config}})


def _counts(line: MutmutProgress, selected: int | None = None) -> tuple[int, int, int, int]:
    """(done, total, killed, survived) of a progress line; ``selected``: the total of a narrowed run."""
    return line.done, line.total if selected is None else selected, line.killed, line.survived


def _follow(proc: subprocess.Popen[bytes], written: BinaryIO) -> Iterator[str]:
    """What ``proc`` writes to the file open as ``written``, as it comes, until ``proc`` has ended."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        ended = proc.poll() is not None
        chunk = decoder.decode(written.read())
        if chunk:
            yield chunk
        elif ended:
            return
        else:
            time.sleep(0.1)


class MutmutProject:
    """A directory mutmut runs in (its ``pyproject.toml`` holds the ``[tool.mutmut]`` table)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    # pragma: no mutate start - runs mutmut in a child process: only the slow end-to-end tests reach it
    def _mutmut(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=self.root, text=True, **kwargs)

    def run(
        self,
        *,
        max_children: int | None,
        only: Sequence[str] = (),
        log: Path,
        progress: Progress,
        env: Mapping[str, str] | None = None,
    ) -> int:
        """``mutmut run`` (in ``env``, default this process's); its output goes to ``log`` while
        ``progress`` reports on it. mutmut's exit status."""
        cmd = [
            sys.executable,
            "-m",
            "mutmut",
            "run",
            *([f"--max-children={max_children}"] if max_children else []),
            *only,
        ]
        # mutmut writes to the log itself, and the progress is read back from the log: a process a mutant
        # leaks (it may block every signal) keeps the log open, so waiting for the end of a pipe would
        # wait for it, not for mutmut.
        with open(log, "w", encoding="utf-8") as out, open(log, "rb") as written:
            # A session of its own, so that what its mutants leak is stopped with it.
            proc = subprocess.Popen(
                cmd, cwd=self.root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            seen = None
            # mutmut's total counts every mutant even when ``only`` picks a few: count the picked ones
            # once mutmut has generated them (its first progress line).
            selected: int | None = None
            try:
                # mutmut rewrites its status line with "\r": read it in chunks, not lines.
                for _, lines in status_lines(_follow(proc, written)):
                    for line in lines:
                        if only and selected is None:
                            selected = len(select(_exit_codes(self.root / "mutants"), only))
                        seen = line
                        show_counts(progress, *_counts(line, selected))
                code = proc.wait()
            except KeyboardInterrupt:
                # Outside the terminal's process group, mutmut did not see the Ctrl-C: pass it on.
                signal_group(proc.pid, signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=30)
                raise
            finally:
                # What is left of its session: processes a mutant leaked (it may break the very code
                # that reaps children).
                signal_group(proc.pid, signal.SIGKILL)
        if seen is not None:
            show_counts(progress, *_counts(seen, selected), final=True)
        return code

    def results(self) -> dict[str, str]:
        """Every mutant's verdict, deaths by a signal named as crashes ("not checked" before a run)."""
        listing = self._mutmut("results", "--all", "true", capture_output=True)
        return name_crashes(parse_results(listing.stdout), crashes(self.root / "mutants"))

    def generate(self, *, max_children: int | None) -> list[str]:
        """Generate the mutants as ``mutmut run`` does first, and run no test: their names."""
        subprocess.run(
            [sys.executable, "-c", _GENERATE_SCRIPT, str(max_children or os.cpu_count() or 1)],
            cwd=self.root,
            check=True,
            capture_output=True,
        )
        return list(self.results())

    # pragma: no mutate end

    def diffs(self, mutants: Iterable[str], source_of: Callable[[str], str]) -> dict[str, str]:
        """Each mutant's unified diff, in one process (``mutmut show`` costs ~0.5 s a mutant)."""
        pairs = [(name, self._module_file(source_of(name))) for name in mutants]
        if not pairs:
            return {}
        proc = subprocess.run(
            [sys.executable, "-c", _DIFF_SCRIPT], cwd=self.root, input=json.dumps(pairs), capture_output=True, text=True
        )
        return json.loads(proc.stdout) if proc.returncode == 0 else {}

    def sources(self, mutants: Iterable[str], source_of: Callable[[str], str]) -> dict[str, tuple[str, str]]:
        """Each mutant's function as it was and as the mutant has it, ``{name: (original, mutated)}``,
        read from mutmut's mutated files in one process: what :mod:`ppaux.mutation.identity` reads.
        A mutant whose functions cannot be read is left out (it gets no identity)."""
        pairs = [(name, self._module_file(source_of(name))) for name in mutants]
        if not pairs:
            return {}
        proc = subprocess.run(
            [sys.executable, "-c", _SOURCES_SCRIPT],
            cwd=self.root,
            input=json.dumps(pairs),
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{UNREADABLE_MUTANTS}: {proc.stderr.strip()[-2000:]}")
        return {name: (functions[0], functions[1]) for name, functions in json.loads(proc.stdout).items() if functions}

    def _module_file(self, path: str) -> str:
        # mutmut names a package's own mutants after the package: pkg/sub.py is then pkg/sub/__init__.py.
        found = source_file(self.root, path.removesuffix(".py").replace("/", "."))
        return path if found is None else found.relative_to(self.root).as_posix()


def source_file(root: Path, module: str) -> Path | None:
    """Where the dotted ``module`` is under ``root``: ``pkg/mod.py``, else ``pkg/mod/__init__.py``; None if neither."""
    base = root / module.replace(".", "/")
    for path in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


# What `mutmut run` does before its first test run (mutmut 3.8's own steps, without its stats).
_GENERATE_SCRIPT = """
import os, sys
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(int(sys.argv[1]))
"""

# The two functions a mutant's diff compares (mutmut 3.8's own reading of its mutated files).
_SOURCES_SCRIPT = """
import json, sys
import libcst as cst
from mutmut.mutation import diff_apply as d
out, modules = {}, {}
for name, path in json.load(sys.stdin):
    try:
        functions = d.read_functions_from_index(name, path)
        if functions is None:
            if path not in modules:
                modules[path] = d.read_mutants_module(path)
            module = modules[path]
            functions = (d.read_original_function(module, name), d.read_mutant_function(module, name))
        out[name] = [cst.Module([f]).code for f in functions]
    except Exception as exc:  # one unreadable mutant: no identity for it, the others still read
        out[name] = None
        print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
print(json.dumps(out))
"""

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


def run_with_mutant(
    command: Sequence[str],
    *,
    pythonpath: Sequence[Path],
    timeout: float,
    mutant: str = "",
    clock: Clock = MONOTONIC,
) -> tuple[str, float]:
    """Run ``command`` in the caller's directory with ``mutant`` active (mutmut's trampolines
    read ``MUTANT_UNDER_TEST``): ``("survived" | "killed" | "timeout", seconds)``, the seconds read
    on ``clock``; without a mutant it runs the unmutated code."""
    # The user's own PYTHONPATH after the copy; none when unset (an empty entry would add the cwd).
    paths = [*map(str, pythonpath), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant, PYTHONPATH=os.pathsep.join(paths))
    start = clock.monotonic()
    try:
        proc = subprocess.run(
            list(command), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", clock.monotonic() - start
    return ("survived" if proc.returncode == 0 else "killed"), clock.monotonic() - start
