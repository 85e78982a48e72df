"""Named faults on the output relay, their verdicts, and the `ppaux faults` matrix."""

from __future__ import annotations

import json

import pytest
import torch

import ppaux.cli.faults as faults_cli
from ppaux.cli.main import build_parser, main
from ppaux.core.errors import AuxiliaryPPError
from ppaux.core.transport import _OUTPUT_PREFIX
from ppaux.relay import matrix as fault_matrix
from ppaux.relay.channels import LoopbackChannel, StageKilled
from ppaux.relay.faults import (
    FAULTS,
    OUTCOMES,
    BitFlip,
    ChangeDtype,
    ChangeShape,
    Delay,
    Diverge,
    DropKey,
    DuplicateKey,
    Fault,
    KillMidSend,
    MoveDevice,
    NonContiguous,
    RenameKey,
    Reorder,
    Truncate,
    Verdict,
    classify,
    non_contiguous,
)
from ppaux.relay.gloo import Outcome, RankFailure
from ppaux.relay.pipeline import PipelineConfig, Stage, StageReport
from ppaux.relay.wire import TensorMetadata, recv_object, recv_tensor_dict, split_tensor_dict
from ppaux.report.render import faults_markdown
from ppaux.testing import state
from tests.support import HalfGather, SentLog, cli_defaults, cli_help
from tests.typed_reports import read_valid

pytestmark = pytest.mark.wire

D, X, H, S, OK = OUTCOMES
AUX = _OUTPUT_PREFIX + "s"


def _through(fault, d, **kw):
    ch = LoopbackChannel()
    fault.send(ch, d, **kw)
    return recv_tensor_dict(ch)


def test_the_loopback_matrix_is_as_recorded_in_both_modes():
    for integrity in (False, True):
        cells = fault_matrix.matrix(channel="loopback", integrity=integrity, timeout=1.0)
        assert {n: v.outcome for n, v in cells.items()} == fault_matrix.EXPECTED[("loopback", integrity)]


def test_sglang_finding_what_the_default_wire_lets_through_silently():
    """Without integrity these faults corrupt the first stage's output and pop accepts it."""
    silent = sorted(n for n, o in fault_matrix.EXPECTED[("gloo", False)].items() if o == S)
    assert silent == [
        "bit_flip",
        "change_dtype",
        "change_shape",
        "diverge",
        "drop_key",
        "rename_key",
        "reorder",
        "truncate",
    ]
    assert S not in fault_matrix.EXPECTED[("gloo", True)].values()


@pytest.mark.gloo
@pytest.mark.subprocess  # a fresh world per cell and mode
@pytest.mark.parametrize("name", ["truncate", "bit_flip", "diverge", "non_contiguous", "kill_mid_send"])
def test_gloo_cells_where_the_backend_decides(name):
    """On real gloo: a short message is padded silently (caught by I6), a non-contiguous aux
    tensor is refused (caught earlier by I1), a killed sender breaks the receiver's connection."""
    for integrity in (False, True):
        verdict = fault_matrix.run_fault(name, channel="gloo", integrity=integrity, timeout=5.0)
        assert verdict.outcome == fault_matrix.EXPECTED[("gloo", integrity)][name], verdict.detail
    if name == "kill_mid_send":
        assert "Connection" in verdict.detail or "died" in verdict.detail


def test_drop_duplicate_rename_on_tensor_and_non_tensor_keys():
    d = {"a": 1, AUX: torch.tensor([1.0])}
    assert list(_through(DropKey(), d)) == ["a"]
    assert list(_through(DropKey(key="a"), d)) == [AUX]
    assert list(_through(DuplicateKey(key="a"), d)) == ["a", AUX]
    assert _through(DuplicateKey(), d)[AUX].tolist() == [1.0]
    assert list(_through(RenameKey(), d)) == ["a", AUX + "~"]
    assert list(_through(DropKey(key="missing"), d)) == ["a", AUX]
    assert list(_through(DropKey(), {"a": 1})) == ["a"]


