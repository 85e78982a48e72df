"""The N-stage PP ring: wiring preflight, pop/forward orders, round trips over both channels."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from ppaux_strategies import CONTIGUOUS_VIEWS, NotPPObserver, RecordingObserver, aux_payloads, tensors, tensors_equal

from ppaux.core.errors import CATALOG, AuxiliaryPPError
from ppaux.core.transport import _OUTPUT_PREFIX
from ppaux.relay.faults import classify
from ppaux.relay.pipeline import PipelineConfig, Stage, check_wiring, run, sample

pytestmark = pytest.mark.wire

CONTIGUOUS = tensors(views=CONTIGUOUS_VIEWS, device="cpu", max_dims=2, max_side=3)
PAYLOAD = {"scores": torch.arange(6.0).reshape(2, 3), "ids": torch.tensor([1, 2])}


def _ring(n, observer=None, **kw):
    return PipelineConfig([Stage(observer=observer)] + [Stage() for _ in range(n - 1)], **kw)


def _aux(keys):
    return [k for k in keys if isinstance(k, str) and k.startswith(_OUTPUT_PREFIX)]


def test_check_wiring_rejects_the_seed_misconfiguration_with_p1_and_its_fixes():
    """Last stage emits auxiliary output, first stage has no observer: P1 before any step."""
    config = _ring(3, None, outputs=[PAYLOAD])
    with pytest.raises(AuxiliaryPPError) as info:
        run(config)
    assert str(info.value) == CATALOG["P1"].message() == "received auxiliary PP output without a sampling observer"
    assert info.value.code == "P1"
    assert info.value.__notes__ == ["the last stage (stage 2) emits auxiliary output; stage 0 pops it"] + [
        f"fix: {f}" for f in CATALOG["P1"].fixes
    ]


def test_check_wiring_rejects_a_first_stage_observer_without_pp_support_with_p2():
    with pytest.raises(AuxiliaryPPError) as info:
        check_wiring(_ring(2, NotPPObserver(), outputs=[PAYLOAD]))
    assert (
        str(info.value) == "sampling observer does not support pipeline-parallel transport" and info.value.code == "P2"
    )


def test_check_wiring_accepts_a_ring_without_auxiliary_output():
    check_wiring(_ring(2, None, outputs=[None, None]))
    out = run(_ring(2, None, outputs=[None]))
    assert out[0].value.popped == [None] and out[0].value.received == [None]


@pytest.mark.parametrize(
    "config, message",
    [
        (PipelineConfig([Stage()]), "a PP ring needs at least 2 stages, got 1"),
        (
            _ring(2, order="sideways"),
            "order='sideways' must be one of ('pop_then_forward', 'forward_then_pop', 'overlap')",
        ),
        (_ring(2, ag_size=0), "ag_size must be >= 1 and outputs must name at least one step"),
        (_ring(2, outputs=[]), "ag_size must be >= 1 and outputs must name at least one step"),
    ],
)
def test_check_wiring_rejects_rings_that_are_not_rings(config, message):
    with pytest.raises(ValueError) as info:
        check_wiring(config)
    assert str(info.value) == message


def test_run_rejects_unknown_channels():
    with pytest.raises(ValueError) as info:
        run(_ring(2), channel="nccl")
    assert str(info.value) == "channel='nccl' must be one of ('loopback', 'gloo', 'sglang')"


@given(
    n=st.integers(2, 4),
    logprobs=st.booleans(),
    outputs=st.lists(st.none() | aux_payloads(tensors=CONTIGUOUS), min_size=1, max_size=2),
)
def test_ring_round_trip_over_loopback(n, logprobs, outputs):
    """Any ring, any outputs: stage 0's observer gets equal tensors on its device, pop takes every
    aux key, no later stage ever sees one, and the sampled keys come back round the ring."""
    config = _ring(n, RecordingObserver(), outputs=outputs, logprobs=logprobs)
    out = run(config)
    assert all(o.status == "ok" for o in out.values())
    assert classify(out, config).outcome == "harmless"
    first = out[0].value
    for step, payload in enumerate(outputs):
        if payload is None:
            assert first.popped[step] is None
            continue
        assert sorted(first.received[step]) == sorted(payload)
        for name, tensor in payload.items():
            got = first.received[step][name]
            assert tensors_equal(got, tensor) and got.device.type == "cpu"
    for rank in range(n):
        report = out[rank].value
        assert all(not _aux(keys) for keys in (report.keys if rank else [])), "a later stage saw aux keys"
        assert all(not _aux(d) for d in report.final)
    last = out[n - 1].value
    for step, d in enumerate(last.final):
        want = sample(step, config, "cpu")
        assert list(d) == list(want) + ["__msg_type__"] and d["__msg_type__"] == "output"
        for key, value in want.items():
            assert torch.equal(d[key], value)


def test_forward_then_pop_relays_aux_keys_to_every_later_stage():
    """The other order: pop still works on stage 0, but every later stage receives the aux keys."""
    config = _ring(3, RecordingObserver(), outputs=[PAYLOAD], order="forward_then_pop")
    out = run(config)
    assert classify(out, config).outcome == "harmless"
    assert (
        _aux(out[1].value.keys[0]) == _aux(out[2].value.keys[0]) == [_OUTPUT_PREFIX + "scores", _OUTPUT_PREFIX + "ids"]
    )
    assert not _aux(out[0].value.final[0])


def test_overlapping_pop_breaks_the_forward_mid_iteration():
    """A pop that lands while the forward iterates the same dict: the forward dies, the ring stalls."""
    config = _ring(3, RecordingObserver(), outputs=[PAYLOAD], order="overlap")
    out = run(config)
    assert out[0].status == "error" and isinstance(out[0].error, RuntimeError)
    assert str(out[0].error) == "dictionary changed size during iteration"
    assert {out[1].status, out[2].status} == {"hang"}
    assert classify(out, config).outcome == "other exception"


def test_a_pop_midway_lands_after_the_first_entry_and_keeps_what_it_returned():
    from ppaux.relay.pipeline import _PopMidway

    midway = _PopMidway({"a": 1, "b": 2}, lambda d: f"popped {sorted(d)}")
    items = midway.items()
    assert next(items) == ("a", 1) and not hasattr(midway, "popped")
    assert list(items) == [("b", 2)] and midway.popped == "popped ['a', 'b']"


def test_overlap_without_aux_output_is_harmless():
    config = _ring(2, RecordingObserver(), outputs=[None], order="overlap")
    assert classify(run(config), config).outcome == "harmless"


@pytest.mark.gloo
@pytest.mark.subprocess
def test_ring_over_gloo_processes_matches_loopback():
    """Three stages in three processes, two steps, logprobs on: same reports as the loopback."""
    config = _ring(3, RecordingObserver(), outputs=[PAYLOAD, {"scores": torch.ones(2, 3)}], logprobs=True)
    gl, lo = run(config, channel="gloo"), run(config)
    assert classify(gl, config).outcome == classify(lo, config).outcome == "harmless"
    for rank in range(3):
        assert gl[rank].value.keys == lo[rank].value.keys
    for step in range(2):
        for name, tensor in gl[0].value.received[step].items():
            assert tensors_equal(tensor, lo[0].value.received[step][name])


def test_all_gather_ring_is_lossless_for_rank_identical_outputs():
    config = _ring(2, RecordingObserver(), outputs=[PAYLOAD, PAYLOAD], ag_size=2)
    out = run(config)
    assert classify(out, config).outcome == "harmless"
    assert tensors_equal(out[1].value.received[0]["scores"], PAYLOAD["scores"])


def test_the_last_stage_samples_the_documented_entries_on_its_device():
    d = sample(1, PipelineConfig([Stage(), Stage()], batch_size=3, logprobs=True), "meta")
    assert list(d) == ["next_token_ids", "next_token_logprobs"] and {t.device.type for t in d.values()} == {"meta"}
    d = sample(2, PipelineConfig([Stage(), Stage()], batch_size=3, logprobs=True), "cpu")
    assert d["next_token_ids"].tolist() == [2, 3, 4] and torch.equal(
        d["next_token_logprobs"], torch.tensor([0.0, -1 / 3, -2 / 3])
    )
    assert d["next_token_logprobs"].dtype == torch.float32
    assert list(sample(0, PipelineConfig([Stage(), Stage()]), "cpu")) == ["next_token_ids"]


def test_a_loopback_rank_talks_to_each_peer_over_its_own_pair_of_queues():
    from ppaux.relay.channels import Stall, mailbox
    from ppaux.relay.pipeline import LoopbackContext

    links = {(a, b): mailbox() for a in range(2) for b in range(2)}
    stall = Stall(alive=2)
    ch = LoopbackContext(0, links, None, stall, 2.5).channel(1)
    assert (ch.outbox, ch.inbox, ch.stall, ch.timeout) == (links[(0, 1)], links[(1, 0)], stall, 2.5)


def test_loopback_ranks_get_all_gather_members_only_in_groups_of_two_or_more():
    from ppaux.relay.pipeline import run_loopback

    solo = run_loopback(2, 1, lambda ctx: ctx.all_gather, ())
    assert {r: (o.status, o.value) for r, o in solo.items()} == {0: ("ok", None), 1: ("ok", None)}
    pairs = run_loopback(
        4,
        2,
        lambda ctx: (
            ctx.all_gather.rank,
            ctx.all_gather.size,
            ctx.all_gather.all_gather(torch.tensor([ctx.rank])).tolist(),
        ),
        (),
    )
    assert {r: o.value for r, o in pairs.items()} == {
        0: (0, 2, [0, 1]),
        1: (1, 2, [0, 1]),
        2: (0, 2, [2, 3]),
        3: (1, 2, [2, 3]),
    }


def test_a_rank_that_is_still_working_is_not_taken_for_stuck():
    """Rank 0 is done, rank 1 computes before it sends, rank 2 waits for it: only rank 2 waits,
    and one of two live ranks waiting is not a stuck world."""
    import time

    from ppaux.relay.pipeline import run_loopback
    from ppaux.relay.wire import recv_tensor_dict, send_tensor_dict

    def fn(ctx):
        if ctx.rank == 1:
            time.sleep(0.2)
            send_tensor_dict(ctx.channel(2), {"x": torch.arange(2)})
        if ctx.rank == 2:
            return recv_tensor_dict(ctx.channel(1))["x"].tolist()

    out = run_loopback(3, 1, fn, ())
    assert {r: (o.status, o.value) for r, o in out.items()} == {0: ("ok", None), 1: ("ok", None), 2: ("ok", [0, 1])}


def test_all_gather_gives_up_after_the_timeout_it_is_given():
    """Rank 1 never joins the gather: rank 0 gives up after ``timeout`` (0.2 s), which rank 1
    sees as the world's failure while it still waits (for up to 20 s)."""
    from ppaux.relay.pipeline import run_loopback

    def fn(ctx):
        if ctx.rank == 0:
            return ctx.all_gather.all_gather(torch.zeros(1))
        return ctx.stall.failed.wait(20.0)

    out = run_loopback(2, 2, fn, (), timeout=0.2)
    assert (out[0].status, out[1].status, out[1].value) == ("hang", "ok", True)


