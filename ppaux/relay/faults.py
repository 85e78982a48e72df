"""Named faults on the output relay (last stage -> first stage) and the verdict at the popping stage.

Each fault is a small picklable object with two hooks the pipeline calls on the sending stage:
``payload(payload, member)`` before ``add`` (faults of the plugin's tensors: non-contiguous,
rank-divergent) and ``send(channel, tensor_dict, ...)`` instead of ``send_tensor_dict`` (faults
of the wire: keys, bytes, metadata, message order, the process itself). A fault acts at the
step it is aimed at (``faulty``) and sends later steps cleanly.

:func:`classify` turns the ranks' outcomes into one of :data:`OUTCOMES`, judged at the popping
stage: a documented error from the catalog anywhere, another exception (or a dead stage), a hang
stopped by the watchdog, a silent corruption (pop succeeded but the observer was handed
something other than what was sent, or nothing), or harmless.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

import ppaux.relay.gloo as gloo
from ppaux.core.errors import CATALOG
from ppaux.core.tensors import tensor_bytes
from ppaux.core.transport import _OUTPUT_PREFIX
from ppaux.isolation import describe_exitcode
from ppaux.relay.channels import StageKilled
from ppaux.relay.wire import (
    AllGatherGroup,
    MetadataList,
    SendChannel,
    TensorDict,
    TensorMetadata,
    send_object,
    send_split,
    send_tensor_dict,
    split_tensor_dict,
)

OUTCOMES = ("documented error", "other exception", "hang stopped by the watchdog", "silent corruption", "harmless")

# A dtype with the same item size, so that the bytes still fit and are silently reinterpreted.
SAME_SIZE_DTYPES = {
    1: (torch.int8, torch.uint8),
    2: (torch.int16, torch.float16),
    4: (torch.int32, torch.float32),
    8: (torch.int64, torch.float64),
}


def _default_target(keys: Iterable[Hashable]) -> Hashable | None:
    return next((k for k in keys if isinstance(k, str) and k.startswith(_OUTPUT_PREFIX)), None)


@dataclass(frozen=True)
class Fault:
    """No fault: the relay as SGLang does it. ``key`` targets one key (default: the first aux key)."""

    name: ClassVar[str] = "none"
    doc: ClassVar[str] = "no fault"
    key: Hashable | None = None

    def target(self, keys: Iterable[Hashable]) -> Hashable | None:
        if self.key is not None:
            return self.key if self.key in list(keys) else None
        return _default_target(keys)

    def payload(self, payload: dict[str, torch.Tensor], member: int) -> dict[str, torch.Tensor]:
        return payload

    def _change_target(
        self, payload: dict[str, torch.Tensor], change: Callable[[torch.Tensor], torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``payload`` with ``change`` applied to the one aux tensor this fault targets."""
        name = self.target([_OUTPUT_PREFIX + n for n in payload])
        return {n: change(t) if _OUTPUT_PREFIX + n == name else t for n, t in payload.items()}

    def send(
        self,
        channel: SendChannel,
        tensor_dict: TensorDict,
        *,
        all_gather_group: AllGatherGroup | None = None,
        faulty: bool = True,
        state: dict[str, TensorDict] | None = None,
    ) -> None:
        """Send ``tensor_dict``; ``faulty`` steps get the fault. ``state`` lives across one
        run's steps (a fault that holds a message back keeps it there)."""
        if not faulty:
            send_tensor_dict(channel, tensor_dict, all_gather_group=all_gather_group)
            return
        metadata, tensors = split_tensor_dict(tensor_dict)
        self.mangle(channel, metadata, tensors, all_gather_group)

    def mangle(
        self, channel: SendChannel, metadata: MetadataList, tensors: list[torch.Tensor], group: AllGatherGroup | None
    ) -> None:
        send_split(channel, metadata, tensors, all_gather_group=group)


def _tensor_index(metadata: MetadataList, key: Hashable) -> int:
    """Position of ``key``'s tensor in the tensor list (-1 if it is not a tensor)."""
    index = 0
    for k, value in metadata:
        if isinstance(value, TensorMetadata):
            if k == key:
                return index
            index += 1
    return -1


