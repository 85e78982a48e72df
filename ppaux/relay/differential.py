"""SGLang's own wire code against ppaux's model of it, on the same gloo ranks.

The last PP stage sends a PP dict to the first, and every stage forwards what it received to the
next, until the dict is back at the last stage: once with ppaux's ``send_tensor_dict`` /
``recv_tensor_dict`` (:mod:`ppaux.relay.wire`), once with SGLang's (:mod:`ppaux.relay.sglang`).
Every stage may have several attention-TP ranks, which slice and all-gather as SGLang does.
The two runs must deliver the same dicts (keys, order, dtypes, shapes, values, device type) on
every rank, after the same messages (the same calls, groups, peers, dtypes and shapes; a pickled
metadata list compared by what it says). :func:`difference` says where they part.
"""

from __future__ import annotations

from typing import Any, TypeAlias, cast

import hypothesis
import torch
from hypothesis import given
from hypothesis import strategies as st
from ppaux_strategies import CONTIGUOUS_VIEWS, tensors, transport_dicts
from ppaux_strategies.tensors import tensors_equal

import ppaux.relay.gloo as gloo
import ppaux.relay.sglang as sglang
from ppaux.core.tensors import tensor_bytes
from ppaux.relay.gloo import Outcome
from ppaux.relay.wire import AllGatherGroup, Channel, TensorDict, recv_tensor_dict, send_tensor_dict

SIDES = ("ppaux", "sglang")
Record = tuple[str, str, int, torch.Tensor]
# A side's messages: Records, each call's begun by a ("begin", op) marker; SGLang's is the Boundary's own list.
Log: TypeAlias = list[Any]


class RecordingChannel:
    """A model channel that records each message as the Boundary records SGLang's."""

    def __init__(self, channel: Channel, peer: int, log: Log) -> None:
        self.channel = channel
        self.peer = peer
        self.log = log

    def send(self, tensor: torch.Tensor, group: str) -> None:
        self.log.append(("send", group, self.peer, tensor))
        self.channel.send(tensor, group)

    def recv(self, tensor: torch.Tensor, group: str) -> None:
        self.log.append(("recv", group, self.peer, tensor))
        self.channel.recv(tensor, group)


class RecordingAllGather:
    def __init__(self, group: AllGatherGroup, log: Log) -> None:
        self.group = group
        self.size = group.size
        self.rank = group.rank
        self.log = log

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        self.log.append(("all_gather", "tp", -1, tensor))
        return self.group.all_gather(tensor)


def normalize(log: Log) -> list[tuple[object, ...]]:
    """Messages as the two sides can share them: each call's first two messages are a pickled
    object (its size, then its bytes), compared by what the object says; every other message by
    its call, group, peer, dtype and shape."""
    out: list[tuple[object, ...]] = []
    pending = 0
    for entry in log:
        if entry[0] == "begin":
            out.append(entry)
            pending = 2
            continue
        op, group, peer, tensor = entry
        if pending == 2:
            out.append((op, group, peer, "object size"))
        elif pending == 1:
            out.append((op, group, peer, "object", sglang.metadata_of(tensor)))
        else:
            out.append((op, group, peer, str(tensor.dtype), tuple(tensor.shape)))
        pending = max(pending - 1, 0)
    return out


def ring(ctx: gloo.RankContext, sent: TensorDict, side: str) -> dict[str, object]:
    """One rank's part of the ring on ``side``; what it received and the messages it exchanged."""
    ag = ctx.ag_size
    stages = ctx.world_size // ag
    stage, member = divmod(ctx.rank, ag)
    if side == "ppaux":
        log: Log = []
        nxt, prev = ((stage + 1) % stages) * ag + member, ((stage - 1) % stages) * ag + member
        to_next, from_prev = (
            RecordingChannel(ctx.channel(nxt), nxt, log),
            RecordingChannel(ctx.channel(prev), prev, log),
        )
        gather = RecordingAllGather(ctx.all_gather, log) if ctx.all_gather is not None else None

        def send(d: TensorDict) -> None:
            log.append(("begin", "send"))
            send_tensor_dict(to_next, d, all_gather_group=gather)

        def recv() -> TensorDict:
            log.append(("begin", "recv"))
            return recv_tensor_dict(from_prev, all_gather_group=gather)
    else:  # pragma: no cover - SGLang's side runs in gloo worker processes (tests/test_wire_diff.py, -m sglang)
        s: sglang.SGLangRank = ctx.sglang  # type: ignore[attr-defined]  # set by sglang.join, the world's extension
        log = cast(Log, s.boundary.messages)  # its records, and this ring's ("begin", op) markers
        log.clear()

        def send(d: TensorDict) -> None:
            log.append(("begin", "send"))
            s.pp.send_tensor_dict(d, dst=(stage + 1) % stages, all_gather_group=s.tp)

        def recv() -> TensorDict:
            log.append(("begin", "recv"))
            return s.pp.recv_tensor_dict(src=(stage - 1) % stages, all_gather_group=s.tp)

    if stage == stages - 1:
        send(sent)
        got = recv()
    else:
        got = recv()
        send(got)
    return {"received": got, "messages": normalize(log)}


def world(stages: int, ag: int, version: str, source: str) -> gloo.GlooWorld:
    """The shared world that runs both sides: ppaux's channels and SGLang's groups on every rank."""
    return gloo.world(stages * ag, ag_size=ag, extension=(sglang.join, (version, source)))


