"""An N-stage PP ring that relays the output dict the way SGLang's scheduler does.

Stage N-1 (the last) samples: it builds ``next_token_ids`` (and optional logprobs), adds its
observer's auxiliary output with ``add``, writes ``__msg_type__`` and sends the dict to stage 0.
Stage 0 (the first) pops the auxiliary output with its observer and forwards the dict to stage
1; middle stages forward it untouched; the ring closes at the last stage. Every stage may have
``ag_size`` ranks (an attention-TP group) that use SGLang's all-gather slicing rule.

The first stage's pop and its forward of the same dict object can be ordered three ways
(``order``): ``pop_then_forward`` (what SGLang 0.5.23's scheduler does: the pop runs when the
dict is received, the forward in the next scheduler iteration), ``forward_then_pop`` (aux keys
travel on to every later stage), and ``overlap`` (the pop runs while the forward is iterating
the dict, the worst case of a pop on another thread).

The ranks run over either channel: ``loopback`` (threads of this process) or ``gloo`` (worker
processes, :mod:`ppaux.relay.gloo`); the same rank function runs in both.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

import ppaux.relay.gloo as gloo
import ppaux.relay.sglang as sglang
from ppaux.core.errors import AuxiliaryPPError
from ppaux.core.integrity import IntegrityTransport
from ppaux.core.notes import add_note
from ppaux.core.transport import SGLANG_TRANSPORT, PipelineParallelSamplingObserver
from ppaux.relay.channels import (
    LAST_RESORT_TIMEOUT,
    ChannelHang,
    LoopbackChannel,
    StageKilled,
    Stall,
    ThreadAllGather,
    mailbox,
)
from ppaux.relay.faults import Fault
from ppaux.relay.gloo import Outcome
from ppaux.relay.hop import channel_kind
from ppaux.relay.wire import AllGatherGroup, Channel, TensorDict, recv_tensor_dict, send_tensor_dict

ORDERS = ("pop_then_forward", "forward_then_pop", "overlap")


@dataclass
class Stage:
    """One PP stage: the device its ranks receive onto and its sampling observer."""

    device: str = "cpu"
    observer: object = None


@dataclass
class PipelineConfig:
    """``stages[0]`` pops, ``stages[-1]`` samples; ``outputs[step]`` is the last stage's
    auxiliary output payload at that step (``{name: tensor}``, or ``None`` for no output)."""

    stages: Sequence[Stage]
    outputs: Sequence[Mapping[str, torch.Tensor] | None] = (None,)
    logprobs: bool = False
    batch_size: int = 2
    ag_size: int = 1
    order: str = "pop_then_forward"
    integrity: bool = False

    @property
    def steps(self) -> int:
        return len(self.outputs)


class AuxOutput:
    """The last stage's auxiliary output: a PP-capable wrapper around a payload."""

    def __init__(self, payload: Mapping[str, torch.Tensor]) -> None:
        self.payload = payload

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return self.payload


class Witness:
    """Wraps the first stage's observer to keep what it was handed (for the verdict)."""

    def __init__(self, observer: PipelineParallelSamplingObserver) -> None:
        self.observer = observer
        self.received: list[dict[str, torch.Tensor]] = []

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> object:
        self.received.append(dict(tensors))
        return self.observer.from_pp_tensors(tensors)


def check_wiring(config: PipelineConfig) -> None:
    """Reject, before any step, a ring whose first stage cannot take the last stage's output.

    Raises the catalog's P1 (first stage has no observer) or P2 (its observer is not
    PP-capable), with the catalog's fixes attached as notes; ``ValueError`` for a ring that is
    not a ring.
    """
    if len(config.stages) < 2:
        raise ValueError(f"a PP ring needs at least 2 stages, got {len(config.stages)}")
    if config.order not in ORDERS:
        raise ValueError(f"order={config.order!r} must be one of {ORDERS!r}")
    if config.ag_size < 1 or not config.outputs:
        raise ValueError("ag_size must be >= 1 and outputs must name at least one step")
    if all(out is None for out in config.outputs):
        return
    observer = config.stages[0].observer
    code = "P1" if observer is None else ("P2" if not isinstance(observer, PipelineParallelSamplingObserver) else None)
    if code is not None:
        err = AuxiliaryPPError(code)
        add_note(err, f"the last stage (stage {len(config.stages) - 1}) emits auxiliary output; stage 0 pops it")
        for fix in err.entry.fixes:
            add_note(err, f"fix: {fix}")
        raise err


@dataclass
class Plan:
    """What every rank needs for one run (pickled to gloo workers); ``wire`` is ``"model"``
    (ppaux's send/recv_tensor_dict) or ``"sglang"`` (SGLang's own, :mod:`ppaux.relay.sglang`)."""

    config: PipelineConfig
    fault: Fault | None = None
    fault_step: int = 0
    wire: str = "model"