class _OnTarget(Fault):
    """A fault that rewrites the metadata entry and tensor of its target key."""

    def mangle(
        self, channel: SendChannel, metadata: MetadataList, tensors: list[torch.Tensor], group: AllGatherGroup | None
    ) -> None:
        key = self.target([k for k, _ in metadata])
        if key is not None:
            pos = next(i for i, (k, _) in enumerate(metadata) if k == key)
            self.rewrite(metadata, tensors, pos, _tensor_index(metadata, key))
        send_split(channel, metadata, tensors, all_gather_group=group)

    def rewrite(self, metadata: MetadataList, tensors: list[torch.Tensor], pos: int, index: int) -> None:
        raise NotImplementedError  # pragma: no cover - every subclass overrides


@dataclass(frozen=True)
class DropKey(_OnTarget):
    name: ClassVar[str] = "drop_key"
    doc: ClassVar[str] = "the key and its tensor are not sent"

    def rewrite(self, metadata: MetadataList, tensors: list[torch.Tensor], pos: int, index: int) -> None:
        del metadata[pos]
        if index >= 0:
            del tensors[index]


@dataclass(frozen=True)
class DuplicateKey(_OnTarget):
    name: ClassVar[str] = "duplicate_key"
    doc: ClassVar[str] = "the key's entry and tensor are sent twice"

    def rewrite(self, metadata: MetadataList, tensors: list[torch.Tensor], pos: int, index: int) -> None:
        metadata.insert(pos + 1, metadata[pos])
        if index >= 0:
            tensors.insert(index + 1, tensors[index])


@dataclass(frozen=True)
class RenameKey(_OnTarget):
    name: ClassVar[str] = "rename_key"
    doc: ClassVar[str] = "the key arrives under another name (suffix '~')"

    def rewrite(self, metadata: MetadataList, tensors: list[torch.Tensor], pos: int, index: int) -> None:
        key, value = metadata[pos]
        metadata[pos] = (f"{key}~", value)


@dataclass(frozen=True)
class _TensorFault(_OnTarget):
    def rewrite(self, metadata: MetadataList, tensors: list[torch.Tensor], pos: int, index: int) -> None:
        if index >= 0 and tensors[index].numel() > 0 and tensors[index].device.type != "meta":
            key, meta = metadata[pos]
            # A tensor's entry (index >= 0) holds its TensorMetadata.
            metadata[pos], tensors[index] = self.change(key, meta, tensors[index])  # type: ignore[arg-type]

    def change(
        self, key: Hashable, meta: TensorMetadata, tensor: torch.Tensor
    ) -> tuple[tuple[Hashable, object], torch.Tensor]:
        raise NotImplementedError  # pragma: no cover - every subclass overrides


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor_bytes(tensor)


