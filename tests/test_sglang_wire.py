"""Loading SGLang's wire code from a release, offline: a wheel made here stands in for SGLang's,
with the shape its parallel_state.py has (tests/test_wire_diff.py runs the real one, -m sglang)."""

from __future__ import annotations

import pickle
import subprocess
import textwrap
import zipfile
from typing import Any

import pytest
import torch
from ppaux_strategies.tensors import tensors_equal

import ppaux.relay.differential as differential
import ppaux.relay.sglang as sglang
from ppaux.cli.main import main
from ppaux.relay.gloo import Outcome, RankFailure
from ppaux.relay.pipeline import run_loopback
from ppaux.relay.wire import TensorMetadata

# What ppaux reads out of parallel_state.py, in the shape SGLang 0.5.23 has it (bodies shortened).
PARALLEL_STATE = """
import torch
from sglang.srt import platforms  # the rest of the module needs SGLang; what ppaux cuts out does not

TensorMetadata = namedtuple("TensorMetadata", ["device", "dtype", "size"])


@dataclass
class P2PWork:
    work: Optional[torch.distributed.Work]
    payload: Optional[torch.Tensor]


def _split_tensor_dict(tensor_dict):
    return (
        [(k, TensorMetadata(v.device.type, v.dtype, v.size())) for k, v in tensor_dict.items()],
        list(tensor_dict.values()),
    )


class GroupCoordinator:
    def __init__(self):
        pass

    def send_object(self, obj, dst, async_send=False, tag=0):
        torch.distributed.send(
            torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8), self.ranks[dst], group=self.cpu_group
        )
        return ("send_object", obj, dst, async_send, tag)

    def recv_object(self, src, tag=0):
        return ("recv_object", src, tag)

    def send_tensor_dict(self, tensor_dict, dst=None, all_gather_group=None, async_send=False):
        return ("send_tensor_dict", _split_tensor_dict(tensor_dict)[0], dst, all_gather_group, async_send)

    def recv_tensor_dict(self, src=None, all_gather_group: Optional["GroupCoordinator"] = None):
        return ("recv_tensor_dict", src, all_gather_group)
"""


def release(tmp_path, monkeypatch, source: str = PARALLEL_STATE, version: str = "9.9.9", path: str = sglang.WIRE_FILE):
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path))
    folder = tmp_path / f"sglang-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"sglang-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr(path, textwrap.dedent(source))
    return version


def test_the_wire_definitions_are_cut_out_of_the_release_without_the_rest(tmp_path, monkeypatch):
    source = sglang.wire_source(release(tmp_path, monkeypatch))
    assert "platforms" not in source and "class GroupCoordinator" not in source
    assert source.startswith(sglang.HEADER)
    for name in (
        "TensorMetadata = namedtuple",
        "class P2PWork",
        "def _split_tensor_dict",
        *(f"def {m}(self" for m in sglang.METHODS),
    ):
        assert source.count(name) == 1, name


