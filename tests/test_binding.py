"""The implementation under test is bound to each pytest run: nested sessions in the same process
(pytester runs that name other implementations) never change what the suite checks, in either
test order. Each case runs the whole shipped suite with the nested-session tests in one process,
from an empty directory, against a planted bug."""

from __future__ import annotations

import pytest

from tests.whole_suite import ROOT, failed, run_in_one_process

pytestmark = pytest.mark.subprocess

IMPLS = ROOT / "tests" / "impls"


# Nightly: the reverse order below runs the same machinery in CI.
@pytest.mark.thorough
def test_a_non_atomic_add_fails_the_suite_after_nested_sessions(tmp_path):
    """The planted add writes each key as soon as its item passes: exactly add.6 and the leak machine catch it."""
    status, rows, output = run_in_one_process(str(IMPLS / "non_atomic_add.py"), tmp_path)
    assert status == 1, output
    assert {rows[n]["clause"] for n in failed(rows)} == {"add.6", "no-leaked-keys"}, output
    assert all("robustness" in rows[n]["marks"] for n in failed(rows))
    # The nested sessions ran first, and passed.
    assert [r["outcome"] for n, r in rows.items() if n.startswith("tests/test_plugin.py")] == ["passed"] * len(
        [n for n in rows if n.startswith("tests/test_plugin.py")]
    )


def test_a_pop_that_deletes_by_the_observers_dict_fails_the_suite_in_reverse_order(tmp_path):
    """The planted pop deletes the keys of the dict it handed the observer: pop.4 and the leak machine catch it,
    with the nested sessions running after the suite this time."""
    status, rows, output = run_in_one_process(str(IMPLS / "pop_by_observer_dict.py"), tmp_path, reverse=True)
    assert status == 1, output
    assert {rows[n]["clause"] for n in failed(rows)} == {"pop.4", "no-leaked-keys"}, output
    assert list(rows)[0].startswith("ppaux/conformance/test_stateful.py")