@dataclass(frozen=True)
class BitFlip(_TensorFault):
    name: ClassVar[str] = "bit_flip"
    doc: ClassVar[str] = "one bit of the tensor's bytes flips on the wire"
    bit: int = 0

    def change(
        self, key: Hashable, meta: TensorMetadata, tensor: torch.Tensor
    ) -> tuple[tuple[Hashable, object], torch.Tensor]:
        data = _bytes(tensor)
        i = (self.bit // 8) % data.numel()
        data[i] ^= 1 << (self.bit % 8)
        return (key, meta), data.view(tensor.dtype).reshape(tensor.shape)


@dataclass(frozen=True)
class Truncate(_TensorFault):
    name: ClassVar[str] = "truncate"
    doc: ClassVar[str] = "the tensor's bytes arrive one byte short"

    def change(
        self, key: Hashable, meta: TensorMetadata, tensor: torch.Tensor
    ) -> tuple[tuple[Hashable, object], torch.Tensor]:
        return (key, meta), _bytes(tensor)[:-1]


@dataclass(frozen=True)
class ChangeDtype(_TensorFault):
    name: ClassVar[str] = "change_dtype"
    doc: ClassVar[str] = "the metadata names another dtype of the same item size"

    def change(
        self, key: Hashable, meta: TensorMetadata, tensor: torch.Tensor
    ) -> tuple[tuple[Hashable, object], torch.Tensor]:
        options = [d for d in SAME_SIZE_DTYPES.get(tensor.element_size(), ()) if d != tensor.dtype]
        if options:
            return (key, TensorMetadata(meta.device, options[0], meta.size)), tensor
        # complex128 has no other 16-byte dtype: the same bytes as twice as many int64.
        return (key, TensorMetadata(meta.device, torch.int64, torch.Size([tensor.numel() * 2]))), tensor


@dataclass(frozen=True)
class ChangeShape(_TensorFault):
    name: ClassVar[str] = "change_shape"
    doc: ClassVar[str] = "the metadata names another shape with the same number of elements"

    def change(
        self, key: Hashable, meta: TensorMetadata, tensor: torch.Tensor
    ) -> tuple[tuple[Hashable, object], torch.Tensor]:
        size = torch.Size([tensor.numel()]) if tensor.dim() != 1 else torch.Size([1, tensor.numel()])
        return (key, TensorMetadata(meta.device, meta.dtype, size)), tensor


@dataclass(frozen=True)
class MoveDevice(_OnTarget):
    name: ClassVar[str] = "move_device"
    doc: ClassVar[str] = "the metadata places the tensor on another device type (default 'meta')"
    device: str = "meta"

    def rewrite(self, metadata: MetadataList, tensors: list[torch.Tensor], pos: int, index: int) -> None:
        key, meta = metadata[pos]
        if index >= 0:  # a tensor's entry: its TensorMetadata
            metadata[pos] = (key, TensorMetadata(self.device, meta.dtype, meta.size))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Reorder(Fault):
    name: ClassVar[str] = "reorder"
    doc: ClassVar[str] = "this step's message is sent after the next step's"

    def send(
        self,
        channel: SendChannel,
        tensor_dict: TensorDict,
        *,
        all_gather_group: AllGatherGroup | None = None,
        faulty: bool = True,
        state: dict[str, TensorDict] | None = None,
    ) -> None:
        state = state if state is not None else {}
        if faulty:
            state["held"] = dict(tensor_dict)
            return
        send_tensor_dict(channel, tensor_dict, all_gather_group=all_gather_group)
        held = state.pop("held", None)
        if held is not None:
            send_tensor_dict(channel, held, all_gather_group=all_gather_group)


@dataclass(frozen=True)
class LoseMessage(Fault):
    name: ClassVar[str] = "lose_message"
    doc: ClassVar[str] = "this step's message is never sent"

    def mangle(
        self, channel: SendChannel, metadata: MetadataList, tensors: list[torch.Tensor], group: AllGatherGroup | None
    ) -> None:
        return None


@dataclass(frozen=True)
class Delay(Fault):
    name: ClassVar[str] = "delay"
    doc: ClassVar[str] = "the message is sent late"
    seconds: float = 0.05

    def mangle(
        self, channel: SendChannel, metadata: MetadataList, tensors: list[torch.Tensor], group: AllGatherGroup | None
    ) -> None:
        time.sleep(self.seconds)
        send_split(channel, metadata, tensors, all_gather_group=group)


def non_contiguous(tensor: torch.Tensor) -> torch.Tensor:
    """Same values, a strided view (non-contiguous whenever it has more than one element)."""
    return torch.stack([tensor, tensor], dim=-1)[..., 0]


@dataclass(frozen=True)
class NonContiguous(Fault):
    name: ClassVar[str] = "non_contiguous"
    doc: ClassVar[str] = "the observer's aux tensor is a non-contiguous view (same values)"

    def payload(self, payload: dict[str, torch.Tensor], member: int) -> dict[str, torch.Tensor]:
        return self._change_target(payload, non_contiguous)


@dataclass(frozen=True)
class Diverge(Fault):
    name: ClassVar[str] = "diverge"
    doc: ClassVar[str] = "the aux tensor differs across the ranks of the all-gather group"

    def payload(self, payload: dict[str, torch.Tensor], member: int) -> dict[str, torch.Tensor]:
        def differ(t: torch.Tensor) -> torch.Tensor:
            bump = torch.full_like(t, member % 2 == 1) if t.dtype == torch.bool else torch.full_like(t, member)
            return t ^ bump if t.dtype == torch.bool else t + bump

        return self._change_target(payload, differ)


@dataclass(frozen=True)
class KillMidSend(Fault):
    name: ClassVar[str] = "kill_mid_send"
    doc: ClassVar[str] = "the sending stage's process dies after the metadata, before the tensors"

    def mangle(
        self, channel: SendChannel, metadata: MetadataList, tensors: list[torch.Tensor], group: AllGatherGroup | None
    ) -> None:
        send_object(channel, metadata)
        if gloo.IN_WORKER:  # pragma: no cover - runs only in a gloo worker process
            # pragma: no mutate start - runs only in a gloo worker process, which mutmut's test map cannot see
            os._exit(17)
            # pragma: no mutate end
        raise StageKilled("the sending stage died mid-send")


FAULTS: dict[str, type[Fault]] = {
    cls.name: cls
    for cls in (
        DropKey,
        DuplicateKey,
        RenameKey,
        BitFlip,
        Truncate,
        ChangeDtype,
        ChangeShape,
        MoveDevice,
        Reorder,
        LoseMessage,
        Delay,
        NonContiguous,
        Diverge,
        KillMidSend,
    )
}


@dataclass
class Verdict:
    outcome: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"outcome": self.outcome, "detail": self.detail}