def run(w: gloo.GlooWorld, sent: list[TensorDict], *, timeout: float = 5.0) -> dict[str, dict[int, Outcome]]:
    """Both sides' outcomes on every rank; ``sent[member]`` is what the last stage's member sends."""
    ag = w.ag_size
    last = (w.world_size // ag - 1) * ag
    out = {}
    for side in SIDES:
        calls = {rank: (ring, (sent[rank - last] if rank >= last else {}, side)) for rank in range(w.world_size)}
        out[side] = w.run(calls, timeout=timeout)
    return out


def _value_difference(path: str, a: Any, b: Any) -> str | None:
    if torch.is_tensor(a) or torch.is_tensor(b):
        if not (torch.is_tensor(a) and torch.is_tensor(b)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        if a.device.type != b.device.type:
            return f"{path}: device {a.device.type} vs {b.device.type}"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: {a.dtype} {tuple(a.shape)} vs {b.dtype} {tuple(b.shape)}"
        return None if tensors_equal(a, b) else f"{path}: values {a.tolist()} vs {b.tolist()}"
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def difference(outcomes: dict[str, dict[int, Outcome]]) -> str | None:
    """Where ppaux's model and SGLang's code part, rank by rank; ``None`` where they agree."""
    model, real = outcomes["ppaux"], outcomes["sglang"]
    for rank in sorted(model):
        a, b = model[rank], real[rank]
        if a.status != b.status:
            return f"rank {rank}: ppaux's model {_said(a)}, SGLang's code {_said(b)}"
        if a.status == "error" and str(a.error).splitlines()[:1] != str(b.error).splitlines()[:1]:
            return f"rank {rank}: ppaux's model {_said(a)}, SGLang's code {_said(b)}"
        if a.status != "ok":
            continue
        ga, gb = a.value["received"], b.value["received"]
        if list(ga) != list(gb):
            return f"rank {rank} received keys {list(ga)!r} from ppaux's model, {list(gb)!r} from SGLang's code"
        for key in ga:
            found = _value_difference(f"rank {rank} received [{key!r}]", ga[key], gb[key])
            if found:
                return found + " (ppaux's model vs SGLang's code)"
        ma, mb = a.value["messages"], b.value["messages"]
        for i, (x, y) in enumerate(zip(ma, mb)):
            if x != y:
                return f"rank {rank}, message {i}: ppaux's model {x!r}, SGLang's code {y!r}"
        if len(ma) != len(mb):
            return f"rank {rank}: ppaux's model exchanged {len(ma)} messages, SGLang's code {len(mb)}"
    return None


def _said(o: Outcome) -> str:
    if o.status == "error":
        assert isinstance(o.error, gloo.RankFailure)  # a gloo world's error outcome: the rank's exception
        return f"raised {o.error.type_name}: {str(o.error).splitlines()[0] if str(o.error) else ''}"
    return {"ok": "delivered", "hang": "hung", "died": "died"}.get(o.status, o.status)


# (PP stages, attention-TP ranks per stage): tp=2 x pp=2 is four ranks.
CONFIGS = ((2, 1), (3, 1), (2, 2), (3, 2))


def _diverged(d: TensorDict, member: int) -> TensorDict:
    """What another attention-TP rank holds when its tensors differ from rank 0's: the same keys,
    dtypes and shapes, the last byte of every tensor changed (any dtype, bool included)."""

    def changed(t: torch.Tensor) -> torch.Tensor:
        raw = tensor_bytes(t)
        raw[-1] ^= member
        return raw.view(t.dtype).reshape(t.shape)

    return {k: changed(v) if torch.is_tensor(v) and v.numel() else v for k, v in d.items()}


def sent_dicts(draw: Any, ag: int) -> list[TensorDict]:
    """What each attention-TP rank of the last stage sends: one drawn PP dict (aux keys, empty and
    0-d tensors, every dtype, a size-1 dimension with any stride, str values), the same on every
    rank or, drawn too, different per rank (the all-gather rule mixes those, on both sides alike)."""
    d = draw(
        transport_dicts(tensors=tensors(views=CONTIGUOUS_VIEWS, device="cpu", max_dims=2, max_side=4), aux=True),
        label="sent",
    )
    diverge = ag > 1 and draw(st.booleans(), label="differs per attention-TP rank")
    return [d if m == 0 or not diverge else _diverged(d, m) for m in range(ag)]


def check(version: str, settings: hypothesis.settings, configs: tuple[tuple[int, int], ...] = CONFIGS) -> None:
    """Hypothesis over every configuration: raises AssertionError (with the minimal example and
    Hypothesis's notes) at the first configuration where the two sides part."""
    source = sglang.wire_source(version)
    for stages, ag in configs:
        w = world(stages, ag, version, source)

        # Runs within this iteration (given(...)() below), so the loop's w, stages and ag are this
        # configuration's; binding them as defaults would add parameters for Hypothesis to see.
        def wire_diff(data: st.DataObject) -> None:
            found = difference(run(w, sent_dicts(data.draw, ag)))  # noqa: B023 - runs within this iteration
            if found is not None:
                raise AssertionError(
                    f"sglang=={version} and ppaux's model differ "
                    f"(pp={stages}, attention-TP={ag}): {found}"  # runs within this iteration  # noqa: B023
                )

        # Named by its configuration: Hypothesis prints the name and keys its example database by it.
        wire_diff.__name__ = wire_diff.__qualname__ = f"wire_diff_sglang_{version.replace('.', '_')}_pp{stages}_tp{ag}"
        try:
            given(data=st.data())(settings(wire_diff))()
        finally:
            w.stop()
