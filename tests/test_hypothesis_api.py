"""The Hypothesis names ppaux relies on beyond the public API (ppaux.testing.hypothesis_api): present
in the installed Hypothesis, reported by name and version when a release moves one, and doing what
ppaux uses them for."""

from __future__ import annotations

import random
import threading
from types import SimpleNamespace

import hypothesis
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from ppaux.testing import hypothesis_api
from ppaux.testing.hypothesis_api import (
    REQUIRED,
    HypothesisAPIError,
    add_to_database_key,
    check_hypothesis_api,
    failing_examples,
    observe_test_cases,
    replace_seed_generator,
)

MODULES = (
    "hypothesis.core",
    "hypothesis.internal.observability",
    "hypothesis.internal.reflection",
    "hypothesis.statistics",
)


def test_every_name_ppaux_relies_on_is_in_the_installed_hypothesis():
    check_hypothesis_api()
    assert sorted({need.module for need in REQUIRED}) == list(MODULES)
    assert [f"{need.module}.{need.name}" for need in REQUIRED] == [
        "hypothesis.internal.observability.add_observability_callback",
        "hypothesis.internal.observability.remove_observability_callback",
        "hypothesis.internal.observability.OBSERVABILITY_COLLECT_COVERAGE",
        "hypothesis.internal.observability.TestCaseObservation",
        "hypothesis.internal.observability.ObservationMetadata",
        "hypothesis.statistics.collector",
        "hypothesis.core.threadlocal",
        "hypothesis.internal.reflection.function_digest",
    ]


def _release(**changed) -> dict:
    """The installed modules' namespaces with some names changed (``module__name=value``) or removed (``None``)."""
    namespaces = {name: SimpleNamespace(**vars(hypothesis_api._MODULES[name])) for name in MODULES}
    for key, value in changed.items():
        module, name = key.split("__", 1)
        namespace = namespaces[f"hypothesis.{module.replace('_', '.')}"]
        if value is None:
            delattr(namespace, name)
        else:
            setattr(namespace, name, value)
    return namespaces


def test_a_moved_name_is_named_with_the_hypothesis_version_and_why_ppaux_needs_it():
    with pytest.raises(HypothesisAPIError) as caught:
        check_hypothesis_api(_release(internal_observability__add_observability_callback=None), version="7.0.0")
    assert str(caught.value) == (
        "Hypothesis 7.0.0 moved names ppaux relies on (ppaux/testing/hypothesis_api.py): "
        "hypothesis.internal.observability.add_observability_callback is gone: ppaux needs it to count the examples "
        "a fuzz round runs (one test_case observation each, on any thread)"
    )


def test_the_version_named_is_the_installed_one_by_default():
    with pytest.raises(HypothesisAPIError, match=rf"^Hypothesis {hypothesis.__version__} moved names "):
        check_hypothesis_api(_release(core__threadlocal=None))


def test_every_name_that_changed_kind_is_named_in_one_message():
    class Digest:  # digests which function it is, without reading the extra bytes
        def __call__(self, function):
            return repr(function).encode()

    release = _release(
        internal_observability__add_observability_callback=lambda f: None,
        internal_observability__remove_observability_callback="remove",
        internal_observability__OBSERVABILITY_COLLECT_COVERAGE="yes",
        internal_observability__TestCaseObservation=dict,
        internal_observability__ObservationMetadata=dict,
        statistics__collector=object(),
        core__threadlocal=object(),
        internal_reflection__function_digest=Digest(),
    )
    with pytest.raises(HypothesisAPIError) as caught:
        check_hypothesis_api(release, version="7.0.0")
    assert str(caught.value).split(": ", 1)[1].split("; ") == [
        "hypothesis.internal.observability.add_observability_callback is no longer a function (f, /, *, all_threads): "
        "ppaux needs it to count the examples a fuzz round runs (one test_case observation each, on any thread)",
        "hypothesis.internal.observability.remove_observability_callback is no longer a function (f, /): "
        "ppaux needs it to stop counting when a round's pytest session ends",
        "hypothesis.internal.observability.OBSERVABILITY_COLLECT_COVERAGE is no longer a bool: ppaux needs it to "
        "switch off tracing each example's coverage while counting (it slows a round several times over)",
        "hypothesis.internal.observability.TestCaseObservation is no longer a dataclass with fields type, status, "
        "how_generated, representation, arguments, metadata: ppaux needs it to tell a test case's observation (type "
        "'test_case', status passed, failed or gave_up) from others, and to read a failure's minimal example and "
        "reproduce blob as data, never from the failure's text",
        "hypothesis.internal.observability.ObservationMetadata is no longer a dataclass with fields "
        "reproduction_decorator, notes: ppaux needs it to read a failure's @reproduce_failure decorator, and its "
        "draws as the failure shows them, as data",
        "hypothesis.statistics.collector is no longer a DynamicVariable called once a test's search is over, before "
        "a failure's replay: ppaux needs it to switch observability on for a failure's final replay only (on for "
        "the whole search, it costs every test case a representation)",
        "hypothesis.core.threadlocal is no longer an object with _hypothesis_global_random: ppaux needs it to seed a "
        "fuzz round and keep its example database (@seed, --hypothesis-seed, derandomize drop it), and to give both "
        "forked runs of a contained test one seed",
        "hypothesis.internal.reflection.function_digest is no longer a function whose digest reads "
        "_hypothesis_internal_add_digest: ppaux needs it to key each plugin's check_observer apart in the example "
        "database (the checks share one source)",
    ]


