"""SGLang's side of the relay in threads of this process: a stand-in release written here with the
shape and the behaviour of SGLang 0.5.23's wire code (send/recv_object, send/recv_tensor_dict with
all-gather slicing), joined by every rank as a gloo worker joins, over a torch.distributed whose
ranks are threads. What the gloo workers run (tests/test_wire_diff.py, -m sglang), here without a
download and without processes."""

from __future__ import annotations

import collections
import pickle
import sys
import textwrap
import threading
import warnings
import zipfile
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, Phase, settings

import ppaux.relay.differential as differential
import ppaux.relay.gloo as gloo
import ppaux.relay.pipeline as pipeline
import ppaux.relay.sglang as sglang
from ppaux.relay.faults import DropKey, Reorder
from ppaux.relay.gloo import Outcome, RankFailure

pytestmark = pytest.mark.wire

VERSION = "9.9.7"
MODULE = f"ppaux_sglang_wire_{VERSION.replace('.', '_')}"
AUX = "__sampling_observer_output__.scores"

# SGLang 0.5.23's wire definitions, as they behave (docstrings and comments left out).
RELEASE = """
import torch
from sglang.srt import platforms

TensorMetadata = namedtuple("TensorMetadata", ["device", "dtype", "size"])


@dataclass
class P2PWork:
    work: Optional[torch.distributed.Work]
    payload: Optional[torch.Tensor]


def _split_tensor_dict(tensor_dict):
    metadata_list, tensor_list = [], []
    for key, value in tensor_dict.items():
        if isinstance(value, torch.Tensor):
            metadata_list.append((key, TensorMetadata(value.device.type, value.dtype, value.size())))
            tensor_list.append(value)
        else:
            metadata_list.append((key, value))
    return metadata_list, tensor_list


class GroupCoordinator:
    def send_object(self, obj, dst, async_send=False, tag=0):
        assert dst < self.world_size, f"Invalid dst rank ({dst})"
        assert dst != self.rank_in_group, "Invalid destination rank."
        send_func = torch.distributed.isend if async_send else torch.distributed.send
        object_tensor = torch.frombuffer(pickle.dumps(obj), dtype=torch.uint8)
        size_tensor = torch.tensor([object_tensor.numel()], dtype=torch.long, device="cpu")
        p2p_work = []
        size_work = send_func(size_tensor, self.ranks[dst], group=self.cpu_group, tag=tag)
        if async_send:
            p2p_work.append(P2PWork(size_work, size_tensor))
        object_work = send_func(object_tensor, self.ranks[dst], group=self.cpu_group, tag=tag)
        if async_send:
            p2p_work.append(P2PWork(object_work, object_tensor))
        return p2p_work

    def recv_object(self, src, tag=0):
        assert src < self.world_size, f"Invalid src rank ({src})"
        assert src != self.rank_in_group, "Invalid source rank."
        size_tensor = torch.empty(1, dtype=torch.long, device="cpu")
        work = torch.distributed.irecv(size_tensor, src=self.ranks[src], group=self.cpu_group, tag=tag)
        work.wait()
        object_tensor = torch.empty(size_tensor.item(), dtype=torch.uint8, device="cpu")
        work = torch.distributed.irecv(object_tensor, src=self.ranks[src], group=self.cpu_group, tag=tag)
        work.wait()
        return pickle.loads(object_tensor.numpy())

    def send_tensor_dict(self, tensor_dict, dst=None, all_gather_group=None, async_send=False):
        if self.world_size == 1:
            return tensor_dict
        all_gather_size = 1 if all_gather_group is None else all_gather_group.world_size
        all_gather_rank = 0 if all_gather_group is None else all_gather_group.rank_in_group
        group = self.device_group
        metadata_group = self.cpu_group
        if dst is None:
            dst = (self.rank_in_group + 1) % self.world_size
        assert dst < self.world_size, f"Invalid dst rank ({dst})"
        metadata_list, tensor_list = _split_tensor_dict(tensor_dict)
        send_func = torch.distributed.isend if async_send else torch.distributed.send
        p2p_works = self.send_object(metadata_list, dst=dst, async_send=async_send)
        for tensor in tensor_list:
            if tensor.numel() == 0:
                continue
            if all_gather_group is not None and tensor.numel() % all_gather_size == 0:
                tensor = tensor.reshape(all_gather_size, -1)[all_gather_rank]
            comm_group = metadata_group if tensor.is_cpu else group
            work = send_func(tensor, self.ranks[dst], group=comm_group)
            if async_send:
                p2p_works.append(P2PWork(work, tensor))
        return p2p_works

    def recv_tensor_dict(self, src=None, all_gather_group=None):
        if not torch.distributed.is_initialized() or self.world_size == 1:
            return None
        all_gather_size = 1 if all_gather_group is None else all_gather_group.world_size
        all_gather_rank = 0 if all_gather_group is None else all_gather_group.rank_in_group
        group = self.device_group
        metadata_group = self.cpu_group
        if src is None:
            src = (self.rank_in_group - 1) % self.world_size
        assert src < self.world_size, f"Invalid src rank ({src})"
        recv_metadata_list = self.recv_object(src=src)
        tensor_dict = {}
        for key, value in recv_metadata_list:
            if isinstance(value, TensorMetadata):
                tensor = torch.empty(value.size, dtype=value.dtype, device=value.device)
                if tensor.numel() == 0:
                    tensor_dict[key] = tensor
                    continue
                use_all_gather = all_gather_group is not None and tensor.numel() % all_gather_size == 0
                if use_all_gather:
                    orig_shape = tensor.shape
                    tensor = tensor.reshape(all_gather_size, -1)[all_gather_rank]
                comm_group = metadata_group if tensor.is_cpu else group
                work = torch.distributed.irecv(tensor, src=self.ranks[src], group=comm_group)
                work.wait()
                if use_all_gather:
                    tensor = all_gather_group.all_gather(tensor, dim=0)
                    tensor = tensor.reshape(orig_shape)
                tensor_dict[key] = tensor
            else:
                tensor_dict[key] = value
        return tensor_dict
"""