def _documented_code(err: BaseException) -> str | None:
    code = getattr(err, "code", None)
    if code in CATALOG and CATALOG[code].matches(str(err)):
        return code  # type: ignore[no-any-return]  # a key of CATALOG: a str
    return None


def _same(sent: Mapping[str, torch.Tensor], got: Mapping[str, torch.Tensor] | None, device: str) -> str | None:
    """Why ``got`` is not what was sent (names, dtype, shape, bits, receiver's device), or None."""
    if got is None:
        return "the output was lost: pop returned None"
    if sorted(got) != sorted(sent):
        return f"names {sorted(got)!r} arrived for {sorted(sent)!r}"
    for name, want in sent.items():
        have = got[name]
        if have.dtype != want.dtype or have.shape != want.shape:
            return f"{name!r} arrived as {have.dtype} {tuple(have.shape)}, sent {want.dtype} {tuple(want.shape)}"
        if have.device.type != torch.device(device).type:
            return f"{name!r} arrived on {have.device}, not on the receiver's {device}"
        if not torch.equal(tensor_bytes(want), tensor_bytes(have)):
            return f"{name!r} arrived with other values"
    return None


def classify(outcomes: Mapping[int, gloo.Outcome], config: Any) -> Verdict:  # config: a pipeline.PipelineConfig
    """The verdict of one run at the popping stage (see the module docstring)."""
    ranked = sorted(outcomes.items())
    errors = [(rank, o.error) for rank, o in ranked if o.status == "error"]
    for _rank, err in errors:
        code = _documented_code(err)  # type: ignore[arg-type]  # an error outcome has its error
        if code is not None:
            return Verdict(OUTCOMES[0], f"{code}: {err}")
    for rank, err in errors:
        kind = getattr(err, "type_name", type(err).__name__)
        return Verdict(OUTCOMES[1], f"rank {rank}: {kind}: {str(err).splitlines()[0] if str(err) else ''}")
    for rank, o in ranked:
        if o.status == "died":
            return Verdict(
                OUTCOMES[1], f"rank {rank} died" + ("" if o.exitcode is None else f": {describe_exitcode(o.exitcode)}")
            )
    for rank, o in ranked:
        if o.status == "hang":
            return Verdict(OUTCOMES[2], f"rank {rank} never received what it waited for")
    for member in range(config.ag_size):
        report = outcomes[member].value
        for step, payload in enumerate(config.outputs):
            if payload is None:
                continue
            got = report.received[step] if report.popped[step] is not None else None
            why = _same(payload, got, config.stages[0].device)
            if why is not None:
                return Verdict(OUTCOMES[3], f"step {step}, first-stage rank {member}: {why}")
    return Verdict(OUTCOMES[4], "the observer received what was sent")
