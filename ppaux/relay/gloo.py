"""Real ``torch.distributed`` gloo ranks: long-lived worker processes on 127.0.0.1.

A :class:`GlooWorld` starts ``world_size`` processes (forkserver, torch preloaded, so a
restart costs well under a second), each holding a CPU and a "device" gloo process group
(both gloo on CPU-only machines, as in SGLang without accelerators) and optional all-gather
groups, rendezvous through a :class:`torch.distributed.FileStore` in a fresh temporary
directory (no ports to race for). The parent never joins a process group: it sends each rank
a picklable call ``fn(ctx, *args)`` over a pipe and waits for the answers with a watchdog.
A rank that does not answer in time is reported as ``hang`` and every rank is killed; after
any failure the world is torn down and starts afresh on the next call, because a failed
exchange can leave bytes in flight that would corrupt the next one.

Each rank has faulthandler write to a file of its own in the rendezvous directory: a fatal
signal's stack, and every thread's stack on SIGUSR1, which the watchdog sends a rank before it
kills it. A failed rank's outcome carries that stack, cut to the rank's own work (see
:func:`raise_failure` for the messages).
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import faulthandler
import io
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import multiprocessing.process
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import torch

from ppaux.isolation import describe_exitcode
from ppaux.isolation.status import Frame, frames_in_dump, render
from ppaux.relay.channels import ChannelHang, GlooAllGather, GlooChannel, ProcessGroup
from ppaux.relay.wire import CPU_GROUP, DEVICE_GROUP, TensorDict, recv_tensor_dict, send_tensor_dict

DEFAULT_TIMEOUT = 10.0
# How long the other ranks may still finish once one has failed.
FAILURE_GRACE = 0.5
# A rank whose pipe has closed is exiting: how long to wait for its exit code.
EXIT_CODE_WAIT = 1.0
# A rank the watchdog stops is sent STACK_SIGNAL first: how long its stack may take to be
# written (down to the frame of serve(), below which a rank's own work lies), and how often its
# file is looked at.
STACK_SIGNAL = signal.SIGUSR1
STACK_WAIT = 0.5
STACK_POLL = 0.01

# Set in worker processes: faults that kill "their" process only do so there.
IN_WORKER = False

# A call a rank runs, ``fn(ctx, *args)``: picklable, and ``fn`` takes the rank's context first.
Call: TypeAlias = tuple[Callable[..., object], tuple[object, ...]]


class RankFailure(RuntimeError):
    """An exception raised in a rank; ``str()`` is the original message."""

    def __init__(self, type_name: str, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.type_name = type_name
        self.code = code


@dataclass
class Outcome:
    """What one rank did with one call: ``ok`` (``value``), ``error``, ``hang`` or ``died``.

    A ``died`` rank has its ``exitcode`` (negative: the signal) when it could be read. A failed
    rank of a :class:`GlooWorld` has its ``stack``: the frames of its own work, outermost first,
    as faulthandler wrote them (a hang's on the watchdog's request, a fatal signal's), or ``""``
    when none was written; ``None`` where no stack was looked for. A ``hang`` has the ``limit`` in
    seconds it ran out, and ``after``, the rank whose failure cut the wait short to
    :data:`FAILURE_GRACE` (``None`` when the rank had the whole timeout).
    """

    status: str
    value: Any = None  # what the call returned, unpickled: the caller knows what it asked for
    error: Exception | None = None
    exitcode: int | None = None
    stack: str | None = None
    limit: float | None = None
    after: int | None = None


class Watchdog:
    """When a call's wait for its ranks ends: ``limit`` seconds after ``start``, cut short to
    :data:`FAILURE_GRACE` after the first failure seen, if that is sooner (``after`` then names the
    failed rank). Times are the caller's readings of ``time.monotonic()``."""

    def __init__(self, start: float, limit: float) -> None:
        self.deadline = start + limit
        self.limit = limit
        self.after: int | None = None

    def failed(self, rank: int, now: float) -> None:
        """``rank`` was seen failed at ``now``: a peer that failed will not send what the others
        wait for, so don't wait it out. Only a grace ending before the deadline counts, so the
        first failure's grace stands."""
        grace = now + FAILURE_GRACE
        if grace < self.deadline:
            self.deadline, self.limit, self.after = grace, FAILURE_GRACE, rank

    def remaining(self, now: float) -> float:
        """Seconds from ``now`` to the deadline (none once it has passed)."""
        return max(0.0, self.deadline - now)

    def expired(self, now: float) -> bool:
        return now >= self.deadline


class RankContext:
    """A rank's view of the world: its channels to peers, its all-gather group, and the world's
    shape and rendezvous store (for an extension that joins groups of its own)."""

    def __init__(
        self,
        rank: int,
        cpu: ProcessGroup,
        device: ProcessGroup,
        all_gather: GlooAllGather | None,
        *,
        world_size: int = 0,
        ag_size: int = 1,
        store: Any = None,  # a torch.distributed.Store, which torch's stubs do not export
    ) -> None:
        self.rank = rank
        self.cpu = cpu
        self.device = device
        self.all_gather = all_gather
        self.world_size = world_size
        self.ag_size = ag_size
        self.store = store

    def channel(self, peer: int) -> GlooChannel:
        return GlooChannel(self.cpu, self.device, peer)


def make_context(rank: int, world_size: int, store_path: str, ag_size: int, timeout: float) -> RankContext:
    """Join the gloo groups of one rank (blocks until every rank has joined)."""
    store = torch.distributed.FileStore(store_path, world_size)  # type: ignore[attr-defined]  # not in torch's stubs
    td = datetime.timedelta(seconds=timeout)

    def group(prefix: str, r: int, n: int) -> Any:  # torch's stubs type ProcessGroupGloo without send/recv
        prefixed = torch.distributed.PrefixStore(prefix, store)  # type: ignore[attr-defined]  # as FileStore
        return torch.distributed.ProcessGroupGloo(prefixed, r, n, td)

    cpu = group(CPU_GROUP, rank, world_size)
    device = group(DEVICE_GROUP, rank, world_size)
    gather = None
    if ag_size > 1:
        # Consecutive blocks of ranks, like SGLang's attention-TP groups inside one PP stage.
        block = rank // ag_size
        gather = GlooAllGather(group(f"ag{block}", rank % ag_size, ag_size), rank % ag_size, ag_size)
    return RankContext(rank, cpu, device, gather, world_size=world_size, ag_size=ag_size, store=store)


def dumps(obj: object) -> bytes:
    """Serialise a call or a reply between parent and worker.

    ``torch.save`` rather than ``pickle``: plain pickle cannot load uint16/32/64 tensors back.
    """
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def loads(data: bytes) -> Any:  # whatever the other side pickled
    return torch.load(io.BytesIO(data), weights_only=False)


def serve(conn: multiprocessing.connection.Connection, ctx: RankContext) -> None:
    """Run calls from the parent until it sends ``None``; report each result or exception."""
    while True:
        data = conn.recv_bytes()
        try:
            call = loads(data)
            if call is None:
                return
            fn, args = call
            reply: tuple[object, ...] = ("ok", fn(ctx, *args))
        except Exception as exc:  # reported to the parent, which classifies it
            reply = ("error", type(exc).__name__, str(exc), getattr(exc, "code", None))
        conn.send_bytes(dumps(reply))


def rank_main(
    rank: int,
    world_size: int,
    store_path: str,
    ag_size: int,
    timeout: float,
    conn: multiprocessing.connection.Connection,
    extension: Call | None = None,
) -> None:
    """A worker's whole life (also run in threads by the tests, for coverage). ``extension``,
    ``(fn, args)``, runs ``fn(ctx, *args)`` once the rank has joined its groups."""
    ctx = make_context(rank, world_size, store_path, ag_size, timeout)
    if extension is not None:
        fn, args = extension
        fn(ctx, *args)
    conn.send_bytes(dumps(("ready",)))
    serve(conn, ctx)


# The rank's stack file, open for the life of the worker process (faulthandler writes to its descriptor).
_STACK_FILE: io.FileIO | None = None


# pragma: no mutate start - runs only in a worker process, where mutmut cannot see which tests reach it
def _process_main(  # pragma: no cover - runs in the child; rank_main is covered in-process
    rank: int,
    world_size: int,
    store_path: str,
    ag_size: int,
    timeout: float,
    conn: multiprocessing.connection.Connection,
    extension: Call | None = None,
    stack_path: str | None = None,
) -> None:
    global IN_WORKER, _STACK_FILE
    IN_WORKER = True
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if stack_path is not None:
        try:
            _STACK_FILE = open(stack_path, "ab", buffering=0)
        except OSError:
            pass  # no stacks then: the rendezvous fails the same way and says why
        else:
            # A fatal signal's stack, and every thread's on the watchdog's request.
            faulthandler.enable(file=_STACK_FILE, all_threads=True)
            faulthandler.register(STACK_SIGNAL, file=_STACK_FILE, all_threads=True, chain=False)
    rank_main(rank, world_size, store_path, ag_size, timeout, conn, extension)


# pragma: no mutate end


@contextlib.contextmanager
def _bare_main() -> Iterator[None]:
    # A worker needs only ppaux.relay.gloo; without this, multiprocessing re-runs the parent's
    # __main__ in every worker (a script without a main guard, `python -m ppaux ...`).
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


def rendezvous_dir() -> str:
    """A fresh directory for one world's FileStore (removed when the world stops)."""
    return tempfile.mkdtemp(prefix="ppaux-gloo-")


def _context() -> multiprocessing.context.ForkServerContext:
    # Workers start with torch already imported (a restart costs well under a second).
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "ppaux.relay.wire", "ppaux.relay.gloo"])
    return ctx


