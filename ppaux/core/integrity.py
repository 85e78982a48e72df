"""Integrity mode: add writes a manifest of the aux tensors, pop verifies it before the observer runs.

Off by default and built on top of :class:`ppaux.transport.PPAuxTransport`, whose behaviour it
does not change: the manifest is one more entry of the PP dict, under its own reserved key
(which does not start with the aux prefix, so a plain pop ignores it). It is not a tensor, so
it travels in the pickled metadata list and is never sliced by the all-gather rule. It lists,
per aux tensor, the name, dtype, shape and a CRC32 of the bytes, plus an optional batch id;
every way the wire can alter an aux output becomes a documented error (I1..I7).
"""

from __future__ import annotations

import zlib
from collections.abc import MutableMapping
from typing import Any

import torch

from ppaux.core.errors import AuxiliaryPPError
from ppaux.core.tensors import tensor_bytes
from ppaux.core.transport import SGLANG_TRANSPORT, PPAuxTransport

MANIFEST_KEY = "__sampling_observer_integrity__"

Entry = tuple[str, str, tuple[int, ...], int | None]


def checksum(tensor: torch.Tensor) -> int | None:
    """CRC32 of the tensor's bytes in row-major order; ``None`` for ``meta`` (no data)."""
    if tensor.device.type == "meta":
        return None
    data = tensor_bytes(tensor).numpy()
    return zlib.crc32(data.data)


def describe(name: str, tensor: torch.Tensor) -> Entry:
    return (name, str(tensor.dtype), tuple(tensor.shape), checksum(tensor))


class IntegrityTransport:
    """add/pop with a manifest; ``base`` does the actual add/pop (SGLang's prefix by default)."""

    def __init__(self, base: PPAuxTransport = SGLANG_TRANSPORT, manifest_key: str = MANIFEST_KEY) -> None:
        if manifest_key.startswith(base.prefix):
            raise ValueError(f"manifest_key={manifest_key!r} must not start with the aux prefix {base.prefix!r}")
        self.base = base
        self.prefix = base.prefix
        self.manifest_key = manifest_key

    def _aux_keys(self, tensors: MutableMapping[Any, Any]) -> list[str]:
        return [k for k in tensors if isinstance(k, str) and k.startswith(self.prefix)]

    def add(self, tensors: MutableMapping[Any, Any], output: object, *, batch: object = None) -> None:
        """The base add, then the manifest (or I1 and the dict exactly as before)."""
        before = set(self._aux_keys(tensors))
        self.base.add(tensors, output)
        added = [k for k in self._aux_keys(tensors) if k not in before]
        if not added:
            return
        for key in added:
            if not tensors[key].is_contiguous():
                for k in added:  # add only appended these keys: removing them restores the dict
                    del tensors[k]
                raise AuxiliaryPPError("I1", key[len(self.prefix) :])
        manifest = tuple(describe(k[len(self.prefix) :], tensors[k]) for k in added)
        tensors[self.manifest_key] = {"batch": batch, "tensors": manifest}

    def verify(self, tensors: MutableMapping[Any, Any], *, batch: object = None) -> bool:
        """Raise the first I-error the received dict shows; whether it carries a manifest."""
        received: dict[str, object] = {k[len(self.prefix) :]: tensors[k] for k in self._aux_keys(tensors)}
        manifest = tensors.get(self.manifest_key)
        if manifest is None:
            if received:
                raise AuxiliaryPPError("I2")
            return False
        if manifest["batch"] != batch:
            raise AuxiliaryPPError("I7", manifest["batch"])
        listed = [entry[0] for entry in manifest["tensors"]]
        for name in listed:
            if name not in received:
                raise AuxiliaryPPError("I3", name)
        for name in received:
            if name not in listed:
                raise AuxiliaryPPError("I4", name)
        for name, dtype, shape, crc in manifest["tensors"]:
            got = received[name]
            if not torch.is_tensor(got):
                continue  # the base pop's P3 names this one
            if str(got.dtype) != dtype or tuple(got.shape) != shape:
                raise AuxiliaryPPError("I5", name)
            if crc is not None and checksum(got) != crc:
                raise AuxiliaryPPError("I6", name)
        return True

    def pop(self, tensors: MutableMapping[Any, Any], observer: object, *, batch: object = None) -> Any:
        """Verify, then the base pop, then drop the manifest; all or nothing."""
        has_manifest = self.verify(tensors, batch=batch)
        output = self.base.pop(tensors, observer)
        if has_manifest:
            del tensors[self.manifest_key]
        return output


INTEGRITY_TRANSPORT = IntegrityTransport()