class FakeDist:
    """torch.distributed as far as the Boundary calls it: records, moves nothing."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def send(self, tensor, dst, group=None, tag=0):
        self.calls.append(("send", tensor.tolist(), dst, group, tag))

    def isend(self, tensor, dst, group=None, tag=0):
        self.calls.append(("isend", tensor.tolist(), dst, group, tag))
        return "work"

    def irecv(self, tensor, src, group=None, tag=0):
        self.calls.append(("irecv", src, group, tag))
        return "work"

    def all_gather(self, outputs, tensor, group=None):
        for out in outputs:
            out.copy_(tensor)
        self.calls.append(("all_gather", len(outputs), group))

    def is_initialized(self):
        return True


def test_the_coordinator_runs_the_releases_own_methods_through_the_boundary(tmp_path, monkeypatch):
    fake = FakeDist()
    monkeypatch.setattr(sglang, "dist", fake)
    cpu, device = object(), object()
    boundary = sglang.Boundary({id(cpu): "cpu", id(device): "device"})
    wire = sglang.load_wire(sglang.wire_source(release(tmp_path, monkeypatch)), "ppaux_test_wire", boundary)
    pp = sglang.Coordinator(wire, boundary, [5, 7], 7, cpu, device)
    assert (pp.world_size, pp.rank_in_group) == (2, 1)
    assert pp.send_object({"a": 1}, 0, True, 3) == ("send_object", {"a": 1}, 0, True, 3)
    assert fake.calls[-1][2:] == (5, cpu, 0) and boundary.messages[-1][:3] == ("send", "cpu", 5)
    assert pp.recv_object(1, 2) == ("recv_object", 1, 2)
    t = torch.zeros(2)
    assert pp.send_tensor_dict({"t": t}, 0, None, True) == (
        "send_tensor_dict",
        [("t", wire.TensorMetadata("cpu", torch.float32, torch.Size([2])))],
        0,
        None,
        True,
    )
    assert pp.recv_tensor_dict(0, pp) == ("recv_tensor_dict", 0, pp)
    # SGLang's defaults: a synchronous send on tag 0, no all-gather group.
    assert pp.send_object({"a": 1}, 0) == ("send_object", {"a": 1}, 0, False, 0)
    assert pp.recv_object(1) == ("recv_object", 1, 0)
    assert pp.send_tensor_dict({}, 0) == ("send_tensor_dict", [], 0, None, False)
    assert pp.recv_tensor_dict(0) == ("recv_tensor_dict", 0, None)
    pair = torch.tensor([[1.0], [2.0]])
    assert pp.all_gather(pair).tolist() == [[1.0], [2.0], [1.0], [2.0]]
    assert pp.all_gather(pair, dim=1).tolist() == [[1.0, 1.0], [2.0, 2.0]]
    # The TensorMetadata of the loaded module pickles and unpickles by its module's name.
    assert pickle.loads(pickle.dumps(wire.TensorMetadata("cpu", torch.int8, (1,)))) == ("cpu", torch.int8, (1,))
    assert pp.all_gather(torch.tensor([1.0, 2.0]), dim=0).tolist() == [1.0, 2.0, 1.0, 2.0]
    assert fake.calls[-1] == ("all_gather", 2, device) and boundary.messages[-1][:3] == ("all_gather", "device", -1)
    assert boundary.is_initialized() is True
    # P2PWork keeps its @dataclass: SGLang's async send builds one per message.
    assert wire.P2PWork("work", None) == wire.P2PWork(work="work", payload=None)


def test_the_boundary_records_every_call_and_lets_a_fault_change_or_drop_a_message(monkeypatch):
    fake = FakeDist()
    monkeypatch.setattr(sglang, "dist", fake)
    cpu, unknown = object(), object()
    boundary = sglang.Boundary({id(cpu): "cpu"})
    boundary.send(torch.tensor([1]), 3, group=cpu)
    assert boundary.isend(torch.tensor([2]), 3, group=unknown, tag=4) == "work"
    assert boundary.irecv(torch.zeros(1), 2, group=cpu) == "work"
    assert [m[:3] for m in boundary.messages] == [("send", "cpu", 3), ("send", "other", 3), ("recv", "cpu", 2)]
    # Calls go on to torch.distributed with their peer, group and tag (0 unless given).
    boundary.send(torch.tensor([3]), 3, group=unknown, tag=5)
    assert boundary.isend(torch.tensor([4]), 1, group=cpu) == "work"
    assert boundary.irecv(torch.zeros(1), 2, group=unknown, tag=6) == "work"
    assert fake.calls == [
        ("send", [1], 3, cpu, 0),
        ("isend", [2], 3, unknown, 4),
        ("irecv", 2, cpu, 0),
        ("send", [3], 3, unknown, 5),
        ("isend", [4], 1, cpu, 0),
        ("irecv", 2, unknown, 6),
    ]
    assert [m[:3] for m in boundary.messages[3:]] == [("send", "other", 3), ("send", "cpu", 1), ("recv", "other", 2)]
    fake.calls.clear()
    seen = []
    boundary.fault = lambda op, tensor, group: seen.append((op, group)) or (None if tensor.item() == 7 else tensor + 1)
    boundary.send(torch.tensor([7]), 3, group=cpu)
    assert boundary.isend(torch.tensor([7]), 3, group=unknown) is None
    boundary.send(torch.tensor([8]), 3, group=cpu)
    assert boundary.isend(torch.tensor([8]), 3, group=cpu, tag=2) == "work"
    assert [c[:2] for c in fake.calls] == [("send", [9]), ("isend", [9])]
    # The fault sees each outgoing message by its group's name.
    assert seen == [("send", "cpu"), ("send", "other"), ("send", "cpu"), ("send", "cpu")]
    assert fake.calls[1] == ("isend", [9], 3, cpu, 2)


@pytest.mark.parametrize(
    "source, message",
    [
        (
            PARALLEL_STATE.replace("class P2PWork", "class P2PWorks"),
            "sglang==9.9.9: sglang/srt/distributed/parallel_state.py no longer defines P2PWork at module level",
        ),
        (
            PARALLEL_STATE.replace("def recv_object", "def recv_obj"),
            "sglang==9.9.9: GroupCoordinator.recv_object is gone from sglang/srt/distributed/parallel_state.py",
        ),
        (
            PARALLEL_STATE.replace("def send_object(self, obj", "def send_object(obj"),
            "sglang==9.9.9: GroupCoordinator.send_object is no longer a method (['obj', 'dst', 'async_send', 'tag'])",
        ),
        (
            PARALLEL_STATE.replace("class GroupCoordinator", "GroupCoordinator = object\n\n\nclass Coordinator"),
            "sglang==9.9.9: GroupCoordinator is no longer a class in sglang/srt/distributed/parallel_state.py",
        ),
        (
            PARALLEL_STATE.replace("class GroupCoordinator", "class Coordinator"),
            (
                "sglang==9.9.9: sglang/srt/distributed/parallel_state.py "
                "no longer defines GroupCoordinator at module level"
            ),
        ),
    ],
)
def test_a_release_that_changed_shape_names_its_version_and_the_definition(tmp_path, monkeypatch, source, message):
    with pytest.raises(sglang.ReleaseChanged) as info:
        sglang.wire_source(release(tmp_path, monkeypatch, source))
    assert str(info.value) == message


def test_module_level_assignments_to_attributes_or_tuples_do_not_stop_the_cut(tmp_path, monkeypatch):
    source = PARALLEL_STATE.replace(
        "TensorMetadata = namedtuple", "platforms.flag = True\nx, y = 1, 2\nTensorMetadata = namedtuple"
    )
    assert "TensorMetadata = namedtuple" in sglang.wire_source(release(tmp_path, monkeypatch, source))


def test_source_without_the_wire_definitions_does_not_load():
    with pytest.raises(sglang.ReleaseChanged) as info:
        sglang.load_wire("x = 1", "ppaux_test_empty_wire", sglang.Boundary({}))
    assert str(info.value) == "ppaux_test_empty_wire: TensorMetadata did not load"


def test_a_wheel_without_the_wire_file_is_a_changed_release(tmp_path, monkeypatch):
    with pytest.raises(sglang.ReleaseChanged) as info:
        sglang.wire_source(release(tmp_path, monkeypatch, path="sglang/other.py"))
    assert str(info.value) == "sglang==9.9.9: the wheel has no sglang/srt/distributed/parallel_state.py"


def test_a_release_that_cannot_be_downloaded_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path))
    asked = []
    monkeypatch.setattr(
        sglang.subprocess,
        "run",
        lambda cmd, **kw: (
            asked.append(cmd)
            or subprocess.CompletedProcess(
                cmd,
                1,
                "",
                "WARNING: retrying\nWARNING: retrying\nERROR: No matching distribution found for sglang==0.0.1\n",
            )
        ),
    )
    with pytest.raises(sglang.ReleaseUnavailable) as info:
        sglang.wheel("0.0.1")
    assert str(info.value) == (
        "sglang==0.0.1 could not be downloaded (offline, or no such release?): "
        "ERROR: No matching distribution found for sglang==0.0.1"
    )
    assert asked[0][-4:] == ["--timeout", "15", "sglang==0.0.1", "-d"] or asked[0][-3:-1] == ["sglang==0.0.1", "-d"]
    assert (tmp_path / "sglang-0.0.1").is_dir()


def test_metadata_reads_either_sides_tensor_metadata_as_a_plain_tuple():
    payload = torch.frombuffer(
        bytearray(pickle.dumps([("a", TensorMetadata("cpu", torch.int64, torch.Size([2, 3]))), ("m", "output")])),
        dtype=torch.uint8,
    )
    assert sglang.metadata_of(payload) == [("a", ("TensorMetadata", "cpu", "torch.int64", (2, 3))), ("m", "output")]


def test_messages_normalize_to_what_both_sides_can_share():
    size, payload = torch.tensor([9]), torch.frombuffer(bytearray(pickle.dumps([("k", 1)])), dtype=torch.uint8)
    log = [
        ("begin", "send"),
        ("send", "cpu", 1, size),
        ("send", "cpu", 1, payload),
        ("send", "device", 1, torch.zeros(2, 3)),
        ("all_gather", "tp", -1, torch.zeros(1)),
    ]
    assert differential.normalize(log) == [
        ("begin", "send"),
        ("send", "cpu", 1, "object size"),
        ("send", "cpu", 1, "object", [("k", 1)]),
        ("send", "device", 1, "torch.float32", (2, 3)),
        ("all_gather", "tp", -1, "torch.float32", (1,)),
    ]
    # A message before any call began is no pickled object: compared by dtype and shape.
    assert differential.normalize([("send", "cpu", 1, size), *log]) == [
        ("send", "cpu", 1, "torch.int64", (1,)),
        *differential.normalize(log),
    ]


def _ok(received, messages=()):
    return Outcome("ok", value={"received": received, "messages": list(messages)})


@pytest.mark.parametrize(
    "model, real, said",
    [
        ({"a": torch.zeros(2)}, {"a": torch.zeros(2)}, None),
        (
            {"a": torch.zeros(2)},
            {"b": torch.zeros(2)},
            "rank 0 received keys ['a'] from ppaux's model, ['b'] from SGLang's code",
        ),
        (
            {"a": torch.zeros(2)},
            {"a": torch.zeros(2, dtype=torch.int8)},
            "rank 0 received ['a']: torch.float32 (2,) vs torch.int8 (2,) (ppaux's model vs SGLang's code)",
        ),
        (
            {"a": torch.zeros(2)},
            {"a": torch.ones(2)},
            "rank 0 received ['a']: values [0.0, 0.0] vs [1.0, 1.0] (ppaux's model vs SGLang's code)",
        ),
        (
            {"a": torch.zeros(2)},
            {"a": torch.zeros(2, device="meta")},
            "rank 0 received ['a']: device cpu vs meta (ppaux's model vs SGLang's code)",
        ),
        (
            {"a": torch.zeros(2)},
            {"a": [0, 0]},
            "rank 0 received ['a']: Tensor vs list (ppaux's model vs SGLang's code)",
        ),
        (
            {"a": [0, 0]},
            {"a": torch.zeros(2)},
            "rank 0 received ['a']: list vs Tensor (ppaux's model vs SGLang's code)",
        ),
        (
            {"m": "output"},
            {"m": "other"},
            "rank 0 received ['m']: 'output' vs 'other' (ppaux's model vs SGLang's code)",
        ),
        ({"m": "output", "a": torch.zeros(2)}, {"m": "output", "a": torch.zeros(2)}, None),
    ],
)
def test_a_difference_in_what_arrived_names_the_rank_and_the_key(model, real, said):
    assert differential.difference({"ppaux": {0: _ok(model)}, "sglang": {0: _ok(real)}}) == said


def test_a_difference_in_how_it_ended_or_in_the_messages_names_both():
    boom, other = RankFailure("RuntimeError", "Invalid scalar type"), RankFailure("RuntimeError", "other\nmore")
    cases = [
        (Outcome("hang"), _ok({}), "rank 0: ppaux's model hung, SGLang's code delivered"),
        (
            Outcome("error", error=boom),
            Outcome("error", error=other),
            "rank 0: ppaux's model raised RuntimeError: Invalid scalar type, SGLang's code raised RuntimeError: other",
        ),
        (
            Outcome("died"),
            Outcome("error", error=RankFailure("KeyError", "")),
            "rank 0: ppaux's model died, SGLang's code raised KeyError: ",
        ),
        (Outcome("error", error=boom), Outcome("error", error=boom), None),
        # Errors are compared by their first line only.
        (Outcome("error", error=other), Outcome("error", error=RankFailure("RuntimeError", "other\nless")), None),
        (
            _ok({}, [("send", "cpu", 1, "object size")]),
            _ok({}, [("send", "device", 1, "object size")]),
            (
                "rank 0, message 0: ppaux's model ('send', 'cpu', 1, 'object size'), "
                "SGLang's code ('send', 'device', 1, 'object size')"
            ),
        ),
        (_ok({}, [("x",)]), _ok({}, [("x",), ("y",)]), "rank 0: ppaux's model exchanged 1 messages, SGLang's code 2"),
    ]
    for model, real, said in cases:
        assert differential.difference({"ppaux": {0: model}, "sglang": {0: real}}) == said
    # A rank that hung alike on both sides does not hide a later rank's difference.
    both = {"ppaux": {0: Outcome("hang"), 1: _ok({"a": 1})}, "sglang": {0: Outcome("hang"), 1: _ok({"b": 1})}}
    assert differential.difference(both) == "rank 1 received keys ['a'] from ppaux's model, ['b'] from SGLang's code"


def test_the_ring_on_ppaux_side_relays_around_every_stage_and_records_its_messages():
    """In threads over the loopback: pp 3 with two attention-TP ranks, the last stage's dict comes back."""
    sent = {
        "next_token_ids": torch.arange(4),
        "__msg_type__": "output",
        "__sampling_observer_output__.s": torch.arange(6.0),
    }
    out = run_loopback(6, 2, lambda ctx: differential.ring(ctx, dict(sent) if ctx.rank >= 4 else {}, "ppaux"), ())
    assert all(o.status == "ok" for o in out.values())
    for o in out.values():
        got = o.value["received"]
        assert list(got) == list(sent) and torch.equal(
            got["__sampling_observer_output__.s"], sent["__sampling_observer_output__.s"]
        )
    first = out[0].value["messages"]
    assert first[:3] == [
        ("begin", "recv"),
        ("recv", "cpu", 4, "object size"),
        (
            "recv",
            "cpu",
            4,
            "object",
            [
                ("next_token_ids", ("TensorMetadata", "cpu", "torch.int64", (4,))),
                ("__msg_type__", "output"),
                ("__sampling_observer_output__.s", ("TensorMetadata", "cpu", "torch.float32", (6,))),
            ],
        ),
    ]
    # Each rank receives its slice and all-gathers it, then forwards its slice to the next stage.
    assert first[3:5] == [("recv", "cpu", 4, "torch.int64", (2,)), ("all_gather", "tp", -1, "torch.int64", (2,))]
    assert first[-1] == ("send", "cpu", 2, "torch.float32", (3,))
    # A difference prints the messages as they are: peers are rank numbers.
    assert repr(first[-1]) == "('send', 'cpu', 2, 'torch.float32', (3,))"
    assert out[4].value["messages"][0] == ("begin", "send") and out[4].value["messages"][-1][:3] == (
        "all_gather",
        "tp",
        -1,
    )


