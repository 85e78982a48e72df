"""Loading the implementation under test, and the reference transport's own knobs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppaux.core import transport
from ppaux.isolation import Guard, Hang
from ppaux.testing import impl

IMPLS = Path(__file__).resolve().parent / "impls"


def test_default_is_the_reference_through_sglang_names():
    ref = impl.load(None)
    assert ref.is_reference and ref.prefix == transport._OUTPUT_PREFIX
    assert (
        ref.add is transport.add_auxiliary_output_to_pp_tensors
        and ref.pop is transport.pop_auxiliary_output_from_pp_tensors
    )
    assert impl.load("ppaux.transport").add is ref.add and impl.load("ppaux.core.transport").is_reference
    assert repr(ref) == "<ppaux prefix='__sampling_observer_output__.'>"


def test_with_prefix_rebinds_only_the_reference():
    ref = impl.load(None).with_prefix("aux.")
    assert (ref.prefix, ref.transport.prefix, repr(ref.transport)) == ("aux.", "aux.", "PPAuxTransport(prefix='aux.')")
    other = impl.load(str(IMPLS / "unstripped_names.py"))
    assert not other.is_reference and other.with_prefix("aux.") is other


def test_a_guarded_implementation_keeps_its_guard_through_a_prefix_and_is_guarded_once():
    guard, other = Guard(0.2), Guard(5)
    guarded = impl.load(str(IMPLS / "hangs_on_three_items.py")).guarded(guard)
    assert guarded.guard is guard and guarded.guarded(other) is guarded
    aux = {guarded.prefix + name: None for name in "abc"}
    with pytest.raises(Hang):
        guarded.pop(aux, None)
    rebound = impl.load(None).guarded(guard).with_prefix("aux.")
    assert (rebound.prefix, rebound.guard) == ("aux.", guard)
    assert rebound.pop({"x": 1}, None) is None and guard.slowest["pop"] >= 0


def test_a_recorded_implementation_keeps_each_add_and_pop_it_relays():
    # A failing test's calls become its regression test: both kinds, under their own names, each still made.
    from ppaux.testing.scenario import CallRecorder

    recorder = CallRecorder()
    recorded = impl.load(None).recorded(recorder)
    tensors = {"x": 1}
    assert recorded.add(tensors, None) is None and recorded.pop(tensors, None) is None
    assert [(c.op, c.arg, c.before, c.after) for c in recorder.calls] == [
        ("add", None, [("x", 1)], [("x", 1)]),
        ("pop", None, [("x", 1)], [("x", 1)]),
    ]


def test_reference_with_a_prefix_is_named_ppaux():
    assert repr(impl.reference("aux.")) == "<ppaux prefix='aux.'>"


def test_each_file_loads_as_a_module_of_its_own(tmp_path):
    """Two files, two registered modules: a dataclass in an implementation needs its module in sys.modules."""
    import sys

    first, second = tmp_path / "a.py", tmp_path / "b.py"
    source = (
        "from ppaux.core.transport import _OUTPUT_PREFIX, "
        "PipelineParallelAuxiliaryOutput, PipelineParallelSamplingObserver\n"
        "def add_auxiliary_output_to_pp_tensors(tensors, output): pass\n"
        "def pop_auxiliary_output_from_pp_tensors(tensors, observer): pass\n"
    )
    first.write_text(source)
    second.write_text(source)
    names = [impl.load(str(f)).add.__module__ for f in (first, second)]
    assert [Path(sys.modules[n].__file__) for n in names] == [first, second]


def test_a_module_name_loads_that_module():
    from tests.impls import unstripped_names as module

    loaded = impl.load("tests.impls.unstripped_names")
    assert loaded.name == "tests.impls.unstripped_names" and loaded.prefix == transport._OUTPUT_PREFIX
    assert (loaded.add, loaded.pop) == (
        module.add_auxiliary_output_to_pp_tensors,
        module.pop_auxiliary_output_from_pp_tensors,
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("missing_file.py", "implementation file 'missing_file.py' does not exist"),
        (
            "no.such.module",
            "cannot import implementation module 'no.such.module': ModuleNotFoundError: No module named 'no'",
        ),
        (
            str(IMPLS / "raises_on_import.py"),
            (
                f"importing {str(IMPLS / 'raises_on_import.py')!r} failed: "
                "ImportError: this implementation needs a GPU runtime"
            ),
        ),
        (
            str(IMPLS / "bad_prefix.py"),
            f"implementation {str(IMPLS / 'bad_prefix.py')!r} has _OUTPUT_PREFIX=''; expected a non-empty str",
        ),
        (
            str(IMPLS / "__init__.py"),
            f"implementation {str(IMPLS / '__init__.py')!r} lacks "
            + ", ".join(impl.REQUIRED_NAMES)
            + "; "
            + impl.PROVIDES,
        ),
    ],
)
def test_unusable_implementations_are_one_clear_line(spec, message):
    with pytest.raises(impl.ImplementationError) as info:
        impl.load(spec)
    assert str(info.value) == message


def test_a_file_that_is_not_python_cannot_load(tmp_path):
    path = tmp_path / "transport.txt"
    path.write_text("x = 1\n")
    with pytest.raises(impl.ImplementationError) as info:
        impl.load(str(path))
    assert str(info.value) == f"cannot load {str(path)!r} as a Python module"


@pytest.mark.parametrize("prefix", ["", None, 3])
def test_transport_refuses_an_empty_or_non_str_prefix(prefix):
    with pytest.raises(ValueError) as info:
        transport.PPAuxTransport(prefix)
    assert str(info.value) == f"the reserved prefix must be a non-empty str, not {prefix!r}"


# The profiles module read by its path: importing the ppaux package would import torch (seconds).
_SHOW_PROFILES = (
    "import runpy, sys; from types import SimpleNamespace; "
    "p = SimpleNamespace(**runpy.run_path(sys.argv[1])); "
    "print([(n, p.tuned(n).database is None, p.tuned(n).print_blob, "
    "p.tuned(n).derandomize, p.tuned(n).max_examples) for n in p.TUNINGS])"
)


def test_a_tuning_means_the_same_on_a_ci_machine():
    """Hypothesis loads its own "ci" profile when it sees ``CI``; ppaux's tunings, as its own commands and
    this project's profiles use them, must not inherit from it, or the dev and nightly runs lose their
    example database and mutation runs print blobs."""
    quiet = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "GITLAB_CI")}
    profiles = str(Path(impl.__file__).with_name("profiles.py"))
    seen = [
        subprocess.run(
            [sys.executable, "-c", _SHOW_PROFILES, profiles],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        for env in (quiet, {**quiet, "CI": "true"})
    ]
    assert seen[0] == seen[1]
    assert seen[0].strip() == str(
        [
            ("ci", True, True, True, 40),
            ("dev", False, True, False, 100),
            ("nightly", False, True, False, 2000),
            ("mutation", True, False, True, 12),
        ]
    )