def test_an_error_in_a_rank_is_its_outcome():
    from ppaux.relay.pipeline import run_loopback

    def fn(ctx):
        if ctx.rank == 1:
            raise ValueError("boom")

    out = run_loopback(2, 1, fn, ())
    assert (out[0].status, out[1].status, str(out[1].error)) == ("ok", "error", "boom")


def test_each_loopback_rank_gets_its_own_deep_copy_of_the_plan(monkeypatch):
    import ppaux.relay.pipeline as pipeline

    seen = []
    config = _ring(2, RecordingObserver(), outputs=[PAYLOAD])
    plan = pipeline.Plan(config)
    monkeypatch.setattr(pipeline, "run_rank", lambda ctx, p: seen.append(p))
    pipeline._run_copy(None, plan)
    (copied,) = seen
    assert (
        copied is not plan
        and copied.config is not plan.config
        and copied.config.stages[0].observer is not config.stages[0].observer
    )


def _summary(out):
    """What each rank ended with, all-gather members folded together (they must agree)."""

    def values(d):
        return [(k, v.tolist() if torch.is_tensor(v) else v) for k, v in d.items()]

    return {
        r: (o.status, None if o.value is None else (o.value.keys, [values(d) for d in o.value.final]))
        for r, o in out.items()
    }