def test_the_ring_without_attention_tp_sends_whole_tensors_stage_to_stage():
    """pp 2, one rank per stage: no all-gather, the whole tensor goes to the next stage."""
    sent = {"next_token_ids": torch.arange(4)}
    out = run_loopback(2, 1, lambda ctx: differential.ring(ctx, dict(sent) if ctx.rank == 1 else {}, "ppaux"), ())
    assert [o.status for o in out.values()] == ["ok", "ok"]
    assert out[0].value["messages"] == [
        ("begin", "recv"),
        ("recv", "cpu", 1, "object size"),
        ("recv", "cpu", 1, "object", [("next_token_ids", ("TensorMetadata", "cpu", "torch.int64", (4,)))]),
        ("recv", "cpu", 1, "torch.int64", (4,)),
        ("begin", "send"),
        ("send", "cpu", 1, "object size"),
        ("send", "cpu", 1, "object", [("next_token_ids", ("TensorMetadata", "cpu", "torch.int64", (4,)))]),
        ("send", "cpu", 1, "torch.int64", (4,)),
    ]
    assert out[1].value["received"]["next_token_ids"].tolist() == [0, 1, 2, 3]


def test_run_hands_each_last_stage_rank_its_dict_and_both_sides_run():
    calls = []

    class World:
        world_size, ag_size = 4, 2

        def run(self, calls_by_rank, timeout):
            calls.append((calls_by_rank, timeout))
            return {r: _ok({}) for r in calls_by_rank}

    out = differential.run(World(), [{"m": 0}, {"m": 1}], timeout=2.0)
    assert sorted(out) == ["ppaux", "sglang"] and len(calls) == 2
    ppaux_calls, timeout = calls[0]
    assert timeout == 2.0 and {r: args for r, (_, args) in ppaux_calls.items()} == {
        0: ({}, "ppaux"),
        1: ({}, "ppaux"),
        2: ({"m": 0}, "ppaux"),
        3: ({"m": 1}, "ppaux"),
    }
    assert {args[1] for _, args in calls[1][0].values()} == {"sglang"}