@dataclass
class StageReport:
    stage: int
    member: int
    keys: list[list[object]] = field(default_factory=list)
    popped: list[object] = field(default_factory=list)
    received: list[dict[str, torch.Tensor] | None] = field(default_factory=list)
    final: list[TensorDict] = field(default_factory=list)


class _PopMidway(dict[str, torch.Tensor]):
    """The first stage's dict while a concurrent pop lands during the forward's iteration;
    ``popped`` is what that pop returned."""

    popped: object

    def __init__(self, data: TensorDict, pop: Callable[[TensorDict], object]) -> None:
        super().__init__(data)
        self._pop = pop

    def items(self) -> Iterator[tuple[str, torch.Tensor]]:  # type: ignore[override]
        # The dict is never empty here: the sampled entries always precede the aux ones.
        it = iter(dict.items(self))
        yield next(it)
        self.popped = self._pop(self)  # lands after the first entry: mid-iteration
        yield from it


def sample(step: int, config: PipelineConfig, device: str) -> dict[str, object]:
    """The last stage's output dict before add: what it sampled at ``step``."""
    # Computed on the CPU, then placed: arithmetic on `meta` first imports torch's compiler stack
    # (torch._dynamo, some 800 modules: a second in each process that relays on meta).
    ids = torch.arange(config.batch_size)
    d: dict[str, object] = {"next_token_ids": (ids + step).to(device)}
    if config.logprobs:
        # True division makes float32 logprobs of the int64 range.
        d["next_token_logprobs"] = (-ids / (step + 1)).to(device)
    return d


# The integrity manifest around SGLang's own add/pop (stateless, so one serves every rank).
_WITH_INTEGRITY = IntegrityTransport(SGLANG_TRANSPORT)


def _add(config: PipelineConfig, d: TensorDict, output: object, step: int) -> None:
    if config.integrity:
        _WITH_INTEGRITY.add(d, output, batch=step)
    else:
        SGLANG_TRANSPORT.add(d, output)


def _pop(config: PipelineConfig, d: TensorDict, observer: object, step: int) -> object:
    if config.integrity:
        return _WITH_INTEGRITY.pop(d, observer, batch=step)
    return SGLANG_TRANSPORT.pop(d, observer)


class Rank(Protocol):
    """A rank's view of its world: gloo's :class:`~ppaux.relay.gloo.RankContext` or a :class:`LoopbackContext`."""

    @property
    def rank(self) -> int: ...  # pragma: no cover

    @property
    def all_gather(self) -> AllGatherGroup | None: ...  # pragma: no cover

    def channel(self, peer: int) -> Channel: ...  # pragma: no cover


class Link(Protocol):
    """A rank's hops of the ring: :class:`_ModelLink`, or SGLang's own (:class:`ppaux.relay.sglang.Link`)."""

    def recv(self) -> TensorDict: ...  # pragma: no cover

    def send(
        self,
        d: TensorDict,
        fault: Fault | None = None,
        faulty: bool = False,
        state: dict[str, TensorDict] | None = None,
    ) -> None: ...  # pragma: no cover


class _ModelLink:
    """A rank's hops of the ring over ppaux's model of SGLang's wire."""

    def __init__(self, ctx: Rank, prev_rank: int, next_rank: int, device: str) -> None:
        self.to_next, self.from_prev = ctx.channel(next_rank), ctx.channel(prev_rank)
        self.gather = ctx.all_gather
        self.receive = functools.partial(recv_tensor_dict, device=device)

    def recv(self) -> TensorDict:
        return self.receive(self.from_prev, all_gather_group=self.gather)

    def send(
        self,
        d: TensorDict,
        fault: Fault | None = None,
        faulty: bool = False,
        state: dict[str, TensorDict] | None = None,
    ) -> None:
        if fault is None:
            send_tensor_dict(self.to_next, d, all_gather_group=self.gather)
        else:
            fault.send(self.to_next, d, all_gather_group=self.gather, faulty=faulty, state=state)


def run_rank(ctx: Rank, plan: Plan) -> StageReport:
    """One rank's part of a run; ``ctx`` gives ``rank``, ``channel(peer)`` and ``all_gather``
    (and ``sglang`` when the plan relays over SGLang's own wire code)."""
    config = plan.config
    stage, member = divmod(ctx.rank, config.ag_size)
    # Where this stage's tensors live and arrive.
    device = config.stages[stage].device
    link = _link(ctx, plan, stage, member, device)
    report = StageReport(stage, member)
    if stage == len(config.stages) - 1:
        _run_last_stage(plan, link, device, getattr(ctx, "stall", None), report)
    elif stage == 0:
        _run_first_stage(config, link, report)
    else:
        _run_middle_stage(config, link, report)
    return report