class GlooWorld:
    """``world_size`` gloo ranks in worker processes, started on first use.

    ``ag_size`` > 1 adds all-gather groups of that many consecutive ranks. ``timeout`` is the
    watchdog for each call (and the gloo groups' own timeout). ``extension`` (see :func:`rank_main`)
    is set up on every rank as it starts.
    """

    def __init__(
        self,
        world_size: int,
        *,
        ag_size: int = 1,
        timeout: float = DEFAULT_TIMEOUT,
        extension: Call | None = None,
    ) -> None:
        if world_size < 2 or world_size % ag_size:
            raise ValueError(f"world_size={world_size} must be >= 2 and a multiple of ag_size={ag_size}")
        self.world_size = world_size
        self.ag_size = ag_size
        self.timeout = timeout
        self.extension = extension
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.conns: list[multiprocessing.connection.Connection] = []
        self.tmp: str | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return bool(self.procs)

    def start(self) -> None:
        if self.running:
            return
        mp = _context()
        self.tmp = rendezvous_dir()
        store = os.path.join(self.tmp, "store")
        for rank in range(self.world_size):
            parent, child = mp.Pipe()
            p = mp.Process(
                target=_process_main,
                args=(
                    rank,
                    self.world_size,
                    store,
                    self.ag_size,
                    self.timeout,
                    child,
                    self.extension,
                    self._stack_path(rank),
                ),
                daemon=True,
            )
            with _bare_main():
                p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)
        ready = self._collect(range(self.world_size), self.timeout)
        if any(o.status != "ok" for o in ready.values()):
            self.stop()
            raise RuntimeError(f"gloo ranks failed to start: {ready!r}")

    def _collect(self, ranks: Iterable[int], timeout: float) -> dict[int, Outcome]:
        watchdog = Watchdog(time.monotonic(), timeout)
        out: dict[int, Outcome] = {}
        waiting = list(ranks)
        while waiting:
            # Sleep until a waiting rank answers or exits (its pipe or its sentinel), or the watchdog's deadline.
            objects = [obj for rank in waiting for obj in (self.conns[rank], self.procs[rank].sentinel)]
            multiprocessing.connection.wait(objects, watchdog.remaining(time.monotonic()))
            for rank in list(waiting):
                outcome = read_reply(self.conns[rank], self.procs[rank])
                if outcome is not None:
                    out[rank] = outcome
                    waiting.remove(rank)
            failed = [rank for rank, o in out.items() if o.status != "ok"]
            if failed:
                watchdog.failed(failed[0], time.monotonic())
            if waiting and watchdog.expired(time.monotonic()):
                for rank in waiting:
                    out[rank] = Outcome("hang", limit=watchdog.limit, after=watchdog.after)
                break
        hung = [rank for rank, o in out.items() if o.status == "hang"]
        dead = [rank for rank, o in out.items() if o.status == "died"]
        if hung or dead:
            stacks = self._stacks(hung, dead)
            out.update({rank: replace(out[rank], stack=stacks[rank]) for rank in hung + dead})
        return dict(sorted(out.items()))

    def _stack_path(self, rank: int) -> str:
        assert self.tmp is not None
        return os.path.join(self.tmp, f"rank{rank}.stack")

    def _stacks(self, hung: Sequence[int], dead: Sequence[int]) -> dict[int, str]:
        """The stacks of the ``hung`` ranks, still running, and of the ``dead`` ones (what a fatal
        signal left); ``""`` for a rank that wrote none. Each hung rank is sent
        :data:`STACK_SIGNAL` and given up to :data:`STACK_WAIT` s to write its frames down to
        the frame that ends its own work (faulthandler writes the innermost frames first)."""
        start = {rank: len(self._dump(rank)) for rank in hung}
        for rank in hung:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.procs[rank].pid, STACK_SIGNAL)  # type: ignore[arg-type]  # a started rank has a pid
        writing = list(hung)
        give_up = time.monotonic() + STACK_WAIT
        while writing and time.monotonic() < give_up:
            time.sleep(STACK_POLL)
            for rank in list(writing):
                if _own_frames(self._dump(rank)[start[rank] :]) is not None:
                    writing.remove(rank)
        stacks = {rank: rank_stack(self._dump(rank)[start[rank] :]) for rank in hung}
        stacks.update({rank: rank_stack(self._dump(rank)) for rank in dead})
        return stacks

    def _dump(self, rank: int) -> bytes:
        """What faulthandler has written to ``rank``'s stack file so far."""
        try:
            with open(self._stack_path(rank), "rb") as f:
                return f.read()
        except OSError:  # the rank could not make it (the rendezvous directory is unusable)
            return b""

    def run(self, calls: Mapping[int, Call], *, timeout: float | None = None) -> dict[int, Outcome]:
        """Run ``fn(ctx, *args)`` on each named rank at once; the outcome of each.

        After any outcome other than ``ok`` every rank is killed (the next call restarts them).
        """
        with self._lock:
            self.start()
            for rank, call in calls.items():
                self.conns[rank].send_bytes(dumps(call))
            out = self._collect(sorted(calls), self.timeout if timeout is None else timeout)
            if any(o.status != "ok" for o in out.values()):
                self.stop()
            return out

    def stop(self) -> None:
        """Kill and join every rank; remove the rendezvous directory."""
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.join()
        for conn in self.conns:
            conn.close()
        self.procs, self.conns = [], []
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def read_reply(
    conn: multiprocessing.connection.Connection, proc: multiprocessing.process.BaseProcess
) -> Outcome | None:
    """A rank's reply, ``died`` if it is gone without one, or ``None`` while it still works.
    Never waits: :meth:`GlooWorld._collect` waits on every rank's pipe at once."""
    if conn.poll(0):
        try:
            return _outcome(loads(conn.recv_bytes()))
        except (EOFError, OSError):  # the pipe closed: the rank died before answering
            proc.join(EXIT_CODE_WAIT)
            return Outcome("died", exitcode=proc.exitcode)
    if not proc.is_alive():
        return Outcome("died", exitcode=proc.exitcode)
    return None