def test_another_attention_tp_rank_sends_the_same_keys_and_shapes_other_bytes():
    d = {"b": torch.tensor([True, False]), "f": torch.zeros(2, 2), "e": torch.empty(0), "m": "output"}
    other = differential._diverged(d, 1)
    assert list(other) == list(d) and other["m"] == "output" and other["e"].shape == (0,)
    assert other["b"].tolist() == [True, True] and other["f"].shape == (2, 2) and not torch.equal(other["f"], d["f"])
    # Only the last byte changes, xor the member: each member's bytes differ from every other's.
    ids = torch.tensor([5, 6, 7], dtype=torch.int8)
    assert [differential._diverged({"i": ids}, m)["i"].tolist() for m in (1, 2, 3)] == [[5, 6, 6], [5, 6, 5], [5, 6, 4]]
    assert other["f"].flatten()[:3].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "raised, notes, code, err",
    [
        (
            sglang.ReleaseUnavailable("sglang==0.5.23 could not be downloaded (offline, or no such release?): x"),
            None,
            2,
            "ppaux: error: sglang==0.5.23 could not be downloaded (offline, or no such release?): x\n",
        ),
        (
            AssertionError("sglang==0.5.23 and ppaux's model differ (pp=2, attention-TP=1): rank 0: ..."),
            ["Failing test case: ..."],
            1,
            "sglang==0.5.23 and ppaux's model differ (pp=2, attention-TP=1): rank 0: ...\nFailing test case: ...\n",
        ),
        # An assertion without Hypothesis's notes is printed alone.
        (AssertionError("rank 0: ..."), None, 1, "rank 0: ...\n"),
        (None, None, 0, ""),
    ],
)
def test_wire_diff_exit_status_says_how_it_went(monkeypatch, capsys, raised, notes, code, err):
    def check(version, settings):
        assert version == "0.5.23" and settings.deadline is None and settings.max_examples == 40
        if raised is not None:
            if notes is not None:
                raised.__notes__ = notes
            raise raised

    monkeypatch.setattr(differential, "check", check)
    assert main(["wire-diff"]) == code
    out, got = capsys.readouterr()
    assert got == err
    assert out == (
        ""
        if code
        else "ppaux wire-diff: sglang==0.5.23 and ppaux's model agree on every drawn PP dict "
        "(pp x attention-TP: 2x1, 3x1, 2x2, 3x2; profile ci)\n"
    )