def _link(ctx: Rank, plan: Plan, stage: int, member: int, device: str) -> Link:
    """The rank's hops of the ring: to the same all-gather member of the next stage, from the previous one's."""
    stage_count, ag_size = len(plan.config.stages), plan.config.ag_size
    if plan.wire == "sglang":  # pragma: no cover - SGLang's side runs in gloo workers (test_wire_diff.py, -m sglang)
        # pragma: no mutate start - runs only in gloo workers under -m sglang (test_wire_diff.py): mutmut cannot map it
        return sglang.Link(ctx.sglang, (stage - 1) % stage_count, (stage + 1) % stage_count)  # type: ignore[attr-defined]
        # pragma: no mutate end
    prev_rank = ((stage - 1) % stage_count) * ag_size + member
    next_rank = ((stage + 1) % stage_count) * ag_size + member
    return _ModelLink(ctx, prev_rank, next_rank, device)


def _run_last_stage(plan: Plan, link: Link, device: str, stall: Stall | None, report: StageReport) -> None:
    """Every step: sample, add the auxiliary output, send to stage 0; then take the ring's returns."""
    config = plan.config
    # Receive the ring's returns while sending: with two stages, a last stage that sent
    # every step before receiving would deadlock against the first stage's forwards
    # (SGLang breaks the same cycle by ordering send/recv by rank parity).
    returns = _Receiver(link.recv, config.steps, stall)
    fault_state: dict[str, TensorDict] = {}
    for step, payload in enumerate(config.outputs):
        faulty = plan.fault is not None and step == plan.fault_step
        d = _last_stage_output(config, step, payload, device, plan.fault if faulty else None, report.member)
        link.send(d, plan.fault, faulty, fault_state)
    for returned in returns.results():
        report.keys.append(list(returned))
        report.final.append(returned)


def _last_stage_output(
    config: PipelineConfig,
    step: int,
    payload: Mapping[str, torch.Tensor] | None,
    device: str,
    fault: Fault | None,
    member: int,
) -> TensorDict:
    """The dict the last stage's all-gather ``member`` sends at ``step``: what it sampled, its
    auxiliary output added (``payload`` spoilt by ``fault`` first, unless that is ``None``) and
    ``__msg_type__``."""
    d = sample(step, config, device)
    output = None
    if payload is not None:
        payload = {name: tensor.to(device) for name, tensor in payload.items()}
        if fault is not None:
            payload = fault.payload(payload, member)
        output = AuxOutput(payload)
    _add(config, d, output, step)
    d["__msg_type__"] = "output"
    return d


def _run_first_stage(config: PipelineConfig, link: Link, report: StageReport) -> None:
    """Every step: receive from the last stage, pop the auxiliary output with this stage's
    observer and forward the dict to stage 1, in ``config.order``."""
    observer = config.stages[0].observer
    observer = Witness(observer) if isinstance(observer, PipelineParallelSamplingObserver) else observer
    handed = observer.received if isinstance(observer, Witness) else []
    for step in range(config.steps):
        d = link.recv()
        report.keys.append(list(d))
        already_handed = len(handed)
        forwarded, popped = _pop_and_forward(config, link, d, observer, step)
        report.popped.append(popped)
        report.received.append(handed[-1] if len(handed) > already_handed else None)
        report.final.append(dict(forwarded))


def _pop_and_forward(
    config: PipelineConfig, link: Link, d: TensorDict, observer: object, step: int
) -> tuple[TensorDict, object]:
    """The first stage's pop of ``d`` and its forward of the same dict, ordered as ``config.order``
    says; the dict as forwarded, and what pop returned."""
    if config.order == "pop_then_forward":
        popped = _pop(config, d, observer, step)
        link.send(d)
        return d, popped
    if config.order == "forward_then_pop":
        link.send(d)
        return d, _pop(config, d, observer, step)
    midway = _PopMidway(d, functools.partial(_pop, config, observer=observer, step=step))
    link.send(midway)
    return midway, midway.popped


def _run_middle_stage(config: PipelineConfig, link: Link, report: StageReport) -> None:
    """Every step: forward what arrives, untouched."""
    for _ in range(config.steps):
        d = link.recv()
        report.keys.append(list(d))
        link.send(d)
        report.final.append(d)


