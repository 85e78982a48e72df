"""The state of this checkout's bytecode cache, set before a timed run of the README's test command.

Python reads a cached ``.pyc`` (and pytest its rewritten test module) wherever one is there, even under
``PYTHONDONTWRITEBYTECODE=1``, which only stops the writing: a run's cost depends on what earlier runs
left in the checkout's ``__pycache__`` directories, not on that variable alone. So a timed run names
its state and is put in it:

- ``cold``: nothing of the checkout cached and nothing written (its ``__pycache__`` directories set
  aside for the run, ``PYTHONDONTWRITEBYTECODE=1``): every process the run starts compiles the
  checkout's modules and rewrites the test modules it imports, as on a machine that never writes
  bytecode (this one sets that variable);
- ``first``: a fresh clone's first test run, as the README's two commands give it: the cache set aside,
  then the first command's ``ppaux check`` run untimed, the test run after it, both with Python's
  default (writing on): ppaux's modules are cached by the check, the test modules by whichever process
  of the run imports them first;
- ``warm``: Python's default, the cache written by an untimed run first: every run after a user's first.

Only the checkout's own cache is touched: dot-directories and virtual environments inside it are
left alone (the installed packages' bytecode, torch's, is part of the install, not of the state).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from reports.machine import TimedRun, timed_run

STATES = ("cold", "first", "warm")
# The README's second command, as written there.
README_TESTS = ["pytest", "--hypothesis-profile=ci", "-n", "2"]


def readme_tests(*extra: str, python: str = sys.executable) -> list[str]:
    """The README's test command as the benchmarks time it: with ``python`` (by default the one that runs
    them)."""
    return [python, "-m", *README_TESTS, *extra]


def ppaux_check(report: str, *extra: str, python: str = sys.executable) -> list[str]:
    """The README's main job, ``ppaux check``, as the benchmarks run it: from ``python`` (by default the
    one that runs them), its report written in ``report``."""
    return [python, "-m", "ppaux", "check", "--report", report, *extra]


def checkout_caches(checkout: Path) -> list[Path]:
    """The ``__pycache__`` directories of the checkout's own modules and tests."""
    found = []
    for root, dirs, _ in os.walk(checkout):
        here = Path(root)
        if "__pycache__" in dirs:
            found.append(here / "__pycache__")
        # Not into the caches themselves, dot-directories (.git, .venv, .tox) or a virtual environment.
        dirs[:] = [
            d for d in dirs if d != "__pycache__" and not d.startswith(".") and not (here / d / "pyvenv.cfg").exists()
        ]
    return found


def environment(state: str) -> dict[str, str]:
    """This process's environment with bytecode writing off for a ``cold`` run, on (Python's default)
    for the others."""
    if state not in STATES:
        raise ValueError(f"bytecode state {state!r}; expected one of {', '.join(STATES)}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, PYTHONDONTWRITEBYTECODE="1") if state == "cold" else env


@contextlib.contextmanager
def set_aside(checkout: Path, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """The checkout with none of its bytecode cached, for one run in ``env``: its ``__pycache__``
    directories are set aside (renamed, so that a warm series can go on after) and put back when the run
    is over, whatever the run wrote removed."""
    aside = [(cache, cache.with_name(cache.name + ".aside")) for cache in checkout_caches(checkout)]
    for cache, moved in aside:
        cache.rename(moved)
    try:
        yield env
    finally:
        # What the run wrote: with writing on, or a test that turns it on for its child.
        for cache in checkout_caches(checkout):
            shutil.rmtree(cache, ignore_errors=True)
        for cache, moved in aside:
            moved.rename(cache)


@contextlib.contextmanager
def first(checkout: Path) -> Iterator[dict[str, str]]:
    """The checkout as the README's first command leaves a fresh clone: nothing cached (:func:`set_aside`),
    then ``ppaux check`` run once, untimed, writing the cache of what it imports. Gives the environment of
    the run that follows (writing on)."""
    with set_aside(checkout, environment("first")) as env, tempfile.TemporaryDirectory() as report:
        # The first command's `ppaux check`, its report written outside the checkout.
        subprocess.run(ppaux_check(report), cwd=checkout, env=env, capture_output=True, check=False)
        yield env


def warm_up(checkout: Path, command: Sequence[str]) -> None:
    """Write the checkout's cache with one untimed run of ``command``, before a series of warm runs."""
    subprocess.run(list(command), cwd=checkout, env=environment("warm"), capture_output=True, check=False)


def prepared(state: str, checkout: Path) -> contextlib.AbstractContextManager[dict[str, str]]:
    """One timed run's environment in ``state``, the checkout put in that state for the run: ``cold``
    sets its cache aside (:func:`set_aside`, writing off); ``first`` as :func:`first` leaves it; ``warm``
    runs on the cache :func:`warm_up` wrote."""
    if state == "cold":
        return set_aside(checkout, environment(state))
    if state == "first":
        return first(checkout)
    return contextlib.nullcontext(environment(state))


def timed_readme_tests(state: str, checkout: Path, *extra: str, python: str = sys.executable) -> TimedRun:
    """One run of the README's test command (``extra`` appended) in ``checkout`` with ``python``, the checkout
    put in ``state`` for it, its output captured as text, timed (:func:`reports.machine.timed_run`)."""
    with prepared(state, checkout) as env:
        return timed_run(readme_tests(*extra, python=python), cwd=checkout, env=env, capture_output=True, text=True)