class Group:
    """A process group made by ``new_group``: the same ``index`` on every rank that made it."""

    def __init__(self, index: int, ranks: tuple[int, ...]) -> None:
        self.index, self.ranks = index, ranks


class Work:
    def __init__(self, wait: Any = None) -> None:
        self._wait = wait

    def wait(self) -> None:
        if self._wait is not None:
            self._wait()


def _flat(t: torch.Tensor) -> torch.Tensor:
    """A tensor contiguous by torch's rule as one dimension over the same memory."""
    return t.as_strided((t.numel(),), (1,))


class ThreadDist:
    """torch.distributed where every rank is a thread (or one thread after another: ``local.rank``
    says which process a thread stands for); a message goes from one global rank to another within
    a group, matched by tag; a receive that waits longer than ``timeout`` raises (gloo's own
    timeout, shortened)."""

    def __init__(self, world_size: int, timeout: float = 2.0) -> None:
        self.world_size, self.timeout = world_size, timeout
        self.local = threading.local()
        self.cond = threading.Condition()
        self.boxes: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
        self.gathers: dict[tuple, dict[int, torch.Tensor]] = collections.defaultdict(dict)
        self.counts: collections.Counter = collections.Counter()
        self.joined: dict[int, Any] = {}

    def is_initialized(self) -> bool:
        return self.local.rank in self.joined

    def PrefixStore(self, prefix: str, store: Any) -> tuple:  # noqa: N802 - torch.distributed's name
        if not isinstance(prefix, str) or store is None:
            raise TypeError("PrefixStore(prefix: str, store: Store)")
        return ("PrefixStore", prefix, store)

    @staticmethod
    def _backend(backend: Any) -> None:
        # As torch reads a backend's name: any case; None is the default (gloo for CPU tensors).
        if backend is not None and backend.lower() != "gloo":
            raise ValueError(f"Invalid backend: '{backend}'")

    def init_process_group(self, backend: Any = None, *, store: Any, rank: int, world_size: int) -> None:
        self._backend(backend)
        if not (isinstance(store, tuple) and store[0] == "PrefixStore") or (rank, world_size) != (
            self.local.rank,
            self.world_size,
        ):
            raise ValueError(f"rank {rank} of {world_size} over {store!r}: not this process's rendezvous")
        if self.local.rank in self.joined:
            raise RuntimeError("trying to initialize the default process group twice!")
        self.joined[rank] = store[2]

    def new_group(self, ranks: Any = None, backend: Any = None) -> Group:
        self._backend(backend)
        self.counts[("groups", self.local.rank)] += 1
        made = self.counts[("groups", self.local.rank)]
        return Group(made, tuple(range(self.world_size)) if ranks is None else tuple(ranks))

    def _member(self, group: Any, *ranks: int) -> None:
        if not isinstance(group, Group) or any(r not in group.ranks for r in ranks):
            raise RuntimeError(f"ranks {ranks} are not all in the group")

    def send(self, tensor: torch.Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
        me = self.local.rank
        self._member(group, me, dst)
        with self.cond:
            self.boxes[(group.index, me, dst, tag)].append(tensor.detach().clone(memory_format=torch.contiguous_format))
            self.cond.notify_all()

    def isend(self, tensor: torch.Tensor, dst: int, group: Any = None, tag: int = 0) -> Work:
        self.send(tensor, dst, group=group, tag=tag)
        return Work()

    def irecv(self, tensor: torch.Tensor, src: int, group: Any = None, tag: int = 0) -> Work:
        me = self.local.rank
        self._member(group, me, src)
        key = (group.index, src, me, tag)

        def wait() -> None:
            with self.cond:
                if not self.cond.wait_for(lambda: self.boxes[key], timeout=self.timeout):
                    raise RuntimeError(f"rank {me}: nothing from rank {src} within {self.timeout} s")
                got = self.boxes[key].popleft()
            if got.nbytes != tensor.nbytes:
                raise RuntimeError(f"Received data size doesn't match expected size. {got.nbytes} vs {tensor.nbytes}")
            # Byte for byte, as gloo does; a size-1 dimension may carry any stride.
            _flat(tensor).view(torch.uint8).copy_(_flat(got).view(torch.uint8))

        return Work(wait)

    def all_gather(self, outputs: list[torch.Tensor], tensor: torch.Tensor, group: Any = None) -> None:
        me = self.local.rank
        self._member(group, me)
        if len(outputs) != len(group.ranks):
            raise RuntimeError(f"all_gather: {len(outputs)} outputs for a group of {len(group.ranks)}")
        with self.cond:
            key = (group.index, group.ranks, self.counts[("gathers", me, group.index)])
            self.counts[("gathers", me, group.index)] += 1
            self.gathers[key][me] = tensor.detach().clone()
            self.cond.notify_all()
            if not self.cond.wait_for(lambda: len(self.gathers[key]) == len(group.ranks), timeout=self.timeout):
                raise RuntimeError(f"rank {me}: all_gather incomplete within {self.timeout} s")
            for out, rank in zip(outputs, group.ranks):
                out.copy_(self.gathers[key][rank])


class ThreadWorld:
    """A :class:`~ppaux.relay.gloo.GlooWorld` whose ranks are threads: each rank runs the world's
    extension (SGLang's join) once, then every call it is given, as the model's loopback ranks
    (its channels and all-gather) with the SGLang side it joined."""

    def __init__(self, dist: ThreadDist, n: int, ag_size: int = 1, extension: Any = None) -> None:
        self.dist, self.world_size, self.ag_size, self.extension = dist, n, ag_size, extension
        self.sglang: dict[int, Any] = {}
        self.stopped = False
        self.joined = self._on_every_rank(lambda ctx: extension[0](ctx, *extension[1]))
        # Threads share one sys.modules, where each join registered its own copy of the release
        # under one name: the ranks share the class that pickles (each worker process has its own).
        for s in self.sglang.values():
            s.wire.TensorMetadata = sys.modules[MODULE].TensorMetadata

    def _on_every_rank(self, fn: Any) -> dict[int, Outcome]:
        def call(ctx: Any) -> Any:
            self.dist.local.rank = ctx.rank
            ctx.store = "the world's FileStore"
            if ctx.rank in self.sglang:
                ctx.sglang = self.sglang[ctx.rank]
            try:
                return fn(ctx)
            finally:
                if hasattr(ctx, "sglang"):
                    self.sglang[ctx.rank] = ctx.sglang

        out = pipeline.run_loopback(self.world_size, self.ag_size, call, ())
        # As a worker reports an exception: its type's name and its message.
        return {
            r: Outcome("error", error=RankFailure(type(o.error).__name__, str(o.error))) if o.status == "error" else o
            for r, o in sorted(out.items())
        }

    def run(self, calls: dict[int, tuple], timeout: float | None = None) -> dict[int, Outcome]:
        return self._on_every_rank(lambda ctx: calls[ctx.rank][0](ctx, *calls[ctx.rank][1]))

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def threads(tmp_path, monkeypatch):
    """SGLang release VERSION (the stand-in) in the cache; gloo worlds of threads over ThreadDist."""
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path))
    folder = tmp_path / f"sglang-{VERSION}"
    folder.mkdir()
    with zipfile.ZipFile(folder / f"sglang-{VERSION}-py3-none-any.whl", "w") as zf:
        zf.writestr(sglang.WIRE_FILE, textwrap.dedent(RELEASE))
    worlds: list[ThreadWorld] = []

    def world(n: int, ag_size: int = 1, extension: Any = None) -> ThreadWorld:
        dist = ThreadDist(n)
        monkeypatch.setattr(sglang, "dist", dist)
        worlds.append(ThreadWorld(dist, n, ag_size, extension))
        return worlds[-1]

    monkeypatch.setattr(gloo, "world", world)
    # A thread a rank starts (the last stage's receiver) belongs to that rank's process.
    start = threading.Thread.start

    def start_in_rank(thread: threading.Thread) -> None:
        dist = sglang.dist
        rank = getattr(dist.local, "rank", None) if isinstance(dist, ThreadDist) else None
        run = thread.run

        def run_as_rank() -> None:
            dist.local.rank = rank
            run()

        if rank is not None:
            thread.run = run_as_rank
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_in_rank)
    with warnings.catch_warnings():
        yield worlds