class _Receiver:
    """``count`` calls of ``recv`` on a thread of their own; :meth:`results` re-raises its error."""

    def __init__(self, recv: Callable[[], TensorDict], count: int, stall: Stall | None) -> None:
        self.values: list[TensorDict] = []
        self.error: BaseException | None = None
        self.stall = stall
        if stall is not None:
            with stall.lock:
                stall.alive += 1
        self.thread = threading.Thread(target=self._run, args=(recv, count), daemon=True)
        self.thread.start()

    def _run(self, recv: Callable[[], TensorDict], count: int) -> None:
        try:
            for _ in range(count):
                self.values.append(recv())
        except BaseException as exc:  # handed to the rank's own thread
            self.error = exc
        if self.stall is not None:
            with self.stall.lock:
                self.stall.alive -= 1

    def results(self) -> list[TensorDict]:
        # Joining is waiting too: the rank can do nothing more until its receiver is done.
        with self.stall.waiting() if self.stall is not None else contextlib.nullcontext():
            self.thread.join()
        if self.error is not None:
            raise self.error
        return self.values


class LoopbackContext:
    """A rank of an in-process world: loopback channels to every peer, threads for ranks."""

    def __init__(
        self,
        rank: int,
        links: dict[tuple[int, int], dict[str, queue.Queue[torch.Tensor]]],
        all_gather: AllGatherGroup | None,
        stall: Stall,
        timeout: float,
        *,
        world_size: int = 0,
        ag_size: int = 1,
    ) -> None:
        self.rank = rank
        self.world_size = world_size
        self.ag_size = ag_size
        self.links = links
        self.all_gather = all_gather
        self.stall = stall
        self.timeout = timeout

    def channel(self, peer: int) -> LoopbackChannel:
        return LoopbackChannel(
            self.links[(self.rank, peer)], self.links[(peer, self.rank)], stall=self.stall, timeout=self.timeout
        )


def run_loopback(
    world_size: int,
    ag_size: int,
    fn: Callable[..., object],
    args: tuple[object, ...],
    *,
    timeout: float = LAST_RESORT_TIMEOUT,
) -> dict[int, Outcome]:
    """Run ``fn(ctx, *args)`` on every rank, each in a thread of this process.

    A rank stuck for good (every thread waiting, nothing in flight, or a peer failed) is
    reported as ``hang`` without waiting out ``timeout``.
    """
    links = {(a, b): mailbox() for a in range(world_size) for b in range(world_size)}
    groups = [ThreadAllGather(ag_size, timeout=timeout) for _ in range(world_size // ag_size)]
    stall = Stall(alive=world_size)
    out: dict[int, Outcome] = {}

    def target(rank: int) -> None:
        gather = groups[rank // ag_size].member(rank % ag_size) if ag_size > 1 else None
        ctx = LoopbackContext(rank, links, gather, stall, timeout, world_size=world_size, ag_size=ag_size)
        try:
            out[rank] = Outcome("ok", value=fn(ctx, *args))
        except (ChannelHang, threading.BrokenBarrierError):
            out[rank] = Outcome("hang")
        except StageKilled:
            out[rank] = Outcome("died")
        except Exception as exc:
            out[rank] = Outcome("error", error=exc)
        if out[rank].status != "ok":
            stall.failed.set()
            for g in groups:
                g.abort()
        with stall.lock:
            stall.alive -= 1

    # Joined below, so they need not be daemons: a rank stuck for good is reported, not waited for.
    threads = [threading.Thread(target=target, args=(rank,)) for rank in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def run(
    config: PipelineConfig,
    *,
    channel: str = "loopback",
    fault: Fault | None = None,
    fault_step: int = 0,
    timeout: float | None = None,
    sglang_version: str = sglang.DEFAULT_VERSION,
) -> dict[int, Outcome]:
    """Check the wiring, then run every step of ``config`` over ``channel``; each rank's outcome.

    ``channel`` is ``loopback`` (threads, ppaux's model), ``gloo`` (processes, ppaux's model) or
    ``sglang`` (processes, SGLang ``sglang_version``'s own wire code). A rank's value is its
    :class:`StageReport`. The gloo world for this shape is shared and long-lived (see
    :func:`ppaux.relay.gloo.world`).
    """
    check_wiring(config)
    kind = channel_kind(channel)
    world_size = len(config.stages) * config.ag_size
    plan = Plan(config, fault, fault_step, kind.wire)
    if kind.in_process:
        # Each rank gets its own copy, as each gloo worker unpickles its own.
        return run_loopback(
            world_size, config.ag_size, _run_copy, (plan,), **({} if timeout is None else {"timeout": timeout})
        )
    extension = (sglang.join, (sglang_version, sglang.wire_source(sglang_version))) if kind.wire == "sglang" else None
    w = gloo.world(world_size, ag_size=config.ag_size, extension=extension)
    return w.run({rank: (run_rank, (plan,)) for rank in range(world_size)}, timeout=timeout)


def _run_copy(ctx: Rank, plan: Plan) -> StageReport:
    return run_rank(ctx, copy.deepcopy(plan))
