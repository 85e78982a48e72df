"""Every Hypothesis name ppaux relies on beyond ``hypothesis``'s top-level public API, in one place.

Each is listed in :data:`REQUIRED` with why ppaux needs it; :func:`check_hypothesis_api` says, naming
the installed Hypothesis version and the name, when a release has moved one (the fuzz rounds check at
start-up; ``tests/test_hypothesis_api.py`` checks in CI). Nothing else in ppaux imports from
``hypothesis.internal`` or touches a private Hypothesis attribute.

The modules, not the names, are imported here: a moved name is then reported by the check, never
an ImportError before it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import hypothesis

# core: the generator each test draws its seed from (a module no documented API names).
# observability: documented (6.137+) in Hypothesis's observability reference, though the path says internal.
# reflection: only for the check that a test's example-database key still reads the extra bytes.
# statistics: the hook Hypothesis calls once a test's search is over, before it replays a failure.
from hypothesis import core, statistics
from hypothesis.internal import observability, reflection

__all__ = [
    "FailingExample",
    "HypothesisAPIError",
    "REQUIRED",
    "Requirement",
    "add_to_database_key",
    "check_hypothesis_api",
    "failing_examples",
    "observe_test_cases",
    "replace_seed_generator",
]

_MISSING = object()
# How Hypothesis marks the observation of a failure's final replay (TestCaseObservation.how_generated).
_MINIMAL_FAILING = "minimal failing test case"
# The attribute of a test's inner function whose bytes Hypothesis adds to its example-database key.
_ADD_DIGEST = "_hypothesis_internal_add_digest"


class HypothesisAPIError(RuntimeError):
    """The installed Hypothesis lacks a name ppaux relies on (see :data:`REQUIRED`)."""


@dataclass(frozen=True)
class Requirement:
    """One name of a Hypothesis module that ppaux relies on, what it must be, and why ppaux needs it."""

    module: str
    name: str
    kind: str
    why: str
    fits: Callable[[object], bool]


def _takes(*keywords: str) -> Callable[[object], bool]:
    def fits(value: object) -> bool:
        if not callable(value):
            return False
        parameters = inspect.signature(value).parameters
        return all(keyword in parameters for keyword in keywords)

    return fits


def _has_fields(*names: str) -> Callable[[object], bool]:
    def fits(value: object) -> bool:
        return dataclasses.is_dataclass(value) and set(names) <= {f.name for f in dataclasses.fields(value)}

    return fits


def _reads_add_digest(function_digest: Any) -> bool:  # Any: whatever Hypothesis has under that name, called
    # Behaviour, not source: a function's digest must change with the extra bytes.
    def probe() -> None:
        pass  # pragma: no cover - never called, only digested

    before = function_digest(probe)
    setattr(probe, _ADD_DIGEST, b"ppaux")
    return bool(function_digest(probe) != before)


REQUIRED: list[Requirement] = [
    Requirement(
        "hypothesis.internal.observability",
        "add_observability_callback",
        "a function (f, /, *, all_threads)",
        "to count the examples a fuzz round runs (one test_case observation each, on any thread)",
        _takes("all_threads"),
    ),
    Requirement(
        "hypothesis.internal.observability",
        "remove_observability_callback",
        "a function (f, /)",
        "to stop counting when a round's pytest session ends",
        _takes(),
    ),
    Requirement(
        "hypothesis.internal.observability",
        "OBSERVABILITY_COLLECT_COVERAGE",
        "a bool",
        "to switch off tracing each example's coverage while counting (it slows a round several times over)",
        lambda value: isinstance(value, bool),
    ),
    Requirement(
        "hypothesis.internal.observability",
        "TestCaseObservation",
        "a dataclass with fields type, status, how_generated, representation, arguments, metadata",
        "to tell a test case's observation (type 'test_case', status passed, failed or gave_up) from others, "
        "and to read a failure's minimal example and reproduce blob as data, never from the failure's text",
        _has_fields("type", "status", "how_generated", "representation", "arguments", "metadata"),
    ),
    Requirement(
        "hypothesis.internal.observability",
        "ObservationMetadata",
        "a dataclass with fields reproduction_decorator, notes",
        "to read a failure's @reproduce_failure decorator, and its draws as the failure shows them, as data",
        _has_fields("reproduction_decorator", "notes"),
    ),
    Requirement(
        "hypothesis.statistics",
        "collector",
        "a DynamicVariable called once a test's search is over, before a failure's replay",
        "to switch observability on for a failure's final replay only (on for the whole search, it costs "
        "every test case a representation)",
        lambda value: hasattr(value, "value") and callable(getattr(value, "with_value", None)),
    ),
    Requirement(
        "hypothesis.core",
        "threadlocal",
        "an object with _hypothesis_global_random",
        "to seed a fuzz round and keep its example database (@seed, --hypothesis-seed, derandomize drop it), "
        "and to give both forked runs of a contained test one seed",
        lambda value: hasattr(value, "_hypothesis_global_random"),
    ),
    Requirement(
        "hypothesis.internal.reflection",
        "function_digest",
        "a function whose digest reads " + _ADD_DIGEST,
        "to key each plugin's check_observer apart in the example database (the checks share one source)",
        _reads_add_digest,
    ),
]

_MODULES: dict[str, ModuleType] = {module.__name__: module for module in (core, observability, reflection, statistics)}


def check_hypothesis_api(modules: Mapping[str, object] | None = None, version: str = hypothesis.__version__) -> None:
    """Raise :class:`HypothesisAPIError` naming the Hypothesis version and every required name that is
    missing or no longer what ppaux expects; ``modules`` maps a module name to its namespace (default: imported)."""
    found: Mapping[str, object] = _MODULES if modules is None else modules
    problems = []
    for need in REQUIRED:
        value = getattr(found[need.module], need.name, _MISSING)
        if value is _MISSING:
            problems.append(f"{need.module}.{need.name} is gone: ppaux needs it {need.why}")
        elif not need.fits(value):
            problems.append(f"{need.module}.{need.name} is no longer {need.kind}: ppaux needs it {need.why}")
    if problems:
        raise HypothesisAPIError(
            f"Hypothesis {version} moved names ppaux relies on (ppaux/testing/hypothesis_api.py): "
            + "; ".join(problems)
        )


def observe_test_cases(on_test_case: Callable[[str], None]) -> Callable[[], None]:
    """Call ``on_test_case(status)`` for each test case any Hypothesis test runs in this process, on
    any thread (``status``: ``passed``, ``failed`` or ``gave_up``), until the returned function is called.

    Hypothesis collects no coverage per test case meanwhile (the ``OBSERVABILITY_COLLECT_COVERAGE``
    switch its doc comment offers for performance; the environment variable the observability docs
    name would also write every test case to ``.hypothesis/observed/``); the returned function puts
    the switch back.
    """
    collect = observability.OBSERVABILITY_COLLECT_COVERAGE
    observability.OBSERVABILITY_COLLECT_COVERAGE = False

    def observe(observation: Any, thread_id: int) -> None:  # Any: an internal type that moves between versions
        if observation.type == "test_case":
            on_test_case(observation.status)

    observability.add_observability_callback(observe, all_threads=True)

    def stop() -> None:
        observability.remove_observability_callback(observe)
        observability.OBSERVABILITY_COLLECT_COVERAGE = collect

    return stop


@dataclass(frozen=True)
class FailingExample:
    """A failure's minimal test case, as Hypothesis replays it at the end of a test: ``example``, the call
    with the drawn arguments then each interactive draw and note (a state machine's steps), as the failure
    shows them after its "Failing test case:"; ``blob``, the ``@reproduce_failure(...)`` decorator that
    replays it."""

    example: str
    blob: str


def _example(observation: Any) -> str:  # Any: a TestCaseObservation
    # The representation is the call, then each interactive draw as JSON ("\nDraw 1 (case): [...]", its
    # name an argument's); the notes hold each draw as the failure shows it, and the test's own notes.
    draws = [name for name in observation.arguments if name.startswith("Draw ")]
    call = observation.representation.partition(f"\n{draws[0]}: ")[0] if draws else observation.representation
    return "\n".join([call, *observation.metadata.notes])


@contextlib.contextmanager
def failing_examples() -> Iterator[list[FailingExample]]:
    """Run the block with a list that receives each failure's minimal test case, as data, as Hypothesis
    replays it (one per distinct failure; none for a test that passes or is not a Hypothesis test).

    Observability is switched on, for this thread, only once Hypothesis has noted a test's statistics,
    when its search and shrinking are over: a passing test then runs no test case more, a failing one
    only its final replay. On for the whole search, it costs every test case a representation. Once
    on, it stays on to the end of the block: a block that runs several tests (a pytest test runs one)
    pays for the later ones' searches. The statistics hook is this thread's, as the block is: a test
    run on another thread is not heard.
    """
    found: list[FailingExample] = []

    def observe(observation: Any) -> None:  # Any: an internal type that moves between versions
        if observation.type == "test_case" and observation.how_generated == _MINIMAL_FAILING:
            found.append(FailingExample(_example(observation), observation.metadata.reproduction_decorator))

    collector: Any = statistics.collector  # Any: typed by its default value, None
    outer = collector.value

    def searched(stats: Any) -> None:  # Any: Hypothesis's statistics, passed on untouched
        if outer is not None:
            outer(stats)
        observability.remove_observability_callback(observe)  # once, if a block runs several tests
        observability.add_observability_callback(observe)

    with collector.with_value(searched):
        try:
            yield found
        finally:
            observability.remove_observability_callback(observe)


def replace_seed_generator(generator: random.Random | None) -> random.Random | None:
    """Make ``generator`` the one this thread's Hypothesis tests draw their seeds from; return the old one.

    ``None`` is a process that has run no test yet: Hypothesis makes a fresh one on first use. Seeded,
    each test of a round gets the same seed on a rerun, and the example database stays on.
    """
    if not hasattr(getattr(core, "threadlocal", None), "_hypothesis_global_random"):
        check_hypothesis_api()  # raises HypothesisAPIError: the version and the moved name, in words
    old: random.Random | None = core.threadlocal._hypothesis_global_random
    core.threadlocal._hypothesis_global_random = generator
    return old


def add_to_database_key(test: Any, extra: bytes) -> None:  # Any: a @given test, read through .hypothesis
    """Add ``extra`` to the key under which the ``@given`` test ``test`` keeps its examples in the
    example database (Hypothesis derives it from the test's source, which may not tell tests apart)."""
    setattr(test.hypothesis.inner_test, _ADD_DIGEST, extra)
