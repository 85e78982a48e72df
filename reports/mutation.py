"""ppaux's own mutation runs: which parts of ppaux/ each scope mutates, with which tests, at which
gate (:data:`SCOPES`, the one source of truth), run by :mod:`ppaux.mutation.own`.

Two scopes: ``contract`` (the modules that carry the contract, every mutant killed; ``.ci/run``)
and ``package`` (all of ppaux/, score reported; the nightly job). The mutants judged equivalent
are in ``docs/equivalents/<scope>.json`` (keyed by mutant identity: :mod:`ppaux.mutation.equivalents`);
``--list`` lists a scope's mutants, each with the line it changes, without running a test;
:func:`judgements` reads the judgements against the code as it is, without mutmut (``.ci/run``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ppaux.mutation.own import CLEAN_RUN_FAILED, Checkout, Scope, audit_judgements, list_mutants, run_scope
from ppaux.mutation.pragmas import markings
from ppaux.mutation.score import EquivalentsError

__all__ = ["CHECKOUT", "CLEAN_RUN_FAILED", "SCOPES", "judgements", "run"]

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_MODULES = ("ppaux/core/transport.py", "ppaux/core/errors.py", "ppaux/core/integrity.py", "ppaux/relay/wire.py")
CHECKOUT = Checkout(
    root=ROOT,
    # What the scratch copy holds: the package (first), its tests and what they read.
    copied=(
        "ppaux",
        "strategies",
        "tests",
        "docs",
        "fuzz",
        "reports",
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        "ppaux_pytest.py",
        "pyproject.toml",
    ),
    # -o addopts= and no xdist: mutmut runs the tests in its own process. The reports/, binding and
    # SGLang-release tests run ppaux in subprocesses, where mutmut's stats run sees no mutant hit.
    # The fuzz tests stay: most drive ppaux fuzz's command, report and database in this process.
    pytest_args=(
        "-o",
        "addopts=",
        "--strict-markers",
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=mutation",
        "-q",
        "-p",
        "no:randomly",
        "--ignore=tests/test_reports.py",
        "--ignore=tests/test_binding.py",
        "--ignore=tests/test_sglang_conformance.py",
    ),
    # The plugin that orders and freezes mutmut's own test runs: a mutant of it changes how long a
    # run takes, never a verdict.
    # The shipped examples are documentation, like the shipped suite (coverage omits both): their
    # test file mutated in the copy no longer reads as the docs show it.
    do_not_mutate=("ppaux/conformance/*", "ppaux/examples/*", "ppaux/mutation/mutant_runs.py"),
    always_gated=CONTRACT_MODULES,
    # What every scope's tests read besides their test paths: a change here reruns every mutant.
    test_support=("tests/conftest.py", "tests/support.py", "strategies", "ppaux_pytest.py"),
)

SCOPES: dict[str, Scope] = {
    "contract": Scope(
        name="contract",
        mutate=CONTRACT_MODULES,
        # The shipped suite and the tests of these modules: every mutant of the contract must die here.
        tests=(
            "ppaux/conformance/",
            "tests/test_catalog.py",
            "tests/test_integrity.py",
            "tests/test_transport_names.py",
            "tests/test_wire.py",
            "tests/test_wire_relay_api.py",
            "tests/test_pipeline.py",
            "tests/test_faults.py",
        ),
        gate=100.0,
        doc="the modules that carry the contract (transport, errors, integrity, the wire model), every mutant killed",
        marks="not sglang",
        equivalents=("docs/equivalents/contract.json",),
    ),
    "package": Scope(
        name="package",
        mutate=("ppaux/*",),
        tests=("ppaux/conformance/", "ppaux/examples/", "tests/"),
        gate=None,
        doc="all of ppaux/, the score per module reported (the contract modules still gated at 100%)",
        # Naming the subprocess mark opts its tests in (tests/conftest.py): ppaux mutate's command-line
        # tests run its clean runs in child processes; in-process they kill its mutants.
        marks="not sglang or subprocess",
        equivalents=("docs/equivalents/contract.json", "docs/equivalents/package.json"),
        # Tests that cannot pass inside mutmut's copy of the checkout: each one failed the clean run.
        deselect=(
            (
                "tests/test_fork_server.py::test_each_xdist_worker_runs_its_contained_tests_in_a_forked_worker_of_its_own",
                "its xdist workers run the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
            (
                "tests/test_gloo.py::test_world_watchdog_kills_ranks_that_hang_and_restarts",
                "reads frame names that mutmut's trampolines rename (x_serve__mutmut_orig)",
            ),
            (
                "tests/test_gloo.py::test_a_stopped_rank_says_where_it_was_stuck_and_a_dead_one_what_killed_it",
                "reads frame names that mutmut's trampolines rename (x_rank_main__mutmut_orig)",
            ),
            (
                "tests/test_gloo.py::test_a_shared_world_with_an_extension_sets_it_up_on_its_worker_processes",
                "its ranks miss their 10 s start under mutmut's load",
            ),
            (
                "tests/test_kit.py::test_a_kit_failure_shows_the_authors_test_line_and_none_of_the_kits_frames",
                "fails in mutmut's copy only: the failure it shows holds frames of mutmut's trampolines",
            ),
            (
                "tests/test_kit_docs.py::test_example_plugin_test_is_three_lines",
                "the example file it reads is rewritten in the copy",
            ),
            (
                "tests/test_mutation_runs.py::test_the_scratch_project_carries_the_scopes_mutmut_table",
                "the copy's pyproject.toml already holds a [tool.mutmut] table (declared twice)",
            ),
            (
                "tests/test_packaging.py::test_the_wheel_ships_every_module_of_the_examples",
                "fails in mutmut's copy only: it builds a wheel of the copy, not of the checkout",
            ),
            (
                "tests/test_regressions.py::test_the_steps_of_a_counterexample_read_as_a_hand_written_test",
                "fails in mutmut's own process only (its stats run), not in a plain pytest of the copy",
            ),
            (
                "tests/test_regressions.py::test_a_test_that_passes_against_the_implementation_is_not_written",
                "its child pytest runs the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
            (
                "tests/test_regressions.py::test_regression_files_fail_on_the_implementation_without_ppaux_and_pass_on_the_reference",
                "its child pytest runs the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
            (
                "tests/test_regressions.py::test_a_crash_becomes_a_test_that_runs_the_calls_in_a_child_with_a_time_limit",
                "its child pytest runs the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
            (
                "tests/test_regressions.py::test_a_proof_run_that_dies_or_outlasts_its_limit_says_so_and_spares_the_other_files",
                "its child pytest runs the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
            (
                "tests/test_regressions.py::test_a_clause_keeps_the_tests_that_tell_the_implementation_from_the_reference",
                "its child pytest runs the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
            (
                "tests/test_report_schemas.py::test_a_check_that_writes_regression_files_writes_what_the_schema_describes",
                "its regression proofs run the copy in mutmut's stats mode from a scratch dir: mutmut finds no config",
            ),
        ),
    ),
}


def run(
    out_dir: str,
    max_children: int | None,
    only: list[str] | None = None,
    scope_name: str = "contract",
    *,
    list_only: bool = False,
    full: bool = False,
    checkout: Checkout = CHECKOUT,
) -> int:
    """The scope's run (exit 0 at the gate, 1 below it or when mutmut failed, 2 for an equivalents
    file that cannot be read), incremental unless ``full``; with ``list_only``, its mutants listed, no test run."""
    scope = SCOPES[scope_name]
    if list_only:
        return list_mutants(checkout, scope, out_dir, max_children, only or [])
    try:
        return run_scope(
            checkout,
            scope,
            out_dir,
            max_children,
            only or [],
            full=full,
            markings=lambda: markings(checkout.root / "ppaux"),
        )
    except EquivalentsError as exc:
        return _refused(exc)


def judgements(files: list[str], *, restamp: bool = False, checkout: Checkout = CHECKOUT) -> int:
    """Every judgement of ``files`` (default: each file under ``docs/equivalents/``) still on the
    function it was judged on (exit 0), else each named (1; :func:`~ppaux.mutation.own.audit_judgements`);
    2 for a file that cannot be read."""
    names = files or sorted(
        p.relative_to(checkout.root).as_posix() for p in (checkout.root / "docs" / "equivalents").glob("*.json")
    )
    try:
        return audit_judgements(checkout, names, restamp=restamp)
    except EquivalentsError as exc:
        return _refused(exc)


def _refused(exc: EquivalentsError) -> int:
    # An equivalents file that cannot be read: a usage error, as for any other input.
    print(f"reports: error: equivalents file {exc}", file=sys.stderr)
    return 2
