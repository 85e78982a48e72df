"""The reference PP auxiliary transport: ``add`` on the last stage, ``pop`` on the first.

A drop-in for ``sglang.srt.sampling.sampling_observer_pp``: the module-level names are
SGLang's, bound to a :class:`PPAuxTransport` with SGLang's prefix. Unlike SGLang it is
all-or-nothing on every error and ignores non-``str`` keys (see the contract).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol, runtime_checkable

import torch

from ppaux.core.errors import AuxiliaryPPError

_OUTPUT_PREFIX = "__sampling_observer_output__."


@runtime_checkable
class PipelineParallelAuxiliaryOutput(Protocol):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]: ...  # pragma: no cover


@runtime_checkable
class PipelineParallelSamplingObserver(Protocol):
    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Any: ...  # pragma: no cover


class PPAuxTransport:
    """add/pop for one reserved key prefix.

    The prefix is a parameter so that the suite can show every property holds for any
    prefix, including the hazard of an ordinary key that happens to start with it.
    """

    def __init__(self, prefix: str = _OUTPUT_PREFIX) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"the reserved prefix must be a non-empty str, not {prefix!r}")
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"PPAuxTransport(prefix={self.prefix!r})"

    def add(self, tensors: MutableMapping[Any, Any], output: object) -> None:
        """Put ``output.to_pp_tensors()`` into ``tensors`` under reserved keys, or raise and leave it as it was."""
        if output is None:
            return
        if not isinstance(output, PipelineParallelAuxiliaryOutput):
            raise AuxiliaryPPError("A1")
        payload = output.to_pp_tensors()
        if not payload:
            raise AuxiliaryPPError("A2")
        # Validate every item before writing any: a half-written dict would be relayed.
        staged: dict[str, torch.Tensor] = {}
        for name, tensor in payload.items():
            if not isinstance(name, str) or not name:
                raise AuxiliaryPPError("A3")
            if not torch.is_tensor(tensor):
                raise AuxiliaryPPError("A4", name)
            key = self.prefix + name
            if key in tensors or key in staged:
                raise AuxiliaryPPError("A5", name)
            staged[key] = tensor
        tensors.update(staged)

    def pop(self, tensors: MutableMapping[Any, Any], observer: object) -> Any:
        """Take every reserved key out of ``tensors`` and return what ``observer`` rebuilds from them."""
        aux_keys: list[str] = [key for key in tensors if isinstance(key, str) and key.startswith(self.prefix)]
        if not aux_keys:
            return None
        if observer is None:
            raise AuxiliaryPPError("P1")
        if not isinstance(observer, PipelineParallelSamplingObserver):
            raise AuxiliaryPPError("P2")
        received = {key[len(self.prefix) :]: tensors[key] for key in aux_keys}
        if not all(torch.is_tensor(value) for value in received.values()):
            raise AuxiliaryPPError("P3")
        output = observer.from_pp_tensors(received)
        if output is None:
            raise AuxiliaryPPError("P4")
        # Delete by our own key list: the observer may have changed the dict it was given.
        for key in aux_keys:
            del tensors[key]
        return output


SGLANG_TRANSPORT = PPAuxTransport(_OUTPUT_PREFIX)


def add_auxiliary_output_to_pp_tensors(tensors: MutableMapping[Any, Any], output: object) -> None:
    SGLANG_TRANSPORT.add(tensors, output)


def pop_auxiliary_output_from_pp_tensors(tensors: MutableMapping[Any, Any], observer: object) -> Any:
    return SGLANG_TRANSPORT.pop(tensors, observer)


add = add_auxiliary_output_to_pp_tensors
pop = pop_auxiliary_output_from_pp_tensors
