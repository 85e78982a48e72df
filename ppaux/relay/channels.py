"""Channels the PP dict travels on: an in-process loopback and a real gloo process group.

Both have ``send(tensor, group)`` / ``recv(tensor, group)`` with ``group`` ``"cpu"`` or
``"device"``. The loopback behaves like gloo where the suite depends on it: it refuses
non-contiguous tensors with gloo's message, it moves raw bytes (so a dtype change of the same
byte size is reinterpreted, not rejected), a shorter message silently fills only the start of
the receiving tensor, and a longer one is an error (gloo aborts the receiving process). Where
gloo would block forever the loopback raises :class:`ChannelHang`.
Neither moves anything for a meta tensor: torch.distributed, which SGLang's relay calls, doesn't.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from typing import Protocol

import torch

from ppaux.core.tensors import tensor_bytes
from ppaux.relay.wire import CPU_GROUP, DEVICE_GROUP, Work

# Seconds a loopback receive or all-gather waits at most. Only a last resort: a world of
# threads notices a receive that can never complete (see Stall) and gives up at once.
LAST_RESORT_TIMEOUT = 30.0

# gloo's own text (ProcessGroupGloo), so that loopback and gloo fail alike.
GLOO_NOT_CONTIGUOUS = "input tensor has to be contiguous"
SIZE_MISMATCH = "Received data size doesn't match expected size"


class ProcessGroup(Protocol):
    """What the gloo channels use of a gloo process group (torch's ``ProcessGroupGloo``, whose stubs
    type it as a ``Backend`` without these methods)."""

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int, /) -> Work: ...  # pragma: no cover

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int, /) -> Work: ...  # pragma: no cover

    def allgather(
        self, output_tensors: list[list[torch.Tensor]], input_tensors: list[torch.Tensor], /
    ) -> Work: ...  # pragma: no cover


class StageKilled(RuntimeError):
    """A stage died mid-send (the loopback's stand-in for a killed process)."""


class ChannelHang(RuntimeError):
    """A receive that would block forever: nothing was sent that it can match."""


class WireSizeMismatch(RuntimeError):
    """The bytes that arrived do not fit the tensor the receiver allocated (gloo aborts here)."""


def _as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().reshape(-1).view(torch.uint8)


class Stall:
    """Shared by the threads of one in-process world: lets a receive tell "still coming" from "never".

    A receive gives up (``ChannelHang``) as soon as a peer has failed, or when every live
    thread is waiting and every queue they wait on is empty (nobody can ever send again),
    instead of sleeping out a timeout; ``timeout`` stays as the last resort.
    """

    def __init__(self, alive: int) -> None:
        self.lock = threading.Lock()
        # Threads that may still send: one per rank, plus each rank's background receiver.
        self.alive = alive
        self.waiters: dict[int, queue.Queue[torch.Tensor] | None] = {}
        self.failed = threading.Event()

    @contextlib.contextmanager
    def waiting(self, on: queue.Queue[torch.Tensor] | None = None) -> Iterator[None]:
        """This thread waits on ``on`` (``None``: on another thread of its own rank)."""
        me = threading.get_ident()
        with self.lock:
            self.waiters[me] = on
        try:
            yield
        finally:
            with self.lock:
                del self.waiters[me]

    def stuck(self) -> bool:
        with self.lock:
            if self.failed.is_set():
                return True
            return len(self.waiters) >= self.alive and all(q is None or q.empty() for q in self.waiters.values())


def mailbox() -> dict[str, queue.Queue[torch.Tensor]]:
    """One direction of an in-process link: a queue per process group, as gloo has a group each."""
    return {CPU_GROUP: queue.Queue(), DEVICE_GROUP: queue.Queue()}


class LoopbackChannel:
    """One end of an in-process link: sends go to ``outbox``, receives read ``inbox``.

    ``LoopbackChannel()`` alone is a link to itself (send, then receive the same dict).
    Without ``stall`` the sender has already run, so an empty inbox is a hang; with one (a
    world of threads, see :func:`ppaux.relay.pipeline.run_loopback`) a receive waits while a peer
    could still send, at most ``timeout`` seconds.
    """

    def __init__(
        self,
        outbox: dict[str, queue.Queue[torch.Tensor]] | None = None,
        inbox: dict[str, queue.Queue[torch.Tensor]] | None = None,
        *,
        stall: Stall | None = None,
        timeout: float = LAST_RESORT_TIMEOUT,
    ) -> None:
        self.outbox = outbox if outbox is not None else mailbox()
        self.inbox = inbox if inbox is not None else self.outbox
        self.stall = stall
        self.timeout = timeout

    def send(self, tensor: torch.Tensor, group: str) -> None:
        if tensor.is_meta:
            return  # as torch.distributed: its meta kernels move nothing
        if not tensor.is_contiguous():
            raise RuntimeError(GLOO_NOT_CONTIGUOUS)
        # A copy: gloo sends bytes, so later writes to the sender's tensor do not travel.
        self.outbox[group].put(tensor_bytes(tensor))

    def _take(self, group: str) -> torch.Tensor:
        inbox = self.inbox[group]
        if self.stall is None:
            try:
                return inbox.get_nowait()
            except queue.Empty:
                raise ChannelHang(f"nothing to receive on the {group} group: a real channel would block here") from None
        stall = self.stall
        with stall.waiting(inbox):
            return _wait_for(inbox, stall, self.timeout, group)

    def recv(self, tensor: torch.Tensor, group: str) -> None:
        if tensor.is_meta:
            return  # as torch.distributed: a receive into a meta tensor completes at once, receiving nothing
        data = self._take(group)
        expected = tensor.numel() * tensor.element_size()
        if data.numel() > expected:
            raise WireSizeMismatch(f"{SIZE_MISMATCH}: {data.numel()} vs {expected} bytes")
        # gloo accepts a shorter message and leaves the rest of the buffer as it was (the
        # receiver's uninitialised memory); zeros here, so that the model is deterministic.
        target = _as_bytes(tensor)
        target[data.numel() :] = 0
        target[: data.numel()].copy_(data.to(tensor.device))

    def pending(self) -> int:
        """Messages sent and not yet received (a lost or extra message shows here)."""
        return sum(q.qsize() for q in self.outbox.values())


def _wait_for(inbox: queue.Queue[torch.Tensor], stall: Stall, timeout: float, group: str) -> torch.Tensor:
    deadline = time.monotonic() + timeout
    idle = 0
    while True:
        try:
            return inbox.get(timeout=0.002)
        except queue.Empty:
            # Twice in a row: a sender between its put and its own wait is not stuck.
            idle = idle + 1 if stall.stuck() else 0
            if idle >= 2 or time.monotonic() > deadline:
                raise ChannelHang(
                    f"nothing will arrive on the {group} group: every peer is waiting or has failed"
                ) from None


class ThreadAllGather:
    """An all-gather group of ``size`` ranks running as threads of this process.

    A rank that fails aborts the barrier (``abort()``), so its peers stop waiting at once.
    """

    def __init__(self, size: int, *, timeout: float = LAST_RESORT_TIMEOUT) -> None:
        self.size = size
        self._barrier = threading.Barrier(size, timeout=timeout)
        self._slots: list[torch.Tensor | None] = [None] * size

    def member(self, rank: int) -> _Member:
        return _Member(self, rank)

    def abort(self) -> None:
        self._barrier.abort()


class _Member:
    def __init__(self, group: ThreadAllGather, rank: int) -> None:
        self.group = group
        self.size = group.size
        self.rank = rank

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        g = self.group
        g._slots[self.rank] = tensor.clone()
        g._barrier.wait()
        # Every slot is filled: the barrier lets no rank read before all have written.
        out = torch.cat(g._slots)  # type: ignore[arg-type]
        # Everyone must have read the slots before any rank's next gather overwrites them.
        g._barrier.wait()
        return out


class _NothingSent:
    """The work of a send that moves nothing: already done."""

    def wait(self) -> bool:
        return True


NOTHING_SENT = _NothingSent()


class GlooChannel:
    """One end of a gloo link to ``peer``: ``cpu`` and ``device`` are gloo process groups.

    Calls the process groups directly (``pg.send([t], peer, tag)``), which is what
    ``torch.distributed.send(t, dst, group=pg)`` does underneath; so the same code runs in
    worker processes and, for coverage, in threads of one process. Like torch.distributed, whose
    meta kernels return at once, it moves nothing for a meta tensor.
    """

    def __init__(self, cpu: ProcessGroup, device: ProcessGroup, peer: int) -> None:
        self.groups = {CPU_GROUP: cpu, DEVICE_GROUP: device}
        self.peer = peer

    def send(self, tensor: torch.Tensor, group: str) -> None:
        if not tensor.is_meta:
            self.groups[group].send([tensor], self.peer, 0).wait()

    def isend(self, tensor: torch.Tensor, group: str) -> Work:
        if tensor.is_meta:
            return NOTHING_SENT
        return self.groups[group].send([tensor], self.peer, 0)

    def recv(self, tensor: torch.Tensor, group: str) -> None:
        if not tensor.is_meta:
            self.groups[group].recv([tensor], self.peer, 0).wait()


class GlooAllGather:
    """An all-gather group backed by a gloo process group (concatenates along dim 0)."""

    def __init__(self, pg: ProcessGroup, rank: int, size: int) -> None:
        self.pg = pg
        self.rank = rank
        self.size = size

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        outs = [torch.empty_like(tensor) for _ in range(self.size)]
        # gloo has no complex types: torch.distributed.all_gather gathers their real views, and so
        # does SGLang's all-gather (the views write into the complex outputs).
        self.pg.allgather([[_real_view(o) for o in outs]], [_real_view(tensor.contiguous())]).wait()
        return torch.cat(outs)


def _real_view(tensor: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(tensor) if tensor.is_complex() else tensor