@pytest.mark.parametrize("order", ["pop_then_forward", "forward_then_pop", "overlap"])
@pytest.mark.parametrize("outputs", [[PAYLOAD, None], [None, None]], ids=["aux", "no-aux"])
def test_all_gather_groups_of_two_change_nothing_for_rank_identical_outputs(order, outputs):
    """Metamorphic: every stage twice over (two all-gather ranks each) sees what one rank sees."""
    one, two = (_ring(3, RecordingObserver(), outputs=outputs, order=order, ag_size=ag) for ag in (1, 2))
    single, pairs = run(one), run(two)
    assert classify(single, one).outcome == classify(pairs, two).outcome
    if any(o.status != "ok" for o in single.values()):
        return  # a failed ring: which member of a pair fails first is a race
    assert {r: _summary(single)[r // 2] for r in pairs} == _summary(pairs)
    assert [(o.value.stage, o.value.member) for o in pairs.values() if o.value is not None] == [
        (r // 2, r % 2) for r, o in pairs.items() if o.value is not None
    ]


def test_a_step_without_aux_output_reports_nothing_received():
    out = run(_ring(2, RecordingObserver(), outputs=[PAYLOAD, None, PAYLOAD]))
    received = out[0].value.received
    assert [r is None for r in received] == [False, True, False] and received[2] is not received[0]


def test_the_last_stages_receiver_counts_itself_alive_and_waits_where_the_stall_sees_it():
    import time

    from ppaux.relay.channels import Stall
    from ppaux.relay.pipeline import _Receiver

    stall = Stall(alive=3)
    seen = []

    def recv():
        # Wait (at most 5 s) for the rank's thread to join in results(): the stall must see it waiting.
        deadline = time.monotonic() + 5.0
        while not stall.waiters and time.monotonic() < deadline:
            time.sleep(0.001)
        seen.append((stall.alive, len(stall.waiters)))
        return len(seen)

    rx = _Receiver(recv, 2, stall)
    assert rx.thread.daemon is True and stall.alive == 4
    assert rx.results() == [1, 2]
    assert seen == [(4, 1), (4, 1)] and stall.alive == 3 and stall.waiters == {}


def test_a_receiver_error_is_raised_by_results_and_it_stops_counting_itself():
    from ppaux.relay.channels import Stall
    from ppaux.relay.pipeline import _Receiver

    stall = Stall(alive=1)

    def recv():
        raise KeyError("gone")

    rx = _Receiver(recv, 3, stall)
    with pytest.raises(KeyError):
        rx.results()
    assert stall.alive == 1
    assert _Receiver(lambda: 7, 1, None).results() == [7]


def test_run_hands_its_fault_step_and_timeout_to_the_channel(monkeypatch):
    import ppaux.relay.pipeline as pipeline
    from ppaux.relay import gloo
    from ppaux.relay.faults import DropKey

    calls = []
    monkeypatch.setattr(
        pipeline,
        "run_loopback",
        lambda n, ag, fn, args, **kw: calls.append(("loopback", n, ag, args[0].fault_step, kw)) or {},
    )

    class _World:
        def run(self, work, timeout=None):
            calls.append(("gloo", len(work), None, work[0][1][0].fault_step, {"timeout": timeout}))
            return {}

    extensions = []
    monkeypatch.setattr(gloo, "world", lambda n, ag_size, extension=None: extensions.append(extension) or _World())
    config = _ring(2, RecordingObserver(), outputs=[PAYLOAD, PAYLOAD])
    run(config, fault=DropKey(), fault_step=1, timeout=2.5)
    run(config)
    run(config, channel="gloo", fault=DropKey(), fault_step=1, timeout=2.5)
    run(config, channel="gloo")
    assert calls == [
        ("loopback", 2, 1, 1, {"timeout": 2.5}),
        ("loopback", 2, 1, 0, {}),
        ("gloo", 2, None, 1, {"timeout": 2.5}),
        ("gloo", 2, None, 0, {"timeout": None}),
    ]
    # The model's gloo ranks load no SGLang release.
    assert extensions == [None, None]


def test_a_rank_that_returns_leaves_the_count_of_live_threads():
    import time

    from ppaux.relay.pipeline import run_loopback

    def fn(ctx):
        if ctx.rank == 1:  # rank 0 returns at once; wait (at most 5 s) to see it counted out
            deadline = time.monotonic() + 5.0
            while ctx.stall.alive != 1 and time.monotonic() < deadline:
                time.sleep(0.001)
            return ctx.stall.alive

    assert run_loopback(2, 1, fn, ())[1].value == 1


def test_a_last_stage_on_another_device_samples_and_sends_its_output_from_there():
    """The last stage on meta: what stage 0 receives and forwards carries the last stage's device type."""
    config = _ring(2, RecordingObserver(), outputs=[PAYLOAD])
    config.stages[1].device = "meta"
    out = run(config)
    assert [o.status for o in out.values()] == ["ok", "ok"]
    first = out[0].value
    assert first.keys == [["next_token_ids", _OUTPUT_PREFIX + "scores", _OUTPUT_PREFIX + "ids", "__msg_type__"]]
    assert {k: (t.device.type, t.dtype, tuple(t.shape)) for k, t in first.received[0].items()} == {
        "scores": ("meta", torch.float32, (2, 3)),
        "ids": ("meta", torch.int64, (2,)),
    }
    assert first.final[0]["next_token_ids"].device.type == "meta"


def test_a_fault_spoils_only_the_step_it_is_aimed_at():
    """diverge at step 0 of two: step 1's output arrives as sent."""
    from ppaux.relay.faults import Diverge

    step1 = {"scores": torch.tensor([[5.0, 6.0]]), "ids": torch.tensor([7, 8])}
    out = run(_ring(2, RecordingObserver(), outputs=[PAYLOAD, step1], ag_size=2), fault=Diverge(), fault_step=0)
    for rank in (0, 1):
        received = out[rank].value.received
        assert not tensors_equal(received[0]["scores"], PAYLOAD["scores"])
        assert {k: t.tolist() for k, t in received[1].items()} == {"scores": [[5.0, 6.0]], "ids": [7, 8]}


@pytest.mark.parametrize("order", ["forward_then_pop", "overlap"])
def test_integrity_pops_each_step_as_its_own_batch_in_every_order(order):
    """A reordered step reaches stage 0 first: its pop names the other batch (I7), whatever the order."""
    from ppaux.relay.faults import Reorder

    config = _ring(3, RecordingObserver(), outputs=[PAYLOAD, PAYLOAD], integrity=True, order=order)
    out = run(config, fault=Reorder())
    assert out[0].status == "error" and type(out[0].error) is AuxiliaryPPError
    assert (out[0].error.code, str(out[0].error)) == ("I7", "auxiliary PP output belongs to another batch: 1")


def test_an_overlapping_pop_with_integrity_still_breaks_the_forward_of_a_sound_ring():
    """The pop midway verifies step 0 as batch 0 and succeeds; the forward then dies as without integrity."""
    out = run(_ring(3, RecordingObserver(), outputs=[PAYLOAD], integrity=True, order="overlap"))
    assert out[0].status == "error" and type(out[0].error) is RuntimeError
    assert str(out[0].error) == "dictionary changed size during iteration"


def test_integrity_after_the_forward_pops_every_step_of_a_sound_ring():
    config = _ring(3, RecordingObserver(), outputs=[PAYLOAD, PAYLOAD], integrity=True, order="forward_then_pop")
    out = run(config)
    assert [o.status for o in out.values()] == ["ok", "ok", "ok"]
    assert [sorted(r) for r in out[0].value.received] == [["ids", "scores"], ["ids", "scores"]]
