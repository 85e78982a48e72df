"""SGLang's own wire code, loaded from its release: ``send_tensor_dict``, ``recv_tensor_dict``,
``send_object``, ``recv_object``, ``_split_tensor_dict``, ``TensorMetadata`` and ``P2PWork``, taken
from the wheel's ``sglang/srt/distributed/parallel_state.py`` without importing the rest of SGLang.

The wheel is downloaded once (``pip download --no-deps sglang==VERSION``) into the cache
(``$PPAUX_CACHE_DIR``, default ``~/.cache/ppaux``) and never committed. The definitions are cut
out of the source with :mod:`ast`; a release in which one is missing or has another shape fails
with a message that names the version and the definition. The methods run on a minimal
``GroupCoordinator`` over real gloo process groups, and every call they make to
``torch.distributed`` goes through a :class:`Boundary`, which records it (and, for the fault
matrix, may change it).
"""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
import types
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

import ppaux.relay.gloo as gloo
from ppaux.relay.faults import Fault, Reorder
from ppaux.relay.wire import MetadataList, TensorDict, TensorMetadata

DEFAULT_VERSION = "0.5.23"
# The PP auxiliary transport exists from 0.5.19 on.
RELEASES = ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
WIRE_FILE = "sglang/srt/distributed/parallel_state.py"
MODULE_LEVEL = ("TensorMetadata", "P2PWork", "_split_tensor_dict")
METHODS = ("send_object", "recv_object", "send_tensor_dict", "recv_tensor_dict")
# What the cut-out definitions need besides torch, which the coordinator's Boundary stands in for.
HEADER = """\
from __future__ import annotations

import pickle
from collections import namedtuple
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union
"""


class ReleaseUnavailable(RuntimeError):
    """The release cannot be had here (no package index, no cached wheel)."""


class ReleaseChanged(RuntimeError):
    """The release's wire code does not have the shape ppaux reads."""


def cache_dir() -> Path:
    return Path(os.environ.get("PPAUX_CACHE_DIR", Path.home() / ".cache" / "ppaux"))


