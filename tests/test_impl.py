"""Loading the implementation under test, and the reference transport's own knobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux import impl, transport
from ppaux.pytest_plugin import current_implementation
import ppaux.pytest_plugin as plugin

IMPLS = Path(__file__).resolve().parent / "impls"


def test_default_is_the_reference_through_sglang_names():
    ref = impl.load(None)
    assert ref.is_reference and ref.prefix == transport._OUTPUT_PREFIX
    assert ref.add is transport.add_auxiliary_output_to_pp_tensors and ref.pop is transport.pop_auxiliary_output_from_pp_tensors
    assert impl.load("ppaux.transport").add is ref.add
    assert repr(ref) == "<ppaux prefix='__sampling_observer_output__.'>"


def test_with_prefix_rebinds_only_the_reference():
    ref = impl.load(None).with_prefix("aux.")
    assert (ref.prefix, ref.transport.prefix, repr(ref.transport)) == ("aux.", "aux.", "PPAuxTransport(prefix='aux.')")
    other = impl.load(str(IMPLS / "unstripped_names.py"))
    assert not other.is_reference and other.with_prefix("aux.") is other


def test_reference_with_a_prefix_is_named_ppaux():
    assert repr(impl.reference("aux.")) == "<ppaux prefix='aux.'>"


def test_each_file_loads_as_a_module_of_its_own(tmp_path):
    """Two files, two registered modules: a dataclass in an implementation needs its module in sys.modules."""
    import sys

    first, second = tmp_path / "a.py", tmp_path / "b.py"
    source = (
        "from ppaux.transport import _OUTPUT_PREFIX, PipelineParallelAuxiliaryOutput, PipelineParallelSamplingObserver\n"
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
    assert (loaded.add, loaded.pop) == (module.add_auxiliary_output_to_pp_tensors, module.pop_auxiliary_output_from_pp_tensors)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("missing_file.py", "implementation file 'missing_file.py' does not exist"),
        ("no.such.module", "cannot import implementation module 'no.such.module': ModuleNotFoundError: No module named 'no'"),
        (str(IMPLS / "raises_on_import.py"), f"importing {str(IMPLS / 'raises_on_import.py')!r} failed: ImportError: this implementation needs a GPU runtime"),
        (str(IMPLS / "bad_prefix.py"), f"implementation {str(IMPLS / 'bad_prefix.py')!r} has _OUTPUT_PREFIX=''; expected a non-empty str"),
        (str(IMPLS / "__init__.py"), f"implementation {str(IMPLS / '__init__.py')!r} lacks " + ", ".join(impl.REQUIRED_NAMES)),
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


def test_current_implementation_outside_pytest_reads_the_environment(monkeypatch):
    monkeypatch.setattr(plugin, "_current", None)
    monkeypatch.setenv("PPAUX_IMPL", "tests.impls.unstripped_names")
    assert current_implementation().name == "tests.impls.unstripped_names"


@pytest.mark.parametrize("prefix", ["", None, 3])
def test_transport_refuses_an_empty_or_non_str_prefix(prefix):
    with pytest.raises(ValueError) as info:
        transport.PPAuxTransport(prefix)
    assert str(info.value) == f"the reserved prefix must be a non-empty str, not {prefix!r}"


def test_fixture_is_the_implementation_under_test(ppaux_impl):
    assert ppaux_impl is current_implementation()


def test_profiles_register_under_their_names(monkeypatch):
    from hypothesis import settings

    from ppaux.profiles import PROFILES, register

    # Only the profile in use stays (Hypothesis looks it up on every registration).
    current = settings._current_profile
    monkeypatch.setattr(settings, "_profiles", {k: v for k, v in settings._profiles.items() if k not in PROFILES or k == current})
    register()
    assert {name: settings.get_profile(name) for name in PROFILES} == PROFILES
