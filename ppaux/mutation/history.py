"""The recorded results of a scope's mutation runs, per mutant identity: what makes a run incremental.

A run records every mutant's verdict (and the test that killed it) by its identity
(:mod:`ppaux.mutation.identity`), stamped with its function's AST hash, in
``mutation-history-<scope>.json`` beside the report, with the hash of the tests the scope runs
(every file under its test paths and the checkout's test support) and the mutmut version. The
next run reuses a recorded verdict where the mutant's function hash, the tests' hash and mutmut's
version are all the same; every mutant of a changed or new function runs, the
test that killed the same change before first (:mod:`ppaux.mutation.mutant_runs`).

What it cannot see: a change outside the mutant's function (a helper it calls, a constant it
reads) that changes whether a test kills it. The nightly full run (``--full``) is the check on that.
The file is versioned (``format``); a file of another format, scope, tests or mutmut is not read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

from ppaux.mutation.identity import MutantIdentity
from ppaux.report.files import write_atomic

__all__ = [
    "FORMAT",
    "HISTORY",
    "NOT_CHECKED",
    "Recorded",
    "function_patterns",
    "killers",
    "load",
    "plan",
    "save",
    "tests_hash",
]

FORMAT = 1
# Beside the report, one per scope (the scopes share a report directory by default).
HISTORY = "mutation-history-{scope}.json"
# mutmut's verdict of a mutant it generated and did not run: nothing to record.
NOT_CHECKED = "not checked"
Key = tuple[str, str, str, str, int]


class Recorded(NamedTuple):
    """A mutant's recorded result: its function's hash then, its verdict, the test that killed it (if known)."""

    function_hash: str
    verdict: str
    killer: str | None = None


def tests_hash(root: Path, paths: Iterable[str], settings: Iterable[str] = ()) -> str:
    """sha256 over every file under ``paths`` (relative to ``root``; files or directories), by path
    and content, and the run's ``settings`` (its pytest arguments): a change to any of them changes it."""
    digest = hashlib.sha256()
    for setting in settings:
        digest.update(b"setting\0" + setting.encode() + b"\0")
    files: set[Path] = set()
    for entry in paths:
        path = root / entry
        files.update(path.rglob("*") if path.is_dir() else [path])
    for path in sorted(files):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stamp(scope: str, tests: str, mutmut: str) -> dict[str, object]:
    return {"format": FORMAT, "scope": scope, "tests_hash": tests, "mutmut": mutmut}


def load(path: Path, *, scope: str, tests: str, mutmut: str) -> dict[Key, Recorded] | None:
    """``{identity key: recorded result}`` at ``path``, from a run of the same scope,
    tests and mutmut; ``None`` where there is none (or it is of another format, scope, tests or mutmut)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or any(data.get(k) != v for k, v in _stamp(scope, tests, mutmut).items()):
        return None
    recorded = {}
    for entry in data.get("mutants", []):
        identity = MutantIdentity(**{k: v for k, v in entry.items() if k not in ("verdict", "killer")})
        recorded[identity.key] = Recorded(identity.function_hash, entry["verdict"], entry.get("killer"))
    return recorded


def save(
    path: Path,
    results: Mapping[str, str],
    identities: Mapping[str, MutantIdentity],
    *,
    killers: Mapping[str, str] = {},
    scope: str,
    tests: str,
    mutmut: str,
) -> int:
    """Record every mutant's verdict of ``results`` by its identity, with the test that killed it
    where ``killers`` names one (none for a mutant not checked); how many."""
    mutants = [
        {**asdict(identities[name]), "verdict": verdict, **({"killer": killers[name]} if name in killers else {})}
        for name, verdict in sorted(results.items())
        if verdict != NOT_CHECKED and name in identities
    ]
    data = {**_stamp(scope, tests, mutmut), "mutants": mutants}
    write_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return len(mutants)


def plan(
    identities: Mapping[str, MutantIdentity], recorded: Mapping[Key, Recorded]
) -> tuple[dict[str, str], list[str]]:
    """The recorded verdicts that still hold (``{mutmut name: verdict}``: same change, same function
    hash) and the mutants to run: every mutant of a function with any mutant that has none."""
    reused: dict[str, str] = {}
    stale_functions: set[tuple[str, str]] = set()
    for name, identity in identities.items():
        hit = recorded.get(identity.key)
        if hit is not None and hit.function_hash == identity.function_hash:
            reused[name] = hit.verdict
        else:
            stale_functions.add((identity.module, identity.function))
    # A function runs whole: mutmut is asked for it by pattern, and its mutants share its tests.
    to_run = sorted(n for n, i in identities.items() if (i.module, i.function) in stale_functions)
    for name in to_run:
        reused.pop(name, None)
    return reused, to_run


def killers(identities: Mapping[str, MutantIdentity], recorded: Mapping[Key, Recorded]) -> dict[str, str]:
    """``{mutmut name: the test that killed the mutant with the same change before}``, whatever its
    function's hash: the test to run first for a changed function's mutant."""
    out = {}
    for name, identity in identities.items():
        hit = recorded.get(identity.key)
        if hit is not None and hit.killer:
            out[name] = hit.killer
    return out


def function_patterns(names: Iterable[str]) -> list[str]:
    """mutmut's ``run`` patterns for the functions of ``names``: ``pkg.mod.x_f__mutmut_*``, each once."""
    return sorted({name.rpartition("__mutmut_")[0] + "__mutmut_*" for name in names})