def test_tensor_faults():
    d = {AUX: torch.tensor([1.0, 2.0])}
    assert _through(BitFlip(bit=0), d)[AUX].view(torch.int32).tolist() == [
        d[AUX].view(torch.int32)[0].item() ^ 1,
        d[AUX].view(torch.int32)[1].item(),
    ]
    assert _through(Truncate(), d)[AUX].view(torch.uint8)[-1].item() == 0
    assert _through(ChangeDtype(), d)[AUX].dtype == torch.int32
    assert _through(ChangeDtype(), {AUX: torch.tensor([1], dtype=torch.int8)})[AUX].dtype == torch.uint8
    assert _through(ChangeDtype(), {AUX: torch.zeros(1, dtype=torch.complex128)})[AUX].shape == (2,)
    assert _through(ChangeShape(), d)[AUX].shape == (1, 2)
    assert _through(ChangeShape(), {AUX: torch.zeros(2, 2)})[AUX].shape == (4,)
    empty = {AUX: torch.zeros(0)}
    assert _through(BitFlip(), empty)[AUX].shape == (0,)
    ch = LoopbackChannel()
    MoveDevice(key="a").send(ch, {"a": 1})
    assert recv_tensor_dict(ch) == {"a": 1}


def test_message_faults():
    ch = LoopbackChannel()
    state = {}
    Reorder().send(ch, {"step": 0}, faulty=True, state=state)
    Reorder().send(ch, {"step": 1}, faulty=False, state=state)
    assert [recv_tensor_dict(ch)["step"], recv_tensor_dict(ch)["step"]] == [1, 0]
    Reorder().send(ch, {"step": 2}, faulty=False)
    Reorder().send(ch, {"step": 3})
    assert recv_tensor_dict(ch) == {"step": 2} and ch.pending() == 0
    assert _through(Delay(seconds=0.0), {"a": 1}) == {"a": 1}
    with pytest.raises(StageKilled) as info:
        KillMidSend().send(ch, {AUX: torch.zeros(1)})
    assert str(info.value) == "the sending stage died mid-send" and ch.pending() == 2


def test_payload_faults():
    x = torch.arange(6.0).reshape(2, 3)
    view = non_contiguous(x)
    assert not view.is_contiguous() and torch.equal(view, x)
    out = NonContiguous().payload({"s": x, "t": x}, 0)
    assert not out["s"].is_contiguous() and out["t"] is x
    assert Fault().payload({"s": x}, 1) == {"s": x}
    b = torch.tensor([True, False])
    assert Diverge().payload({"s": b}, 1)["s"].tolist() == [False, True]
    assert Diverge().payload({"s": x, "t": x}, 2)["s"].equal(x + 2)


def _config(outputs):
    return PipelineConfig([Stage(), Stage()], outputs=outputs)


def _report(received, popped):
    r = StageReport(0, 0)
    r.received, r.popped = received, popped
    return r


def test_classify_prefers_documented_errors_then_exceptions_then_hangs():
    cfg = _config([None])
    documented = RankFailure("AuxiliaryPPError", "received auxiliary PP output without a sampling observer", "P1")
    assert (
        classify({0: Outcome("error", error=RuntimeError("x")), 1: Outcome("error", error=documented)}, cfg).outcome
        == D
    )
    assert (
        classify({0: Outcome("error", error=AuxiliaryPPError("I3", "s"))}, cfg).detail
        == "I3: auxiliary PP tensor 's' is missing"
    )
    assert (
        classify({0: Outcome("hang"), 1: Outcome("error", error=ValueError(""))}, cfg).detail == "rank 1: ValueError: "
    )
    assert classify({0: Outcome("hang"), 1: Outcome("died")}, cfg).detail == "rank 1 died"
    # A dead rank's exit code in words, as the suite's other findings say it.
    assert (
        classify({0: Outcome("died", exitcode=-11)}, cfg).detail
        == "rank 0 died: killed the process with SIGSEGV (signal 11)"
    )
    assert (
        classify({0: Outcome("died", exitcode=17)}, cfg).detail == "rank 0 died: ended the process with exit status 17"
    )
    assert classify({0: Outcome("ok"), 1: Outcome("hang")}, cfg).outcome == H
    fake = RankFailure("RuntimeError", "received auxiliary PP output without a sampling observer", "Z9")
    assert classify({0: Outcome("error", error=fake)}, cfg).outcome == X
    # An exception from a gloo worker keeps its own type's name.
    assert classify({0: Outcome("error", error=RankFailure("KeyError", "'s'"))}, cfg).detail == "rank 0: KeyError: 's'"