def _joined(w: ThreadWorld) -> dict[int, Any]:
    assert all(o.status == "ok" for o in w.joined.values()), w.joined
    return dict(sorted(w.sglang.items()))


def test_each_rank_joins_sglangs_pp_and_attention_tp_groups(threads):
    """pp 3 x attention-TP 2: PP groups hold one member of every stage, TP groups one stage."""
    w = differential.world(3, 2, VERSION, sglang.wire_source(VERSION))
    ranks = _joined(w)
    assert sglang.dist.joined == {r: "the world's FileStore" for r in range(6)}
    assert [s.pp.ranks for s in ranks.values()] == [[0, 2, 4], [1, 3, 5]] * 3
    assert [s.tp.ranks for s in ranks.values()] == [[0, 1], [0, 1], [2, 3], [2, 3], [4, 5], [4, 5]]
    assert [(s.pp.rank_in_group, s.tp.rank_in_group) for s in ranks.values()] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1),
    ]  # fmt: skip
    for s in ranks.values():
        assert s.pp.wire is s.wire and s.tp.wire is s.wire and s.wire.__name__ == MODULE
        assert s.pp.boundary is s.boundary and s.tp.boundary is s.boundary
        # The cut-out code sees torch as itself, torch.distributed as the rank's Boundary.
        assert s.wire.torch.__name__ == "torch" and s.wire.torch.distributed is s.boundary
        # The Boundary names the rank's own groups; another rank's are "other".
        groups = (s.pp.cpu_group, s.pp.device_group, s.tp.cpu_group, s.tp.device_group)
        assert [s.boundary._group(g) for g in groups] == ["cpu", "device", "tp cpu", "tp"]
    assert ranks[0].boundary._group(ranks[1].pp.cpu_group) == "other"
    # A rank hides torch's warning about SGLang's read-only pickle buffers, and only that one.
    with warnings.catch_warnings(record=True) as seen:
        torch.frombuffer(pickle.dumps([1]), dtype=torch.uint8)
        warnings.warn("a rank's own warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a rank's own warning"]
    # Without attention TP there is no TP group.
    assert [s.tp for s in _joined(differential.world(2, 1, VERSION, sglang.wire_source(VERSION))).values()] == [
        None,
        None,
    ]


