"""Loading the implementation under test: ppaux's own, a module name, or a file path."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import ppaux.core.transport as reference_module
from ppaux.core.transport import PPAuxTransport
from ppaux.isolation import Guard
from ppaux.testing.scenario import CallRecorder

DEFAULT_IMPL = "ppaux.transport"
# The names of ppaux's reference: the drop-in module and the module that defines it.
REFERENCE_NAMES = (DEFAULT_IMPL, reference_module.__name__)
REQUIRED_NAMES = (
    "_OUTPUT_PREFIX",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "add_auxiliary_output_to_pp_tensors",
    "pop_auxiliary_output_from_pp_tensors",
)


# Said with every missing name: what to provide, and where the contract says it.
PROVIDES = (
    f'an implementation provides {", ".join(REQUIRED_NAMES)} (docs/contract.md, "What an implementation provides")'
)


class ImplementationError(Exception):
    """The implementation named by the user cannot be used; the message is one line for them."""


@dataclass(frozen=True)
class Implementation:
    """add/pop and the reserved prefix of the implementation under test.

    ``transport`` is set for ppaux's reference, whose prefix can be changed with
    :meth:`with_prefix`; another implementation keeps its module's ``_OUTPUT_PREFIX``.
    """

    name: str
    prefix: str
    # object: what the implementation under test returns (the contract says None: add.1 checks it).
    add: Callable[[Any, Any], object] = field(repr=False)
    pop: Callable[[Any, Any], Any] = field(repr=False)
    transport: PPAuxTransport | None = field(default=None, repr=False)
    guard: Guard | None = field(default=None, repr=False)

    @property
    def is_reference(self) -> bool:
        return self.transport is not None

    def with_prefix(self, prefix: str) -> Implementation:
        if self.transport is None:
            return self
        bound = reference(prefix)
        return bound if self.guard is None else bound.guarded(self.guard)

    def guarded(self, guard: Guard) -> Implementation:
        """The same add and pop, each call under ``guard``'s limit (a hang or crash is a finding)."""
        if self.guard is not None:
            return self
        return replace(
            self,
            add=functools.partial(guard.call, "add", self.add),
            pop=functools.partial(guard.call, "pop", self.pop),
            guard=guard,
        )

    def recorded(self, recorder: CallRecorder) -> Implementation:
        """The same add and pop, each call kept by ``recorder`` (for regression tests)."""
        return replace(self, add=recorder.wrap("add", self.add), pop=recorder.wrap("pop", self.pop))

    def __repr__(self) -> str:
        return f"<{self.name} prefix={self.prefix!r}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis pretty-prints dataclasses field by field; one short line reads better in a counterexample.
        printer.text(repr(self))


def reference(prefix: str | None = None) -> Implementation:
    """ppaux's own transport; with SGLang's prefix through its SGLang-named functions, so those are what the
    suite tests."""
    module = reference_module
    if prefix is not None:
        t = PPAuxTransport(prefix)
        return Implementation("ppaux", prefix, t.add, t.pop, t)
    return Implementation(
        "ppaux",
        module._OUTPUT_PREFIX,
        module.add_auxiliary_output_to_pp_tensors,
        module.pop_auxiliary_output_from_pp_tensors,
        module.SGLANG_TRANSPORT,
    )


def _import_file(path: Path) -> ModuleType:
    mod_name = f"_ppaux_impl_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImplementationError(f"cannot load {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_name]
        raise ImplementationError(f"importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _import_name(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise ImplementationError(f"cannot import implementation module {name!r}: {type(exc).__name__}: {exc}") from exc


def load(spec: str | None = None) -> Implementation:
    """The implementation named by ``spec`` (module name or ``.py`` path); ppaux's own when empty."""
    if not spec or spec in REFERENCE_NAMES:
        return reference()
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ImplementationError(f"implementation file {spec!r} does not exist")
        module = _import_file(path)
    else:
        module = _import_name(spec)
    missing = [n for n in REQUIRED_NAMES if not hasattr(module, n)]
    if missing:
        raise ImplementationError(f"implementation {spec!r} lacks {', '.join(missing)}; {PROVIDES}")
    prefix = module._OUTPUT_PREFIX
    if not isinstance(prefix, str) or not prefix:
        raise ImplementationError(f"implementation {spec!r} has _OUTPUT_PREFIX={prefix!r}; expected a non-empty str")
    return Implementation(
        spec, prefix, module.add_auxiliary_output_to_pp_tensors, module.pop_auxiliary_output_from_pp_tensors
    )