@pytest.mark.parametrize(
    "received, popped, why",
    [
        (None, None, "the output was lost: pop returned None"),
        ({"s": torch.zeros(1)}, None, "the output was lost: pop returned None"),  # the observer saw it, pop dropped it
        ({"t": torch.zeros(1)}, object(), "names ['t'] arrived for ['s']"),
        ({"s": torch.zeros(2)}, object(), "'s' arrived as torch.float32 (2,), sent torch.float32 (1,)"),
        ({"s": torch.empty(1, device="meta")}, object(), "'s' arrived on meta, not on the receiver's cpu"),
        ({"s": torch.ones(1)}, object(), "'s' arrived with other values"),
        ({"s": torch.zeros(1)}, object(), None),
    ],
)
def test_classify_compares_what_the_observer_got_with_what_was_sent(received, popped, why):
    cfg = _config([None, {"s": torch.zeros(1)}])
    verdict = classify({0: Outcome("ok", _report([None, received], [None, popped])), 1: Outcome("ok")}, cfg)
    if why is None:
        assert verdict.outcome == OK and verdict.detail == "the observer received what was sent"
    else:
        assert verdict.outcome == S and verdict.detail == f"step 1, first-stage rank 0: {why}"


def test_every_fault_has_a_name_and_a_doc():
    assert sorted(FAULTS) == sorted(fault_matrix.EXPECTED[("loopback", False)].keys() - {"none"})
    assert all(cls.doc for cls in FAULTS.values())