def test_a_fuzz_round_stops_at_start_naming_the_moved_name(pytester, monkeypatch):
    gone = hypothesis_api.Requirement("hypothesis.core", "gone", "function", "for this test", callable)
    monkeypatch.setattr(hypothesis_api, "REQUIRED", [gone])
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest_inprocess("-p", "ppaux.fuzz.pytest_plugin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines == [
        f"ERROR: Hypothesis {hypothesis.__version__} moved names ppaux relies on (ppaux/testing/hypothesis_api.py): "
        "hypothesis.core.gone is gone: ppaux needs it for this test",
        "",
    ]


def _draws(n_runs: int = 1, derandomize: bool = False) -> list[int]:
    drawn: list[int] = []

    @settings(database=None, max_examples=20, derandomize=derandomize)
    @given(st.integers(0, 9))
    def property_(n):
        drawn.append(n)
        assume(n % 3)

    for _ in range(n_runs):
        property_()
    return drawn


def test_observed_test_cases_are_every_case_run_on_any_thread_without_coverage_until_stopped():
    statuses: list[str] = []
    stop = observe_test_cases(statuses.append)
    try:
        assert hypothesis_api.observability.OBSERVABILITY_COLLECT_COVERAGE is False
        drawn = _draws(derandomize=True)
        other = threading.Thread(target=_draws, kwargs={"derandomize": True})
        other.start()
        other.join()
    finally:
        stop()
    assert hypothesis_api.observability.OBSERVABILITY_COLLECT_COVERAGE is True
    assert len(statuses) == 2 * len(drawn)
    assert statuses[: len(drawn)] == ["passed" if n % 3 else "gave_up" for n in drawn]
    _draws(derandomize=True)
    assert len(statuses) == 2 * len(drawn)


def test_a_failing_case_is_observed_as_failed():
    statuses: list[str] = []
    stop = observe_test_cases(statuses.append)

    @settings(database=None, max_examples=20, derandomize=True)
    @given(st.integers(0, 9))
    def property_(n):
        assert n < 5

    try:
        with pytest.raises(AssertionError):
            property_()
    finally:
        stop()
    assert "failed" in statuses and set(statuses) == {"passed", "failed"}


def _failing(seen: list[bool]):
    """A test that fails on n >= 2 after an interactive draw and a note, noting whether observability was on."""

    @settings(database=None, max_examples=50, derandomize=True, print_blob=True)
    @given(n=st.integers(0, 9), data=st.data())
    def property_(n, data):
        seen.append(hypothesis_api.observability.observability_enabled())
        data.draw(st.lists(st.integers(0, 3)), label="steps")
        hypothesis.note(f"n is {n}")
        assert n < 2

    return property_


def test_a_failures_minimal_example_and_blob_are_what_the_failure_shows_and_only_its_replay_is_observed():
    seen: list[bool] = []
    with failing_examples() as found, pytest.raises(AssertionError) as info:
        _failing(seen)()
    # The failure's text, in the release this test pins: the example after the header, the blob in a sentence.
    *shown, blob_line = info.value.__notes__
    assert [f"Failing test case: {f.example}" for f in found] == ["\n".join(shown)]
    assert [
        f"You can reproduce this test case by temporarily adding {f.blob} as a decorator on your test function"
        for f in found
    ] == [blob_line.strip()]
    assert found[0].example.startswith("property_(\n    n=2,\n    data=data(...),\n)\nDraw 1 (steps): []")
    assert found[0].example.endswith("\nn is 2")
    # Searching and shrinking ran without observability; only the final replay had it.
    assert seen[-1] and not any(seen[:-1])
    assert not hypothesis_api.observability.observability_enabled()