def _outcome(reply: tuple[Any, ...]) -> Outcome:  # a worker's reply, unpickled
    if reply[0] == "error":
        return Outcome("error", error=RankFailure(reply[1], reply[2], reply[3]))
    return Outcome("ok", value=reply[1] if len(reply) > 1 else None)


_worlds: dict[tuple[int, int, Call | None], GlooWorld] = {}


def world(world_size: int, *, ag_size: int = 1, extension: Call | None = None) -> GlooWorld:
    """The shared world of that shape and extension (started on first use, stopped at interpreter exit)."""
    key = (world_size, ag_size, extension)
    if key not in _worlds:
        _worlds[key] = GlooWorld(world_size, ag_size=ag_size, extension=extension)
    return _worlds[key]


@atexit.register
def stop_all() -> None:
    for w in _worlds.values():
        w.stop()


def _send(ctx: RankContext, tensor_dict: TensorDict, dst: int, async_send: bool = False) -> None:
    send_tensor_dict(ctx.channel(dst), tensor_dict, all_gather_group=ctx.all_gather, async_send=async_send)


def _recv(ctx: RankContext, src: int, device: str | None) -> TensorDict:
    return recv_tensor_dict(ctx.channel(src), all_gather_group=ctx.all_gather, device=device)


# The frames of this module where a rank's own work begins: a stack is cut above them.
_HERE = os.path.abspath(__file__)
_ENTRIES = ("serve", "rank_main")
_THREAD = re.compile(r"\n(?=.*\(most recent call first\):)")