def test_cli_prints_and_writes_the_matrix(tmp_path, capsys):
    assert main(["faults", "--report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Fault matrix: loopback channel, SGLang's wire (integrity off)")
    assert out.endswith(
        "Silent corruptions: 8 (drop_key, rename_key, bit_flip, truncate, change_dtype, change_shape, reorder, "
        "diverge)\n"
    )
    # A real run's matrix, as the shipped schema describes it.
    data = read_valid(tmp_path / "faults-loopback.json", "faults")
    assert (data["verdict"], data["differs"]) == ("pass", [])
    assert data["cells"]["bit_flip"] == {
        "does": FAULTS["bit_flip"].doc,
        "outcome": S,
        "detail": "step 0, first-stage rank 0: 'scores' arrived with other values",
        "expected": S,
    }
    assert (tmp_path / "faults-loopback.md").read_text() == out


def test_cli_exits_non_zero_when_a_cell_differs(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(
        fault_matrix.EXPECTED, ("loopback", True), {**fault_matrix.EXPECTED[("loopback", True)], "delay": D}
    )
    assert main(["faults", "--integrity", "--report", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == "ppaux faults: delay: harmless, expected documented error\n"
    assert "| delay | the message is sent late | harmless **(differs)** | documented error |" in captured.out
    assert captured.out.endswith("Silent corruptions: 0\n")


def test_cli_rejects_a_non_positive_timeout(capsys):
    assert main(["faults", "--timeout", "0"]) == 2
    assert capsys.readouterr().err == "ppaux: error: --timeout must be positive, got 0.0\n"


_CELLS = {"none": Verdict(OK, "fine"), "bit_flip": Verdict(S, "'scores' | other values"), "delay": Verdict(OK, "")}
_EXPECTED = {"none": OK, "bit_flip": D, "delay": OK}
_DOES = {
    "none": "no fault",
    "bit_flip": "one bit of the tensor's bytes flips on the wire",
    "delay": "the message is sent late",
}


def _markdown(cells, **how) -> str:
    """The matrix's Markdown, as ``ppaux faults`` writes it."""
    return faults_markdown(faults_cli.build_report(cells, **how))


@pytest.mark.parametrize("integrity, mode", [(False, "SGLang's wire (integrity off)"), (True, "integrity mode")])
def test_matrix_markdown_is_exactly_the_documented_table(integrity, mode):
    assert _markdown(_CELLS, channel="gloo", integrity=integrity, expected=_EXPECTED) == (
        f"### Fault matrix: gloo channel, {mode}\n"
        "\n"
        "| fault | what it does | outcome at the popping stage | expected | detail |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| none | no fault | harmless | harmless | fine |\n"
        "| bit_flip | one bit of the tensor's bytes flips on the wire | silent "
        "corruption **(differs)** | documented error | 'scores' / other values |\n"
        "| delay | the message is sent late | harmless | harmless |  |\n"
        "\n"
        "Silent corruptions: 1 (bit_flip)\n"
    )


def test_cli_passes_its_options_to_the_matrix_and_names_the_report_by_mode(tmp_path, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(faults_cli, "matrix", lambda **kw: calls.append(kw) or dict(_CELLS))
    monkeypatch.setitem(fault_matrix.EXPECTED, ("gloo", True), _EXPECTED)
    assert main(["faults", "--channel", "gloo", "--integrity", "--timeout", "2.5", "--report", str(tmp_path)]) == 1
    assert calls == [{"channel": "gloo", "integrity": True, "timeout": 2.5}]
    out = capsys.readouterr().out
    assert out == _markdown(_CELLS, channel="gloo", integrity=True, expected=_EXPECTED)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["faults-gloo-integrity.json", "faults-gloo-integrity.md"]
    assert (tmp_path / "faults-gloo-integrity.md").read_text() == out
    cells = {n: {"does": _DOES[n], **v.as_dict(), "expected": _EXPECTED[n]} for n, v in _CELLS.items()}
    head = {"kind": "faults", "schema_version": 1, "channel": "gloo", "integrity": True, "verdict": "fail"}
    listed = {"differs": ["bit_flip"], "silent_corruptions": ["bit_flip"]}
    assert (tmp_path / "faults-gloo-integrity.json").read_text() == json.dumps(
        {**head, **listed, "cells": cells}, indent=2
    ) + "\n"


def test_without_report_the_matrix_goes_to_a_dot_directory_that_git_ignores(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(faults_cli, "matrix", lambda **kw: dict(_CELLS))
    monkeypatch.setitem(fault_matrix.EXPECTED, ("loopback", False), {n: v.outcome for n, v in _CELLS.items()})
    monkeypatch.chdir(tmp_path)
    assert main(["faults"]) == 0
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        ".ppaux",
        ".ppaux/.gitignore",
        ".ppaux/faults",
        ".ppaux/faults/faults-loopback.json",
        ".ppaux/faults/faults-loopback.md",
    ]
    assert (tmp_path / ".ppaux" / ".gitignore").read_text() == "# Created by ppaux automatically.\n*\n"
    assert (tmp_path / ".ppaux" / "faults" / "faults-loopback.md").read_text() == capsys.readouterr().out


def test_a_faults_report_directory_given_is_exactly_the_one_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(faults_cli, "matrix", lambda **kw: dict(_CELLS))
    monkeypatch.setitem(fault_matrix.EXPECTED, ("loopback", False), {n: v.outcome for n, v in _CELLS.items()})
    monkeypatch.chdir(tmp_path)
    # Made with every missing directory above it.
    assert main(["faults", "--report", "out/today"]) == 0
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "out",
        "out/today",
        "out/today/faults-loopback.json",
        "out/today/faults-loopback.md",
    ]


def test_a_dot_directory_that_cannot_be_made_is_a_usage_error_before_the_matrix_runs(tmp_path, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(faults_cli, "matrix", lambda **kw: calls.append(kw) or dict(_CELLS))
    # Under a file, where no one (root included) can make a directory.
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(state, "STATE", tmp_path / "file" / ".ppaux")
    assert main(["faults"]) == 2
    assert capsys.readouterr().err == f"ppaux: error: cannot create {tmp_path / 'file' / '.ppaux'}: Not a directory\n"
    assert calls == []


def test_faults_help_names_every_option(capsys):
    assert cli_help(capsys, "faults").endswith(
        "-h, --help show this help message and exit"
        " --channel {loopback,gloo,sglang} loopback (threads), gloo (processes "
        "on 127.0.0.1), or sglang (the same, over SGLang's own wire code)"
        " --integrity add/pop with the integrity manifest (off by default, as SGLang)"
        " --report DIR where to write faults-<channel>[-integrity].md/.json "
        "(default .ppaux/faults in the current directory)"
        " --timeout S gloo watchdog per run, seconds (default 1)"
    )


def test_faults_defaults_are_the_ones_its_help_states():
    assert cli_defaults("faults") == {
        "command": "faults",
        "channel": "loopback",
        "integrity": False,
        "report": None,
        "timeout": 1.0,
    }
    assert build_parser().parse_args(["faults", "--timeout", "0.25"]).timeout == 0.25


def test_the_scenario_is_the_documented_one():
    """Three stages (first pops, last samples), two steps of a two-tensor aux output whose every
    tensor differs between steps; diverge runs on two stages of two all-gather ranks each."""
    for integrity in (False, True):
        ring = fault_matrix.scenario("bit_flip", integrity)
        pair = fault_matrix.scenario("diverge", integrity)
        assert (len(ring.stages), ring.ag_size, ring.integrity) == (3, 1, integrity)
        assert (len(pair.stages), pair.ag_size, pair.integrity) == (2, 2, integrity)
        for config in (ring, pair):
            assert isinstance(config.stages[0].observer, fault_matrix.Observer)
            assert all(stage.observer is None for stage in config.stages[1:])
            first, second = config.outputs
            assert [(n, t.dtype, tuple(t.shape)) for n, t in first.items()] == [
                ("scores", torch.float32, (2, 3)),
                ("ids", torch.int64, (2,)),
            ]
            assert [(n, t.dtype, tuple(t.shape)) for n, t in second.items()] == [
                ("scores", torch.float32, (2, 3)),
                ("ids", torch.int64, (2,)),
            ]
            assert all(not torch.equal(first[n], second[n]) for n in first)


@pytest.mark.parametrize("channel", ["loopback", "gloo"])
def test_each_fault_runs_on_fresh_gloo_processes_with_the_watchdog_only_there(channel, monkeypatch):
    from ppaux.relay import gloo

    started, runs = [], []

    class _World:
        def stop(self):
            started.append("stop")

    monkeypatch.setattr(gloo, "world", lambda n, **kw: started.append((n, kw)) or _World())
    monkeypatch.setattr(fault_matrix, "run_pipeline", lambda config, **kw: runs.append((config, kw)) or {})
    monkeypatch.setattr(fault_matrix, "classify", lambda outcomes, config: Verdict(OK, "stub"))
    assert fault_matrix.run_fault("diverge", channel=channel, integrity=False, timeout=2.5) == Verdict(OK, "stub")
    assert fault_matrix.run_fault("none", channel=channel, integrity=False, timeout=2.5) == Verdict(OK, "stub")
    gloo_run = channel == "gloo"
    assert started == ([(4, {"ag_size": 2}), "stop", (3, {"ag_size": 1}), "stop"] if gloo_run else [])
    assert [(type(kw["fault"]), kw["channel"], kw["timeout"]) for _, kw in runs] == [
        (Diverge, channel, 2.5 if gloo_run else None),
        (Fault, channel, 2.5 if gloo_run else None),
    ]


# Exact behaviour of each fault, one mutation-sized piece at a time.

_SENDS_THROUGH_THE_GROUP = [
    Fault(),
    DropKey(key="k"),
    DuplicateKey(key="k"),
    RenameKey(key="k"),
    BitFlip(key="k"),
    Truncate(key="k"),
    ChangeDtype(key="k"),
    ChangeShape(key="k"),
    MoveDevice(key="k"),
    Delay(seconds=0.0),
]


@pytest.mark.parametrize("fault", _SENDS_THROUGH_THE_GROUP, ids=lambda f: f.name)
def test_a_faulty_send_still_slices_for_the_all_gather_group(fault):
    ch = SentLog()
    fault.send(ch, {"ids": torch.arange(4), AUX: torch.arange(4.0)}, all_gather_group=HalfGather())
    assert ch.tensors() == [("cpu", torch.int64, (2,), "cpu", [2, 3]), ("cpu", torch.float32, (2,), "cpu", [2.0, 3.0])]


def test_reordered_steps_are_sliced_for_the_all_gather_group_too():
    ch, state = SentLog(), {}
    Reorder().send(ch, {"x": torch.arange(4)}, all_gather_group=HalfGather(), faulty=True, state=state)
    Reorder().send(ch, {"x": torch.arange(4) + 10}, all_gather_group=HalfGather(), faulty=False, state=state)
    assert [m.values for m in ch.messages if m.dtype == torch.int64 and m.shape == (2,)] == [[12, 13], [2, 3]]


def test_a_send_is_faulty_unless_told_otherwise_and_a_held_step_needs_its_state():
    d = {"ids": torch.arange(2), AUX: torch.tensor([1.0])}
    assert list(_through(DropKey(), d)) == ["ids"]
    assert list(_through(DropKey(), d, faulty=False)) == ["ids", AUX]
    ch = LoopbackChannel()
    Reorder().send(ch, {"step": 0})  # held in a state nobody keeps: never sent
    assert ch.pending() == 0


def test_tensor_index_counts_tensors_only():
    from ppaux.relay.faults import _tensor_index

    meta = lambda: TensorMetadata("cpu", torch.float32, torch.Size([1]))  # noqa: E731
    metadata = [("a", meta()), ("n", 1), ("b", meta()), ("c", meta())]
    assert [_tensor_index(metadata, k) for k in ("a", "b", "c", "n", "zz")] == [0, 1, 2, -1, -1]


def test_faults_on_the_first_tensor_of_the_message():
    """The target is the first tensor sent (index 0): its metadata and its tensor go together."""
    d = {AUX: torch.tensor([7, 8]), "ids": torch.arange(3)}
    got = _through(DropKey(), d)
    assert list(got) == ["ids"] and got["ids"].tolist() == [0, 1, 2]
    ch = LoopbackChannel()
    MoveDevice().send(ch, d)
    assert recv_object(ch) == [
        (AUX, TensorMetadata("meta", torch.int64, torch.Size([2]))),
        ("ids", TensorMetadata("cpu", torch.int64, torch.Size([3]))),
    ]


def test_tensor_faults_pass_meta_tensors_through_untouched():
    for fault in (BitFlip(), Truncate(), ChangeDtype(), ChangeShape()):
        ch = SentLog()
        fault.send(ch, {AUX: torch.empty(3, device="meta")})
        assert ch.tensors() == [("device", torch.float32, (3,), "meta", None)], fault.name


def test_bit_flip_flips_exactly_the_bit_it_names():
    ones = torch.full((4,), 255, dtype=torch.uint8)
    meta = TensorMetadata("cpu", torch.uint8, torch.Size([4]))
    assert BitFlip(bit=17).change("k", meta, ones)[1].tolist() == [255, 255, 253, 255]
    assert BitFlip(bit=7 + 8 * 5).change("k", meta, ones)[1].tolist() == [255, 127, 255, 255]  # byte 5 wraps to byte 1


def test_truncate_drops_exactly_the_last_byte():
    t = torch.tensor([1, 2], dtype=torch.int32)
    (_, _), short = Truncate().change("k", TensorMetadata("cpu", torch.int32, t.shape), t)
    assert short.dtype == torch.uint8 and short.tolist() == t.view(torch.uint8).tolist()[:-1]


def test_metadata_faults_keep_the_device_and_what_they_do_not_change():
    cpu = lambda t: TensorMetadata("cpu", t.dtype, t.shape)  # noqa: E731
    f32, c128 = torch.zeros(2, 3), torch.zeros(3, dtype=torch.complex128)
    assert ChangeDtype().change("k", cpu(f32), f32)[0] == ("k", TensorMetadata("cpu", torch.int32, torch.Size([2, 3])))
    assert ChangeDtype().change("k", cpu(c128), c128)[0] == ("k", TensorMetadata("cpu", torch.int64, torch.Size([6])))
    assert ChangeShape().change("k", cpu(f32), f32)[0] == ("k", TensorMetadata("cpu", torch.float32, torch.Size([6])))


def test_diverge_flips_bools_on_odd_members_and_adds_the_member_otherwise():
    b = torch.tensor([True, False])
    assert [Diverge().payload({"s": b}, m)["s"].tolist() for m in range(4)] == [
        [True, False],
        [False, True],
        [True, False],
        [False, True],
    ]


def test_a_stage_killed_mid_send_has_sent_exactly_the_metadata():
    ch = LoopbackChannel()
    d = {"ids": torch.arange(2), AUX: torch.zeros(1)}
    with pytest.raises(StageKilled):
        KillMidSend().send(ch, d)
    assert recv_object(ch) == split_tensor_dict(d)[0] and ch.pending() == 0


def test_classify_judges_the_device_of_the_first_stage():
    cfg = PipelineConfig([Stage(device="meta"), Stage()], outputs=[{"s": torch.zeros(1)}])
    verdict = classify({0: Outcome("ok", _report([{"s": torch.zeros(1)}], [object()])), 1: Outcome("ok")}, cfg)
    assert verdict == Verdict(S, "step 0, first-stage rank 0: 's' arrived on cpu, not on the receiver's meta")


def test_the_matrix_runs_every_fault_after_none_with_its_options(monkeypatch):
    calls = []
    monkeypatch.setattr(fault_matrix, "run_fault", lambda name, **kw: calls.append((name, kw)) or Verdict(OK, name))
    cells = fault_matrix.matrix(channel="gloo", integrity=True, timeout=2.5)
    assert list(cells) == ["none", *FAULTS] and [c.detail for c in cells.values()] == list(cells)
    assert calls == [(name, {"channel": "gloo", "integrity": True, "timeout": 2.5}) for name in cells]


def test_over_sglangs_code_the_models_column_stands_beside_it(tmp_path, capsys, monkeypatch):
    ran = []

    def cells(**kw):
        ran.append(kw)
        out = dict(_CELLS)
        if kw["channel"] == "sglang":
            out["delay"] = Verdict(fault_matrix.H, "waited")
        else:  # where SGLang's code does as expected and the model does not, the model is wrong
            out["none"] = Verdict(fault_matrix.H, "")
        return out

    monkeypatch.setattr(faults_cli, "matrix", cells)
    monkeypatch.setitem(fault_matrix.EXPECTED, ("sglang", True), _EXPECTED)
    assert main(["faults", "--channel", "sglang", "--integrity", "--timeout", "2.5", "--report", str(tmp_path)]) == 1
    # The model runs in the same mode and under the same watchdog as SGLang's code.
    assert ran == [
        {"channel": "sglang", "integrity": True, "timeout": 2.5},
        {"channel": "gloo", "integrity": True, "timeout": 2.5},
    ]
    out = capsys.readouterr()
    assert "| fault | what it does | SGLang's own code | ppaux's model (gloo) | expected | detail |" in out.out
    assert (
        "| delay | the message is sent late | hang stopped by the watchdog "
        "**(differs)** | harmless **(differs)** | harmless | waited |" in out.out
    )
    assert out.err == (
        "ppaux faults: none: harmless, expected harmless; ppaux's model (gloo): hang stopped by the watchdog\n"
        "ppaux faults: bit_flip: silent corruption, expected documented error\n"
        "ppaux faults: delay: hang stopped by the watchdog, expected harmless; ppaux's model (gloo): harmless\n"
    )
    data = json.loads((tmp_path / "faults-sglang-integrity.json").read_text())
    assert data["cells"]["delay"]["model"] == {"outcome": "harmless", "detail": ""}