def wheel(version: str) -> Path:
    """The release's wheel, from the cache or downloaded into it."""
    folder = cache_dir() / f"sglang-{version}"
    found = sorted(folder.glob(f"sglang-{version}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "--retries",
            "1",
            "--timeout",
            "15",
            f"sglang=={version}",
            "-d",
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    found = sorted(folder.glob(f"sglang-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReleaseUnavailable(f"sglang=={version} could not be downloaded (offline, or no such release?): {why}")
    return found[0]


def _definition(tree: ast.Module, name: str, version: str) -> ast.stmt:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return node
    raise ReleaseChanged(f"sglang=={version}: {WIRE_FILE} no longer defines {name} at module level")


def wire_source(version: str = DEFAULT_VERSION) -> str:
    """The release's wire definitions as one module's source (the methods as plain functions)."""
    with zipfile.ZipFile(wheel(version)) as zf:
        try:
            text = zf.read(WIRE_FILE).decode("utf-8")
        except KeyError:
            raise ReleaseChanged(f"sglang=={version}: the wheel has no {WIRE_FILE}") from None
    tree = ast.parse(text)
    lines = text.splitlines()

    # A definition's own lines, decorators included (P2PWork is a @dataclass; without it,
    # P2PWork(work, payload) fails on every async send).
    def segment(node: ast.stmt) -> list[str]:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return lines[first - 1 : node.end_lineno]

    parts = ["\n".join(segment(_definition(tree, name, version))) for name in MODULE_LEVEL]
    coordinator = _definition(tree, "GroupCoordinator", version)
    if not isinstance(coordinator, ast.ClassDef):  # an alias or a function has no methods to cut out
        raise ReleaseChanged(f"sglang=={version}: GroupCoordinator is no longer a class in {WIRE_FILE}")
    methods = {node.name: node for node in coordinator.body if isinstance(node, ast.FunctionDef)}
    for name in METHODS:
        if name not in methods:
            raise ReleaseChanged(f"sglang=={version}: GroupCoordinator.{name} is gone from {WIRE_FILE}")
        args = [a.arg for a in methods[name].args.args]
        if args[:1] != ["self"]:
            raise ReleaseChanged(f"sglang=={version}: GroupCoordinator.{name} is no longer a method ({args})")
        # The method dedented to module level: `self` stays its first argument.
        method = segment(methods[name])
        indent = len(method[0]) - len(method[0].lstrip())
        parts.append("\n".join(line[indent:] for line in method))
    return HEADER + "\n\n" + "\n\n\n".join(str(p) for p in parts) + "\n"


class _TorchWithBoundary(types.ModuleType):
    """``torch`` as the cut-out code sees it: the real one, but ``torch.distributed`` is the Boundary."""

    def __init__(self, boundary: Boundary) -> None:
        super().__init__("torch")
        self.distributed = boundary

    def __getattr__(self, name: str) -> Any:  # torch's own attribute, whatever it is
        return getattr(torch, name)


def load_wire(source: str, name: str, boundary: Boundary) -> types.ModuleType:
    """Run the cut-out source as module ``name`` (registered, so that its TensorMetadata pickles)."""
    module = types.ModuleType(name)
    module.__dict__["torch"] = _TorchWithBoundary(boundary)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    for definition in (*MODULE_LEVEL, *METHODS):
        if definition not in module.__dict__:  # pragma: no cover - wire_source checked each one
            raise ReleaseChanged(f"{name}: {definition} did not load")
    return module


class Boundary:
    """``torch.distributed`` for SGLang's wire code: every point-to-point call and all-gather is
    recorded as ``(op, group, peer, tensor)`` (the tensor itself, read once the call completed)
    and may be changed on the way by ``fault`` (``fault(op, tensor, group) -> tensor or None``)."""

    def __init__(self, groups: dict[int, str]) -> None:
        self.groups = groups
        self.messages: list[tuple[str, str, int, torch.Tensor]] = []
        self.fault: Callable[[str, torch.Tensor, str], torch.Tensor | None] | None = None

    def __getattr__(self, name: str) -> Any:  # torch.distributed's own attribute, whatever it is
        return getattr(dist, name)

    def _group(self, group: dist.ProcessGroup | None) -> str:
        return self.groups.get(id(group), "other")

    def _outgoing(self, tensor: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor | None:
        return tensor if self.fault is None else self.fault("send", tensor, self._group(group))

    def send(self, tensor: torch.Tensor, dst: int, group: dist.ProcessGroup | None = None, tag: int = 0) -> None:
        self.messages.append(("send", self._group(group), dst, tensor))
        out = self._outgoing(tensor, group)
        if out is not None:
            dist.send(out, dst, group=group, tag=tag)

    def isend(
        self, tensor: torch.Tensor, dst: int, group: dist.ProcessGroup | None = None, tag: int = 0
    ) -> dist.Work | None:
        self.messages.append(("send", self._group(group), dst, tensor))
        out = self._outgoing(tensor, group)
        return None if out is None else dist.isend(out, dst, group=group, tag=tag)

    def irecv(
        self, tensor: torch.Tensor, src: int, group: dist.ProcessGroup | None = None, tag: int = 0
    ) -> dist.Work | None:
        self.messages.append(("recv", self._group(group), src, tensor))
        return dist.irecv(tensor, src, group=group, tag=tag)

    def all_gather(
        self, outputs: list[torch.Tensor], tensor: torch.Tensor, group: dist.ProcessGroup | None = None
    ) -> None:
        self.messages.append(("all_gather", self._group(group), -1, tensor))
        dist.all_gather(outputs, tensor, group=group)


class Coordinator:
    """The part of SGLang's ``GroupCoordinator`` its wire methods use: the group's global ranks,
    this rank's place in it, its CPU and device process groups. ``all_gather`` is ppaux's (one
    gloo all-gather, concatenated on ``dim``): SGLang's goes through its device communicators."""

    def __init__(
        self,
        wire: types.ModuleType,
        boundary: Boundary,
        ranks: Sequence[int],
        rank: int,
        cpu_group: dist.ProcessGroup,
        device_group: dist.ProcessGroup,
    ) -> None:
        self.wire = wire
        self.boundary = boundary
        self.ranks = list(ranks)
        self.world_size = len(self.ranks)
        self.rank_in_group = self.ranks.index(rank)
        self.cpu_group = cpu_group
        self.device_group = device_group

    def send_object(self, obj: object, dst: int, async_send: bool = False, tag: int = 0) -> object:
        return self.wire.send_object(self, obj, dst, async_send, tag)

    def recv_object(self, src: int, tag: int = 0) -> Any:  # whatever the peer pickled
        return self.wire.recv_object(self, src, tag)

    def send_tensor_dict(
        self,
        tensor_dict: TensorDict,
        dst: int | None = None,
        all_gather_group: Coordinator | None = None,
        async_send: bool = False,
    ) -> object:
        return self.wire.send_tensor_dict(self, tensor_dict, dst, all_gather_group, async_send)

    def recv_tensor_dict(self, src: int | None = None, all_gather_group: Coordinator | None = None) -> TensorDict:
        received: TensorDict = self.wire.recv_tensor_dict(self, src, all_gather_group)  # SGLang's untyped wire code
        return received

    def all_gather(self, tensor: torch.Tensor, dim: int = 0) -> torch.Tensor:
        outputs = [torch.empty_like(tensor) for _ in range(self.world_size)]
        self.boundary.all_gather(outputs, tensor, group=self.device_group)
        return torch.cat(outputs, dim=dim)


class SGLangRank:
    """One rank's SGLang side: its PP group (this rank and the same attention-TP rank of every
    stage) and its attention-TP group (``None`` without all-gather)."""

    def __init__(self, pp: Coordinator, tp: Coordinator | None, boundary: Boundary, wire: types.ModuleType) -> None:
        self.pp = pp
        self.tp = tp
        self.boundary = boundary
        self.wire = wire


def join(ctx: Any, version: str, source: str) -> None:  # pragma: no cover - runs in gloo workers (test_wire_diff.py)
    """Set up SGLang's side on one gloo rank (a :class:`~ppaux.relay.gloo.GlooWorld` extension):
    join the default process group, make SGLang's PP and attention-TP groups, load the wire code."""
    # SGLang's send_object hands torch.frombuffer the pickle's bytes, and torch warns each time.
    warnings.filterwarnings("ignore", message="The given buffer is not writable")
    if not dist.is_initialized():
        dist.init_process_group(
            "gloo",
            store=dist.PrefixStore("sglang", ctx.store),  # type: ignore[attr-defined]  # not in torch's stubs
            rank=ctx.rank,
            world_size=ctx.world_size,
        )
    ag, stages = ctx.ag_size, ctx.world_size // ctx.ag_size
    groups: dict[int, str] = {}
    boundary = Boundary(groups)
    wire = load_wire(source, f"ppaux_sglang_wire_{version.replace('.', '_')}", boundary)
    stage, member = divmod(ctx.rank, ag)

    def coordinator(rank_sets: list[list[int]], mine: int, cpu_label: str, device_label: str) -> Coordinator:
        # new_group is collective: every rank makes every group, in the same order, and keeps its own.
        own = None
        for i, ranks in enumerate(rank_sets):
            cpu, device = dist.new_group(ranks, backend="gloo"), dist.new_group(ranks, backend="gloo")
            if i == mine:
                groups.update({id(cpu): cpu_label, id(device): device_label})
                own = Coordinator(wire, boundary, ranks, ctx.rank, cpu, device)
        assert own is not None
        return own

    # PP: the same attention-TP member of every stage; attention TP: the members of one stage.
    pp = coordinator([[s * ag + m for s in range(stages)] for m in range(ag)], member, "cpu", "device")
    tp = (
        coordinator([[s * ag + i for i in range(ag)] for s in range(stages)], stage, "tp cpu", "tp") if ag > 1 else None
    )
    ctx.sglang = SGLangRank(pp, tp, boundary, wire)


def metadata_of(payload: torch.Tensor) -> object:
    """What a pickled metadata list says, with either side's ``TensorMetadata`` as a plain tuple."""

    def plain(value: Any) -> object:  # Any: either side's TensorMetadata, told by its class name
        if type(value).__name__ == "TensorMetadata":
            return ("TensorMetadata", value.device, str(value.dtype), tuple(value.size))
        if isinstance(value, (list, tuple)):
            return type(value)(plain(v) for v in value)
        return value

    return plain(pickle.loads(payload.numpy().tobytes()))


class Link:
    """A rank's hops of the PP ring over SGLang's own send_tensor_dict / recv_tensor_dict.

    A faulty send runs SGLang's code with every message it makes held at the Boundary; the held
    messages are then changed as the fault changes a dict on ppaux's model of the wire
    (:meth:`ppaux.relay.faults.Fault.mangle`, the metadata read back from the pickle) and sent
    through torch.distributed: the fault acts at the call boundary under SGLang's functions.
    """

    def __init__(self, rank: SGLangRank, prev: int, nxt: int) -> None:
        self.rank = rank
        self.prev = prev
        self.nxt = nxt
        self.held: list[tuple[torch.Tensor, str]] = []

    def recv(self) -> TensorDict:
        return self.rank.pp.recv_tensor_dict(src=self.prev, all_gather_group=self.rank.tp)

    def _send(self, d: TensorDict) -> None:
        self.rank.pp.send_tensor_dict(d, dst=self.nxt, all_gather_group=self.rank.tp)

    def _held_send(self, d: TensorDict) -> list[tuple[torch.Tensor, str]]:
        """SGLang's messages for ``d``, made and held back."""
        messages: list[tuple[torch.Tensor, str]] = []
        self.rank.boundary.fault = lambda op, tensor, group: messages.append((tensor, group))
        try:
            self._send(d)
        finally:
            self.rank.boundary.fault = None
        return messages

    def _emit(self, messages: list[tuple[torch.Tensor, str]]) -> None:
        groups = {"cpu": self.rank.pp.cpu_group, "device": self.rank.pp.device_group}
        for tensor, group in messages:
            dist.send(tensor, self.rank.pp.ranks[self.nxt], group=groups[group])

    def send(
        self,
        d: TensorDict,
        fault: Fault | None = None,
        faulty: bool = False,
        state: dict[str, TensorDict] | None = None,
    ) -> None:
        if not faulty or fault is None:  # no fault is a clean send, as on the model's link
            self._send(d)
            if self.held:  # a message held back by reorder goes after this one
                self._emit(self.held)
                self.held = []
            return
        messages = self._held_send(d)
        if isinstance(fault, Reorder):
            self.held = messages
            return
        metadata, tensors = _read_back(messages)
        fault.mangle(_Emitter(self), metadata, tensors, None)


def _read_back(messages: list[tuple[torch.Tensor, str]]) -> tuple[MetadataList, list[torch.Tensor]]:
    """(metadata list, tensor list) as ppaux's wire splits a dict, from SGLang's messages: the
    pickle's TensorMetadata as ppaux's, and the empty tensors SGLang never sends as placeholders."""
    payload = messages[1][0]
    metadata = [
        (k, TensorMetadata(*v) if type(v).__name__ == "TensorMetadata" else v)
        for k, v in pickle.loads(payload.numpy().tobytes())
    ]
    sent = iter(t for t, _ in messages[2:])
    tensors = [
        torch.empty(v.size, dtype=v.dtype) if torch.Size(v.size).numel() == 0 else next(sent)
        for _, v in metadata
        if isinstance(v, TensorMetadata)
    ]
    return metadata, tensors


class _Emitter:
    """A channel for :meth:`Fault.mangle` that sends through torch.distributed to the link's next
    stage, the pickled metadata with SGLang's own TensorMetadata again."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.sent = 0

    def send(self, tensor: torch.Tensor, group: str) -> None:
        self.sent += 1
        if self.sent == 1:
            return  # the metadata's size: sent with the metadata, once that is pickled again
        if self.sent == 2:
            wire = self.link.rank.wire
            obj = [
                (k, wire.TensorMetadata(*v) if isinstance(v, TensorMetadata) else v)
                for k, v in pickle.loads(tensor.numpy().tobytes())
            ]
            payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
            self.link._emit([(torch.tensor([payload.numel()]), "cpu"), (payload, "cpu")])
            return
        self.link._emit([(tensor, group)])


def _send_one(ctx: Any, tensor_dict: TensorDict) -> None:  # pragma: no cover - runs in a gloo worker process
    ctx.sglang.pp.send_tensor_dict(tensor_dict, dst=0)


def _recv_one(ctx: gloo.RankContext) -> TensorDict:  # pragma: no cover - runs in a gloo worker process
    return ctx.sglang.pp.recv_tensor_dict(src=1)  # type: ignore[attr-defined, no-any-return]  # set by join


def relay(tensor_dict: TensorDict, *, version: str = DEFAULT_VERSION) -> TensorDict:
    """One hop rank 1 -> rank 0 with SGLang's own send_tensor_dict / recv_tensor_dict; what rank 0 received.
    The receiver allocates as SGLang does, on its current device of each tensor's type."""
    w = gloo.world(2, extension=(join, (version, wire_source(version))))
    outcomes = w.run({0: (_recv_one, ()), 1: (_send_one, (tensor_dict,))})
    gloo.raise_failure(outcomes)
    received: TensorDict = outcomes[0].value  # what _recv_one returned: the dict
    return received