def _own_frames(dump: bytes) -> list[Frame] | None:
    """The frames of the rank's own work in a faulthandler dump, innermost first: those of the
    thread that runs the rank's calls, below :func:`serve` (or :func:`rank_main`, for an extension
    or a rendezvous); ``None`` when no thread has reached that frame."""
    for thread in _THREAD.split(dump.decode("utf-8", "replace")):
        frames = frames_in_dump(thread)
        for i, frame in enumerate(frames):
            if frame.function in _ENTRIES and os.path.abspath(frame.path) == _HERE:
                # The entry frame itself only when the rank is stuck in it.
                return frames[:i] or frames[:1]
    return None


def rank_stack(dump: bytes) -> str:
    """The rank's own work in a faulthandler dump, rendered outermost first (see :func:`_own_frames`);
    failing that, the first thread with frames, whole. ``""`` for an empty dump."""
    frames = _own_frames(dump)
    return render(frames_in_dump(dump.decode("utf-8", "replace")) if frames is None else frames)


def describe_failure(rank: int, o: Outcome) -> str:
    """A ``died`` or ``hang`` outcome in words, with the rank's stack when it has one."""
    if o.status == "died":
        text = f"gloo rank {rank} died"
        if o.exitcode is not None:
            text += f": {describe_exitcode(o.exitcode)}"
        return text + (f"; where (most recent call last):\n{o.stack}" if o.stack else "")
    text = f"gloo rank {rank} did not finish"
    if o.limit is not None:
        text += f" within {o.limit:g} s" + ("" if o.after is None else f" of rank {o.after}'s failure")
    text += ": stopped by the watchdog"
    if o.stack:
        return text + f"; stuck at (most recent call last):\n{o.stack}"
    if o.stack is not None:
        asked = signal.Signals(STACK_SIGNAL).name
        return (
            text + f"; no stack could be obtained (no answer to {asked} "
            f"within {STACK_WAIT:g} s: the rank blocks, ignores or handles that signal itself)"
        )
    return text


def raise_failure(outcomes: dict[int, Outcome]) -> None:
    """Raise the first rank's exception; a hang or death as :class:`ChannelHang`/``RankFailure``
    (:func:`describe_failure`'s words)."""
    for rank in sorted(outcomes):
        o = outcomes[rank]
        if o.status == "error":
            raise o.error  # type: ignore[misc]  # an error outcome has its error
    for rank in sorted(outcomes):
        o = outcomes[rank]
        if o.status == "died":
            raise RankFailure("ProcessDied", describe_failure(rank, o))
        if o.status == "hang":
            raise ChannelHang(describe_failure(rank, o))


def relay(tensor_dict: TensorDict, *, device: torch.device | str | None = None) -> TensorDict:
    """One hop rank 0 -> rank 1 of the shared 2-rank world; the dict rank 1 received."""
    if device is not None:
        device = str(torch.device(device))
    outcomes = world(2).run({1: (_recv, (0, device)), 0: (_send, (tensor_dict, 1))})
    raise_failure(outcomes)
    return outcomes[1].value  # type: ignore[no-any-return]  # what _recv returned: the dict
