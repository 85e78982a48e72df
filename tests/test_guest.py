"""ppaux is a guest in other people's test runs: installed and unused it changes no setting, profile or test
of theirs and imports nothing heavy; asked for, its own tests take ppaux's tuned settings and nobody else's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import guest_project


@pytest.mark.subprocess
@pytest.mark.parametrize("profiles", [True, False], ids=["own-profiles", "no-profiles"])
@pytest.mark.parametrize("scenario", list(guest_project.SCENARIOS))
def test_another_projects_run_is_the_same_with_ppaux_installed(tmp_path, scenario, profiles):
    if scenario == "dev-flag" and not profiles:
        pytest.skip("a project without a dev profile cannot ask for one")
    with_ppaux, without = guest_project.compare(tmp_path, scenario, profiles=profiles)
    assert with_ppaux == without
    # And the runs are what the project asked for: its profile, its examples, one failing property.
    report = with_ppaux["report"]
    assert isinstance(report, dict), report
    assert (with_ppaux["exit"], with_ppaux["outcome"], report["imported"]) == (1, "1 failed, 2 passed", [])
    asked = {"ci-flag": 60, "dev-flag": 15, "ci-variable": 60, "ppaux-impl-set": 60} if profiles else {}
    # Hypothesis's own ci profile draws its default 100 examples.
    assert (report["profile"], report["examples"]) == (
        "dev" if scenario == "dev-flag" else "ci",
        asked.get(scenario, 100),
    )


PLAIN = """
from hypothesis import given, strategies as st


@given(st.integers())
def test_property(n):
    pass


def test_ppaux_stays_out(pytestconfig):
    assert pytestconfig.pluginmanager.get_plugin("ppaux.testing.plugin") is None
"""


def test_a_run_without_ppaux_tests_never_activates_ppaux_nor_reads_ppaux_impl(pytester, monkeypatch):
    monkeypatch.setenv("PPAUX_IMPL", "no.such.module")
    pytester.makepyfile(test_plain=PLAIN)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--hypothesis-profile=default")
    result.assert_outcomes(passed=2)
    assert not [line for line in result.outlines if line.startswith("ppaux:")]


def test_only_the_mark_users_write_is_registered_in_a_run_without_ppaux_tests(pytester):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.isolated: (ppaux) runs in a forked child*"])
    assert not [line for line in result.outlines if line.startswith(("@pytest.mark.contract", "@pytest.mark.gpu"))]


def _passing_test_cases(pytester, *args):
    from ppaux.testing.hypothesis_api import observe_test_cases

    seen = []
    stop = observe_test_cases(seen.append)
    try:
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--ppaux-isolation=off", *args)
    finally:
        stop()
    return result, seen.count("passed")


def test_ppaux_tests_draw_as_asked_and_other_tests_as_their_profile_says(pytester):
    # The suite's round trip under ppaux's ci tuning with 5 examples, a user's property beside it
    # under Hypothesis's default profile (100 examples): each as its own settings say.
    pytester.makepyfile(test_plain="from hypothesis import given, strategies as st\n" + PLAIN.split("\n\n\n")[1])
    asked = ["--hypothesis-profile=default", "--ppaux-profile=ci", "--ppaux-max-examples=5"]
    suite = ["--pyargs", "ppaux.conformance.test_properties", "-k", "round_trip or test_property"]
    result, alone = _passing_test_cases(pytester, *asked, *suite)
    result.assert_outcomes(passed=1)
    assert alone == 5
    result, both = _passing_test_cases(pytester, *asked, "test_plain.py", *suite)
    result.assert_outcomes(passed=2)
    assert both == 5 + 100


def test_the_suite_without_ppaux_s_plugin_is_one_line(pytester):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:ppaux", "--pyargs", "ppaux.conformance")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.errlines == [
        "ERROR: ppaux.conformance needs ppaux's pytest plugin, which this run did not load "
        "(-p no:ppaux, or PYTEST_DISABLE_PLUGIN_AUTOLOAD without -p ppaux_pytest)",
        "",
    ]


def test_a_bad_ppaux_impl_found_while_collecting_the_suite_is_one_collection_error(pytester, monkeypatch):
    monkeypatch.setenv("PPAUX_IMPL", "no_such_impl_module")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--pyargs", "ppaux.conformance")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting*",
            "cannot import implementation module 'no_such_impl_module': ModuleNotFoundError: No module named *",
            "*short test summary info*",
        ]
    )


DATABASES = """
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

settings.register_profile("no-database", database=None)
# A directory under a regular file: nothing can ever be written there.
settings.register_profile("unwritable-database", database=DirectoryBasedExampleDatabase("not-a-directory/examples"))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("profile", ["no-database", "unwritable-database"])
def test_the_suite_keeps_its_verdict_under_a_users_profile_with_no_or_an_unwritable_database(tmp_path, profile):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(DATABASES)
    (tmp_path / "not-a-directory").write_text("")
    # A bug every drawn example shows: the verdict cannot hang on the draws of an undecided profile.
    planted = Path(__file__).parent / "impls" / "unstripped_names.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--hypothesis-profile={profile}"]
        + ["--pyargs", "ppaux.conformance", f"--ppaux-impl={planted}", "-k", "failed_add_leaves or round_trip"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=guest_project.SAFETY_NET_S,
    )
    # The planted module breaks the round trip; add.6 holds: the same verdicts as under any profile.
    assert done.returncode == 1, done.stdout[-3000:]
    assert done.stdout.splitlines()[-1].startswith("1 failed, 1 passed, ")
    assert "FAILED test_properties.py::test_round_trip" in done.stdout


def test_importing_ppaux_or_its_test_tooling_imports_no_torch_until_a_name_is_used():
    # A fresh interpreter (this one has torch already): what a project's conftest, or a tool that reads
    # only ppaux's profiles, marks or version, pays at start-up.
    code = "import sys, ppaux, ppaux.testing, ppaux.testing.profiles, ppaux.conformance; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == "False\n"


def test_the_public_names_are_the_modules_own_once_used():
    import ppaux.core
    import ppaux.testing
    import ppaux.testing.kit

    assert (ppaux.add, ppaux.CATALOG, ppaux.testing.check_observer) == (
        ppaux.core.add,
        ppaux.core.CATALOG,
        ppaux.testing.kit.check_observer,
    )
    assert set(ppaux.__all__) <= set(dir(ppaux)) and set(ppaux.testing.__all__) <= set(dir(ppaux.testing))
    with pytest.raises(AttributeError) as info:
        ppaux.not_a_name  # noqa: B018
    assert str(info.value) == "module 'ppaux' has no attribute 'not_a_name'"