def test_a_passing_test_gives_no_example_is_never_observed_and_its_statistics_still_reach_pytest():
    seen: list[bool] = []
    stats: list[dict] = []

    @settings(database=None, max_examples=10)
    @given(st.integers())
    def property_(n):
        seen.append(hypothesis_api.observability.observability_enabled())

    # Hypothesis's pytest plugin hears each test's statistics through the same hook (--hypothesis-show-statistics).
    with hypothesis_api.statistics.collector.with_value(stats.append), failing_examples() as found:
        property_()
    assert found == [] and seen and not any(seen) and len(stats) == 1
    assert not hypothesis_api.observability.observability_enabled()


def test_a_block_that_runs_several_failing_tests_gets_each_failure_once():
    with failing_examples() as found:
        for _ in range(2):
            with pytest.raises(AssertionError):
                _failing([])()
    assert [f.example.splitlines()[1] for f in found] == ["    n=2,", "    n=2,"]


def test_a_failing_test_run_on_another_thread_is_not_heard_and_leaves_observability_off():
    failed: list[BaseException] = []

    def run() -> None:
        try:
            _failing([])()
        except AssertionError as exc:
            failed.append(exc)

    with failing_examples() as found:
        other = threading.Thread(target=run)
        other.start()
        other.join()
    assert (len(failed), found) == (1, [])
    assert not hypothesis_api.observability.observability_enabled()


@pytest.fixture
def seed_generator():
    saved = replace_seed_generator(None)
    yield
    replace_seed_generator(saved)


def test_a_seeded_generator_gives_the_same_runs_and_another_seed_others(seed_generator):
    runs = []
    for seed in (5, 5, 6):
        replace_seed_generator(random.Random(seed))
        runs.append(_draws(n_runs=3))
    assert runs[0] == runs[1] != runs[2]
    # Each run of a test draws its own seed from the generator: the three runs differ.
    first = runs[0][: len(runs[0]) // 3]
    assert runs[0] != first * 3


def test_replacing_the_seed_generator_returns_the_one_in_use(seed_generator):
    assert replace_seed_generator(random.Random(1)) is None
    _draws()
    mine = random.Random(2)
    replace_seed_generator(mine)
    _draws()
    assert replace_seed_generator(None) is mine


def test_a_release_without_the_seed_generator_is_named_where_a_seed_is_replaced(monkeypatch):
    # A contained test primes the seed before it forks: a moved name is a sentence, not an AttributeError.
    monkeypatch.setattr(hypothesis_api.core, "threadlocal", object())
    with pytest.raises(HypothesisAPIError) as caught:
        replace_seed_generator(None)
    assert str(caught.value) == (
        f"Hypothesis {hypothesis.__version__} moved names ppaux relies on (ppaux/testing/hypothesis_api.py): "
        "hypothesis.core.threadlocal is no longer an object with _hypothesis_global_random: ppaux needs it to seed a "
        "fuzz round and keep its example database (@seed, --hypothesis-seed, derandomize drop it), and to give both "
        "forked runs of a contained test one seed"
    )


def _saving_test(db: InMemoryExampleDatabase):
    @settings(database=db, max_examples=20, derandomize=False)
    @given(st.integers(0, 9))
    def property_(n):
        assert n < 5

    return property_


def _keys_saved(*extras) -> set:
    db = InMemoryExampleDatabase()
    for extra in extras:
        test = _saving_test(db)
        if extra is not None:
            add_to_database_key(test, extra)
        with pytest.raises(AssertionError):
            test()
    # The test's own keys (a digest of 48 bytes), whatever suffixes Hypothesis adds for its other entries.
    return {key[:48] for key in db.data}


def test_tests_of_one_source_share_database_keys_unless_told_apart():
    assert _keys_saved(None, None) == _keys_saved(None)
    assert _keys_saved(b"a", b"a") == _keys_saved(b"a") != _keys_saved(None)
    assert _keys_saved(b"a", b"b") == _keys_saved(b"a") | _keys_saved(b"b")
    assert _keys_saved(b"a").isdisjoint(_keys_saved(b"b"))