def test_wire_diff_refuses_an_unknown_profile(capsys):
    assert main(["wire-diff", "--profile", "quick"]) == 2
    assert capsys.readouterr().err == "ppaux: error: unknown profile 'quick'; choose from ci, dev, nightly, mutation\n"


# send_object and send_tensor_dict as SGLang 0.5.23 writes them, shortened to the synchronous path.
FAITHFUL = PARALLEL_STATE.replace(
    """    def send_object(self, obj, dst, async_send=False, tag=0):
        torch.distributed.send(
            torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8), self.ranks[dst], group=self.cpu_group
        )
        return ("send_object", obj, dst, async_send, tag)""",
    """    def send_object(self, obj, dst, async_send=False, tag=0):
        object_tensor = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
        size_tensor = torch.tensor([object_tensor.numel()], dtype=torch.long, device="cpu")
        torch.distributed.send(size_tensor, self.ranks[dst], group=self.cpu_group, tag=tag)
        torch.distributed.send(object_tensor, self.ranks[dst], group=self.cpu_group, tag=tag)
        return []""",
).replace(
    """    def send_tensor_dict(self, tensor_dict, dst=None, all_gather_group=None, async_send=False):
        return ("send_tensor_dict", _split_tensor_dict(tensor_dict)[0], dst, all_gather_group, async_send)""",
    """    def send_tensor_dict(self, tensor_dict, dst=None, all_gather_group=None, async_send=False):
        metadata_list, tensor_list = _split_tensor_dict(tensor_dict)
        self.send_object(metadata_list, dst=dst)
        for tensor in tensor_list:
            if tensor.numel() == 0:
                continue
            torch.distributed.send(
                tensor, self.ranks[dst], group=self.cpu_group if tensor.is_cpu else self.device_group
            )
        return []""",
)