@pytest.mark.parametrize("stages, ag", differential.CONFIGS)
def test_the_models_ring_and_sglangs_deliver_the_same_after_the_same_messages(threads, stages, ag):
    w = differential.world(stages, ag, VERSION, sglang.wire_source(VERSION))
    sent = {
        "next_token_ids": torch.arange(4),
        "__msg_type__": "output",
        "e": torch.empty(0),
        AUX: torch.arange(6.0).reshape(2, 3),
        "odd": torch.tensor([1, 2, 3], dtype=torch.int8),
    }
    out = differential.run(w, [dict(sent) for _ in range(ag)])
    assert differential.difference(out) is None
    last = (stages - 1) * ag
    for rank, o in out["sglang"].items():
        assert o.status == "ok"
        got = o.value["received"]
        assert list(got) == list(sent) and all(
            torch.equal(got[k], v) if torch.is_tensor(v) else got[k] == v for k, v in sent.items()
        )
        messages = o.value["messages"]
        nxt, prev = ((rank // ag + 1) % stages) * ag + rank % ag, ((rank // ag - 1) % stages) * ag + rank % ag
        calls = [m for m in messages if m[0] == "begin"]
        assert calls == (
            [("begin", "send"), ("begin", "recv")] if rank >= last else [("begin", "recv"), ("begin", "send")]
        )
        assert {m[2] for m in messages if m[0] == "send"} == {nxt}
        assert {m[2] for m in messages if m[0] == "recv"} == {prev}
        # Tensors whose size divides go as slices and are all-gathered; the rest whole.
        gathers = [m for m in messages if m[0] == "all_gather"]
        assert gathers == (
            []
            if ag == 1
            else [("all_gather", "tp", -1, "torch.int64", (2,)), ("all_gather", "tp", -1, "torch.float32", (3,))]
        )


def test_a_difference_between_sglangs_ring_and_the_models_is_found(threads, monkeypatch):
    """The model made to send a whole tensor where SGLang slices: wire-diff names the message."""
    w = differential.world(2, 2, VERSION, sglang.wire_source(VERSION))
    monkeypatch.setattr(differential, "RecordingAllGather", lambda group, log: None)
    out = differential.run(w, [{"next_token_ids": torch.arange(4)}] * 2)
    assert out["sglang"][0].status == "ok"
    assert differential.difference(out) == (
        "rank 0, message 3: ppaux's model ('recv', 'cpu', 2, 'torch.int64', (4,)), "
        "SGLang's code ('recv', 'cpu', 2, 'torch.int64', (2,))"
    )


def test_wire_diff_passes_on_a_release_that_behaves_as_the_model(threads):
    quick = settings(max_examples=3, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    differential.check(VERSION, quick, configs=((2, 1), (2, 2)))
    assert [(w.world_size, w.ag_size, w.stopped) for w in threads] == [(2, 1, True), (4, 2, True)]


def test_one_hop_over_sglangs_code_delivers_the_dict(threads):
    d = {"next_token_ids": torch.tensor([3, 4]), "__msg_type__": "output", AUX: torch.tensor([0.5, 1.5])}
    got = sglang.relay(d, version=VERSION)
    assert list(got) == list(d) and got["__msg_type__"] == "output"
    assert got["next_token_ids"].tolist() == [3, 4] and got[AUX].tolist() == [0.5, 1.5]
    assert [m[:3] for m in threads[0].sglang[1].boundary.messages] == [
        ("send", "cpu", 0),
        ("send", "cpu", 0),
        ("send", "cpu", 0),
        ("send", "cpu", 0),
    ]


class Observer:
    def from_pp_tensors(self, tensors):
        return {k: v.clone() for k, v in tensors.items()}


def _ring(**kw):
    # An empty aux tensor too: SGLang never sends its bytes, the receiver makes it from the metadata.
    outputs = [
        {"scores": torch.tensor([1.0, 2.0]), "none": torch.empty(0, dtype=torch.int64)},
        {"scores": torch.tensor([3.0, 4.0]), "none": torch.empty(0, dtype=torch.int64)},
    ]
    return pipeline.PipelineConfig(
        [pipeline.Stage(observer=Observer()), pipeline.Stage(), pipeline.Stage()], outputs=outputs, **kw
    )


def _popped(outcomes):
    return [
        None if p is None else {k: (str(t.dtype), t.tolist()) for k, t in p.items()} for p in outcomes[0].value.popped
    ]


STEP0 = {"scores": ("torch.float32", [1.0, 2.0]), "none": ("torch.int64", [])}
STEP1 = {"scores": ("torch.float32", [3.0, 4.0]), "none": ("torch.int64", [])}


@pytest.mark.parametrize("ag_size", [1, 2])
def test_the_pipeline_over_sglangs_code_pops_what_the_model_pops(threads, ag_size):
    model = pipeline.run(_ring(ag_size=ag_size), channel="loopback")
    real = pipeline.run(_ring(ag_size=ag_size), channel="sglang", sglang_version=VERSION)
    assert _popped(real) == _popped(model) == [STEP0, STEP1]
    assert [real[r].value.keys for r in sorted(real)] == [model[r].value.keys for r in sorted(model)]
    # With attention TP, each stage's ranks all-gather the slices SGLang sends.
    gathers = [m for m in threads[-1].sglang[0].boundary.messages if m[0] == "all_gather"]
    assert [(m[1], m[3].tolist()) for m in gathers] == (
        [] if ag_size == 1 else [("tp", [0]), ("tp", [1.0]), ("tp", [1]), ("tp", [3.0])]
    )


@pytest.mark.parametrize(
    "fault, popped",
    [
        # Step 1's output arrives first and is popped as step 0's.
        (Reorder(), [STEP1, STEP0]),
        # The aux key is gone from step 0's message only.
        (DropKey(), [{"none": ("torch.int64", [])}, STEP1]),
    ],
)
def test_a_fault_on_sglangs_wire_acts_as_on_the_models(threads, fault, popped):
    model = pipeline.run(_ring(), channel="loopback", fault=fault)
    real = pipeline.run(_ring(), channel="sglang", fault=fault, sglang_version=VERSION)
    assert _popped(real) == _popped(model) == popped
    assert [real[r].value.keys for r in sorted(real)] == [model[r].value.keys for r in sorted(model)]