@pytest.fixture
def link(tmp_path, monkeypatch):
    fake = FakeDist()
    monkeypatch.setattr(sglang, "dist", fake)
    cpu, device = object(), object()
    boundary = sglang.Boundary({id(cpu): "cpu", id(device): "device"})
    wire = sglang.load_wire(
        sglang.wire_source(release(tmp_path, monkeypatch, FAITHFUL)), "ppaux_test_faithful_wire", boundary
    )
    pp = sglang.Coordinator(wire, boundary, [3, 4], 4, cpu, device)
    return sglang.Link(sglang.SGLangRank(pp, None, boundary, wire), 0, 0), fake


def _messages(fake):
    """(metadata, [tensor values]) per send_tensor_dict, from the sends the fake saw."""
    sends = [values for op, values, *_ in fake.calls if op == "send"]
    out = []
    while sends:
        size, payload = sends[0], sends[1]
        assert size == [len(payload)]
        meta = pickle.loads(bytes(payload))
        count = sum(type(v).__name__ == "TensorMetadata" and torch.Size(v.size).numel() > 0 for _, v in meta)
        out.append(
            ([(k, tuple(v) if type(v).__name__ == "TensorMetadata" else v) for k, v in meta], sends[2 : 2 + count])
        )
        sends = sends[2 + count :]
    return out


AUX = "__sampling_observer_output__.scores"


def test_a_clean_send_is_sglangs_own(link):
    link_, fake = link
    link_.send({"ids": torch.tensor([1, 2]), "e": torch.empty(0), AUX: torch.tensor([0.5])})
    ((meta, tensors),) = _messages(fake)
    assert [k for k, _ in meta] == ["ids", "e", AUX] and tensors == [[1, 2], [0.5]]
    assert all(dst == 3 for op, _, dst, *_ in fake.calls if op == "send")


def test_a_fault_changes_sglangs_messages_as_it_changes_a_dict_on_the_model(link):
    from ppaux.relay.faults import BitFlip, DropKey, Reorder

    link_, fake = link
    d = {"ids": torch.tensor([1, 2]), "e": torch.empty(0), AUX: torch.tensor([0.5])}
    link_.send(dict(d), DropKey(), faulty=True)
    ((meta, tensors),) = _messages(fake)
    assert [k for k, _ in meta] == ["ids", "e"] and tensors == [[1, 2]]
    # The metadata travels with the release's own TensorMetadata, which its recv_tensor_dict knows.
    sends = [values for op, values, *_ in fake.calls if op == "send"]
    assert type(pickle.loads(bytes(sends[1]))[0][1]) is link_.rank.wire.TensorMetadata
    fake.calls.clear()
    link_.send(dict(d), BitFlip(bit=0), faulty=True)
    ((_, tensors),) = _messages(fake)
    assert tensors[0] == [1, 2] and tensors[1] != [0.5]
    fake.calls.clear()
    link_.send({"step": torch.tensor([0])}, Reorder(), faulty=True)
    assert fake.calls == []
    link_.send({"step": torch.tensor([1])}, Reorder(), faulty=False)
    assert [tensors for _, tensors in _messages(fake)] == [[[1]], [[0]]]


def test_a_faulty_step_without_a_fault_is_a_clean_send_as_on_the_models_link(link):
    link_, fake = link
    link_.send({"ids": torch.tensor([1, 2]), AUX: torch.tensor([0.5])}, None, faulty=True)
    ((meta, tensors),) = _messages(fake)
    assert [k for k, _ in meta] == ["ids", AUX] and tensors == [[1, 2], [0.5]]


def test_pipeline_and_hop_start_a_world_that_runs_sglangs_code(monkeypatch):
    import ppaux.relay.gloo as gloo
    import ppaux.relay.hop as hop
    import ppaux.relay.pipeline as pipeline

    started = []

    class World:
        def run(self, calls, timeout=None):
            started.append(calls)
            return {0: Outcome("ok", value={"x": 1}), 1: Outcome("ok")}

    monkeypatch.setattr(sglang, "wire_source", lambda version: f"source of {version}")
    monkeypatch.setattr(
        gloo, "world", lambda n, ag_size=1, extension=None: started.append((n, ag_size, extension)) or World()
    )
    assert hop.relay({"x": 1}, channel="sglang") == {"x": 1}
    assert started[0] == (2, 1, (sglang.join, (sglang.DEFAULT_VERSION, f"source of {sglang.DEFAULT_VERSION}")))
    assert started[1] == {0: (sglang._recv_one, ()), 1: (sglang._send_one, ({"x": 1},))}
    config = pipeline.PipelineConfig([pipeline.Stage(), pipeline.Stage()])
    pipeline.run(config, channel="sglang", sglang_version="0.5.19")
    assert started[2] == (2, 1, (sglang.join, ("0.5.19", "source of 0.5.19")))
    assert {plan.wire for _, (plan,) in started[3].values()} == {"sglang"}


def test_a_download_that_brings_no_wheel_is_unavailable_even_if_pip_succeeded(tmp_path, monkeypatch):
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sglang.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, "", ""))
    with pytest.raises(sglang.ReleaseUnavailable) as info:
        sglang.wheel("0.0.5")
    assert str(info.value) == "sglang==0.0.5 could not be downloaded (offline, or no such release?): no output"


def test_the_cache_is_under_the_home_directory_unless_ppaux_cache_dir_says_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("PPAUX_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert sglang.cache_dir() == tmp_path / ".cache" / "ppaux"
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert sglang.cache_dir() == tmp_path / "elsewhere"


def test_a_downloaded_release_lands_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path))

    def pip(cmd, **kw):
        (tmp_path / "sglang-0.0.2" / "sglang-0.0.2-py3-none-any.whl").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sglang.subprocess, "run", pip)
    # The release's folder may already be there, left empty by a download that failed.
    (tmp_path / "sglang-0.0.2").mkdir()
    assert sglang.wheel("0.0.2") == tmp_path / "sglang-0.0.2" / "sglang-0.0.2-py3-none-any.whl"


def test_a_release_is_fetched_by_pip_into_the_cache_once(tmp_path, monkeypatch):
    """The real pip command, pointed by pip's own environment variables at a local folder instead
    of the package index (no network): the wheel lands in the cache, and the next call finds it there."""
    index = tmp_path / "index"
    index.mkdir()
    with zipfile.ZipFile(index / "sglang-0.0.3-py3-none-any.whl", "w") as zf:
        zf.writestr(sglang.WIRE_FILE, textwrap.dedent(PARALLEL_STATE))
        zf.writestr("sglang-0.0.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: sglang\nVersion: 0.0.3\n")
        zf.writestr(
            "sglang-0.0.3.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr("sglang-0.0.3.dist-info/RECORD", "")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(cache))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    fetched = sglang.wheel("0.0.3")
    assert (
        fetched == cache / "sglang-0.0.3" / "sglang-0.0.3-py3-none-any.whl"
        and fetched.read_bytes() == (index / "sglang-0.0.3-py3-none-any.whl").read_bytes()
    )
    monkeypatch.setattr(sglang.subprocess, "run", None)  # cached: pip is not asked again
    assert sglang.wheel("0.0.3") == fetched


@pytest.mark.subprocess
def test_a_release_pip_cannot_find_is_unavailable_with_pips_own_last_line(tmp_path, monkeypatch):
    """The real pip, pointed at an empty local folder instead of the index (no network)."""
    (tmp_path / "index").mkdir()
    monkeypatch.setenv("PPAUX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "index"))
    with pytest.raises(sglang.ReleaseUnavailable) as info:
        sglang.wheel("0.0.4")
    assert str(info.value) == (
        "sglang==0.0.4 could not be downloaded (offline, or no such release?): "
        "ERROR: No matching distribution found for sglang==0.0.4"
    )


def test_a_link_receives_with_sglangs_own_recv(link):
    link_, _ = link
    assert link_.recv() == ("recv_tensor_dict", 0, None)


def test_the_property_checks_every_configuration_and_names_the_release_where_they_part(monkeypatch):
    from hypothesis import HealthCheck, Phase, settings

    worlds = []

    class World:
        def __init__(self, stages, ag, version, source):
            self.world_size, self.ag_size, self.stopped = stages * ag, ag, False
            self.release = (version, source)

        def stop(self):
            self.stopped = True

    monkeypatch.setattr(sglang, "wire_source", lambda version: f"source of {version}")
    monkeypatch.setattr(
        differential,
        "world",
        lambda stages, ag, version, source: worlds.append(World(stages, ag, version, source)) or worlds[-1],
    )
    seen, judged = [], []
    outcomes = {"ppaux": {}, "sglang": {}}
    monkeypatch.setattr(differential, "run", lambda w, sent: seen.append((w.world_size, w.ag_size, sent)) or outcomes)
    monkeypatch.setattr(differential, "difference", lambda got: judged.append(got))
    # No explain phase: it traces every line under torch (tens of seconds); no reproduce blob, which the
    # ci profile would otherwise add as one more note.
    quick = settings(
        max_examples=3,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        print_blob=False,
    )
    differential.check("9.9.9", quick)
    assert [(w.world_size, w.ag_size) for w in worlds] == [(2, 1), (3, 1), (4, 2), (6, 2)] and all(
        w.stopped for w in worlds
    )
    # Every world loads the release asked for; each ring's outcomes are what is judged.
    assert {w.release for w in worlds} == {("9.9.9", "source of 9.9.9")}
    assert judged and all(got is outcomes for got in judged)
    for _, ag, sent in seen:
        assert len(sent) == ag and all(list(d) == list(sent[0]) for d in sent)
    monkeypatch.setattr(differential, "difference", lambda outcomes: "rank 0: ...")
    # The minimal counterexample names the configuration and each draw by what it is.
    for stages, ag, draws in [
        (2, 1, []),
        (2, 2, ["Draw 2 (differs per attention-TP rank): False"]),
    ]:
        with pytest.raises(AssertionError) as info:
            differential.check("9.9.9", quick, configs=((stages, ag),))
        assert str(info.value) == (
            f"sglang==9.9.9 and ppaux's model differ (pp={stages}, attention-TP={ag}): rank 0: ..."
        )
        assert info.value.__notes__ == [
            f"Failing test case: wire_diff_sglang_9_9_9_pp{stages}_tp{ag}(\n    data=data(...),\n)",
            "Draw 1 (sent): {'next_token_ids': tensor(0.),\n '__sampling_observer_output__.0': tensor(0.)}",
            *draws,
        ]
        assert worlds[-1].stopped
    # Where the attention-TP ranks sent other bytes, the draw says they differ.
    monkeypatch.setattr(differential, "run", lambda w, sent: sent)
    monkeypatch.setattr(differential, "difference", lambda sent: "ranks differ" if _differ(sent) else None)
    with pytest.raises(AssertionError) as info:
        differential.check("9.9.9", settings(quick, max_examples=50), configs=((2, 2),))
    assert info.value.__notes__[-1] == "Draw 2 (differs per attention-TP rank): True"


def test_the_shared_world_runs_both_sides(monkeypatch):
    import ppaux.relay.gloo as gloo

    monkeypatch.setattr(gloo, "world", lambda n, ag_size=1, extension=None: (n, ag_size, extension))
    assert differential.world(3, 2, "9.9.9", "src") == (6, 2, (sglang.join, ("9.9.9", "src")))


def test_the_release_matrix_says_which_releases_the_model_matches(monkeypatch, capsys):
    def check(version, settings):
        assert settings.max_examples == 12  # every release is checked in the profile asked for
        if version == "0.5.20":
            raise AssertionError("sglang==0.5.20 and ppaux's model differ (pp=2, attention-TP=1): rank 0: x\nmore")
        if version == "0.5.21":
            raise sglang.ReleaseUnavailable("sglang==0.5.21 could not be downloaded (offline, or no such release?): y")

    monkeypatch.setattr(differential, "check", check)
    assert main(["wire-diff", "--sglang-version", "all", "--profile", "mutation"]) == 1
    assert capsys.readouterr().out == (
        "| SGLang release | ppaux's model | first difference |\n| --- | --- | --- |\n"
        "| 0.5.19 | matches | |\n"
        "| 0.5.20 | differs | sglang==0.5.20 and ppaux's model differ (pp=2, attention-TP=1): rank 0: x |\n"
        "| 0.5.21 | not checked | sglang==0.5.21 could not be downloaded (offline, or no such release?): y |\n"
        "| 0.5.22 | matches | |\n| 0.5.23 | matches | |\n"
        "\nppaux wire-diff: the model matches 3 of 5 releases (profile mutation)\n"
    )
    monkeypatch.setattr(differential, "check", lambda version, settings: None)
    assert main(["wire-diff", "--sglang-version", "all"]) == 0
    assert capsys.readouterr().out.endswith("the model matches 5 of 5 releases (profile ci)\n")


def _sent(ag):
    from hypothesis import strategies as st

    return st.composite(lambda draw: differential.sent_dicts(draw, ag))()


def _differ(sent):
    """Whether another attention-TP rank sends other bytes than the first."""
    return any(torch.is_tensor(v) and not tensors_equal(v, sent[0][k]) for other in sent[1:] for k, v in other.items())


def test_the_wire_diff_draws_pp_dicts_that_gloo_sends_as_they_are():
    """What the last stage sends: CPU tensors, contiguous, at most 2 dims of at most 4, with aux keys."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.data())
    def drawn(data):
        ag = data.draw(st.sampled_from([1, 2]))
        sent = data.draw(_sent(ag))
        assert len(sent) == ag and all(list(d) == list(sent[0]) for d in sent)
        assert any(str(k).startswith("__sampling_observer_output__.") for k in sent[0])
        for d in sent:
            for v in d.values():
                if torch.is_tensor(v):
                    assert v.device.type == "cpu" and v.is_contiguous()
                    assert v.dim() <= 2 and max(v.shape, default=0) <= 4

    drawn()


def test_the_attention_tp_ranks_send_the_same_dict_or_each_other_bytes():
    from hypothesis import HealthCheck, Phase, find, settings

    quick = settings(max_examples=200, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    assert len(find(_sent(1), lambda sent: True, settings=quick)) == 1
    # Both cases are drawn: the same bytes on both ranks (with bytes to send), and other bytes.
    same = find(_sent(2), lambda sent: not _differ(sent) and sent[0]["next_token_ids"].numel() > 0, settings=quick)
    assert len(same) == 2
    other = find(_sent(2), _differ, settings=quick)
    assert list(other[1]) == list(other[0])
