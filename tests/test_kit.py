"""The observer conformance kit: each check failing once and passing once."""

from __future__ import annotations

import functools
import inspect
import os
import random
import re
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import Flaky, InvalidArgument

from ppaux.isolation.clock import safety_limit
from ppaux.isolation.status import Frame
from ppaux.relay.hop import relay as hop_relay
from ppaux.testing import Implementation, KitFailure, check_observer, containment, load
from ppaux.testing import kit as testing
from ppaux.testing.calls import Crash, Hang, SuiteGuard
from ppaux.testing.containment import prime_seed
from ppaux.testing.findings import message
from ppaux.testing.hypothesis_api import replace_seed_generator
from tests import kit_planted as planted

IMPLS = Path(__file__).resolve().parent / "impls"


class Out:
    """An output whose ``to_pp_tensors()`` returns ``payload`` as given."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def to_pp_tensors(self) -> Any:
        return self.payload

    def __repr__(self) -> str:
        return f"Out({self.payload!r})"


class Obs:
    """Rebuilds an :class:`Out` from exactly what it receives."""

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Out:
        return Out(dict(tensors))


def outs(**payload: Any) -> st.SearchStrategy[Out]:
    return st.just(Out(payload))


def good() -> st.SearchStrategy[Out]:
    """Plain, contiguous, namespaced tensors of a few dtypes and shapes, empty ones included."""
    tensor = st.sampled_from([torch.float32, torch.int64, torch.bool, torch.float8_e4m3fn]).flatmap(
        lambda dt: st.sampled_from([(), (0,), (3,), (2, 2)]).map(
            lambda shape: torch.arange(4).resize_(*shape).to(dt) if shape else torch.tensor(1).to(dt)
        )
    )
    return st.dictionaries(st.sampled_from(["kit.a", "kit.b", "my_plugin.scores"]), tensor, min_size=1).map(Out)


def kit_failure(factory: Any, strategy: Any, **kwargs: Any) -> KitFailure:
    with pytest.raises(KitFailure) as info:
        check_observer(factory, strategy, **kwargs)
    return info.value


@pytest.fixture
def in_process():
    """The check runs in this process, as under a supervisor (a guard installed for the test).
    Unsupervised, a passing check runs only in a forked child: what its observer records stays there.
    The catalog's findings are decided the same way wherever the check runs: their tests take this path,
    which skips the unsupervised path's second run of a failing check. That path (a check passing,
    failing, flaky, crashing or hanging in its child) has tests of its own, unsupervised."""
    with SuiteGuard().installed():
        yield


def test_a_well_behaved_pair_passes_every_check():
    check_observer(Obs, good())


def _primary_keys(db: InMemoryExampleDatabase) -> set:
    return {k for k in db.data if not k.endswith((b".secondary", b".pareto", b".observations"))}


def test_the_example_database_key_is_per_observer_and_strategy(in_process):
    db = InMemoryExampleDatabase()
    empty = st.just(Out({}))
    for factory in (Obs, NoneObs, functools.partial(Obs), Obs):
        kit_failure(factory, empty, settings=settings(database=db))
    kit_failure(Obs, st.just(Out({"": torch.zeros(1)})), settings=settings(database=db))
    assert len(_primary_keys(db)) == 4


def test_the_example_database_key_is_stable_across_runs(in_process):
    db = InMemoryExampleDatabase()
    for _ in range(2):
        kit_failure(lambda: None, st.just(Out({})), settings=settings(database=db))
    assert len(_primary_keys(db)) == 1


@pytest.mark.parametrize(
    "factory, key",
    [
        (Obs, "tests.test_kit.Obs:just(1)"),
        (functools.partial(Obs), "functools.partial:just(1)"),
        ([].append, ".list.append:just(1)"),  # __module__ is None
        (str.upper, ".str.upper:just(1)"),  # no __module__ at all
    ],
)
def test_the_example_database_key_is_made_of_names(factory, key):
    assert testing.database_key(factory, st.just(1)) == key


def test_two_ways_of_failing_are_reported_as_one_failure(in_process):
    """Hypothesis would raise an ExceptionGroup for two distinct bugs; the kit reports the first."""
    # 0 passes, odd numbers are A2 and even ones A3: shrinking either finds the other.
    two = st.integers(0, 50).map(
        lambda n: Out({"kit.a": torch.zeros(1)}) if n == 0 else Out({}) if n % 2 else Out({"": torch.zeros(1)})
    )
    failure = kit_failure(
        Obs,
        two,
        settings=settings(database=None, derandomize=True, max_examples=50, phases=[Phase.generate, Phase.shrink]),
    )
    assert failure.code in ("A2", "A3")


def test_the_kit_relays_over_the_channel_to_each_device_it_is_given(monkeypatch):
    import ppaux.relay.hop as hop

    hops = []
    real = hop.relay
    monkeypatch.setattr(
        testing, "relay", lambda d, **kw: hops.append(kw) or real(d, channel="loopback", device=kw["device"])
    )
    check_observer(
        Obs,
        outs(**{"kit.a": torch.zeros(2)}),
        channel="gloo",
        devices=["cpu", "meta"],
        settings=settings(database=None, max_examples=1),
    )
    assert hops == [
        {"channel": "gloo", "device": torch.device("cpu")},
        {"channel": "gloo", "device": torch.device("meta")},
    ]


# Catalog errors, reported with the catalog's fixes.


def test_output_without_pp_support_is_a1(in_process):
    assert str(kit_failure(Obs, st.just(object()))) == message("A1")


def test_empty_payload_is_a2(in_process):
    assert str(kit_failure(Obs, outs())) == message("A2")


def test_empty_name_is_a3(in_process):
    assert str(kit_failure(Obs, st.just(Out({"": torch.zeros(1)})))) == message("A3")


def test_non_tensor_value_is_a4_with_its_name(in_process):
    failure = kit_failure(Obs, outs(**{"kit.a": [0.5]}))
    assert str(failure) == message("A4", name="kit.a")
    assert failure.code == "A4" and failure.name == "kit.a"


class TwiceMapping(Mapping):
    """A payload mapping whose items name one tensor twice."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getitem__(self, key: str) -> torch.Tensor:
        return torch.zeros(1)

    def __iter__(self):
        return iter([self.name, self.name])

    def __len__(self) -> int:
        return 2


def test_name_sent_twice_is_a5(in_process):
    assert str(kit_failure(Obs, st.just(Out(TwiceMapping("kit.a"))))) == message("A5", name="kit.a")


def test_factory_returning_none_is_p1(in_process):
    assert str(kit_failure(lambda: None, good())) == message("P1")


def test_observer_without_pp_support_is_p2(in_process):
    assert str(kit_failure(object, good())) == message("P2")


class NoneObs:
    def from_pp_tensors(self, tensors: Any) -> None:
        return None


def test_observer_returning_none_is_p4(in_process):
    assert str(kit_failure(NoneObs, good())) == message("P4")


class RaisingOut:
    def to_pp_tensors(self) -> Any:
        raise RuntimeError("to_pp_tensors is broken")


def test_other_errors_of_to_pp_tensors_propagate_unchanged(in_process):
    with pytest.raises(RuntimeError) as info:
        check_observer(Obs, st.just(RaisingOut()))
    assert type(info.value) is RuntimeError and str(info.value) == "to_pp_tensors is broken"


# What the wire refuses or loses.


def test_non_contiguous_tensor_is_k1(in_process):
    assert str(kit_failure(Obs, outs(**{"kit.a": torch.zeros(2, 2).t()}))) == message("K1", name="kit.a")


def test_quantized_dtype_is_k2(in_process):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.zeros(2), 1.0, 0, torch.qint8)
    assert str(kit_failure(Obs, outs(**{"kit.q": q}))) == message("K2", name="kit.q", detail="torch.qint8")


def test_tensor_subclass_is_k3(in_process):
    p = torch.nn.Parameter(torch.zeros(2))
    assert str(kit_failure(Obs, outs(**{"kit.p": p}))) == message("K3", name="kit.p", detail="Parameter")


def test_sparse_layout_is_k4(in_process):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = torch.sparse_coo_tensor([[0]], [1.0], (2,))
    assert str(kit_failure(Obs, outs(**{"kit.s": s}))) == message("K4", name="kit.s", detail="torch.sparse_coo")


@pytest.mark.parametrize(
    "name, detail",
    [
        ("__sampling_observer_output__.x", "the reserved prefix (add would write it twice)"),
        ("next_token_ids", "a key SGLang writes into the same PP dict"),
        ("spec_accept_lens", "a key SGLang writes into the same PP dict"),
        ("draft_extra", "a key SGLang writes into the same PP dict"),
        ("scores", "a generic name another output in the same PP dict may use (add would raise A5)"),
    ],
)
def test_colliding_name_is_k5(name, detail, in_process):
    assert str(kit_failure(Obs, outs(**{name: torch.zeros(1)}))) == message("K5", name=name, detail=detail)


def test_relay_failure_is_k6(monkeypatch, in_process):
    def refuse(tensors, *, channel, device):
        raise RuntimeError("input tensor has to be contiguous")

    monkeypatch.setattr(testing, "relay", refuse)
    failure = kit_failure(Obs, good())
    assert str(failure) == message("K6", detail="loopback")
    assert str(failure.__cause__) == "input tensor has to be contiguous"


def test_relay_keeps_the_device_type_and_only_remaps_within_it():
    sent = {"a": torch.arange(3), "b": torch.zeros(0), "c": [1, "x"]}
    got = hop_relay(sent, channel="loopback", device=torch.device("meta"))
    assert [k for k in got] == ["a", "b", "c"] and got["c"] == [1, "x"] and got["c"] is not sent["c"]
    assert got["a"].device.type == "cpu" and got["a"].tolist() == [0, 1, 2] and got["a"] is not sent["a"]
    assert got["b"].shape == (0,)


# What the observer does with what arrives.


class ReadsMore:
    def from_pp_tensors(self, tensors: Any) -> Out:
        return Out({"kit.a": tensors["kit.a"], "kit.ids": tensors["kit.ids"]})


def test_observer_reading_an_unsent_name_is_k7(in_process):
    assert str(kit_failure(ReadsMore, outs(**{"kit.a": torch.zeros(1)}))) == message("K7", name="kit.ids")


class LooksUpReceivedName:
    table: dict = {}

    def from_pp_tensors(self, tensors: Any) -> Out:
        return Out({name: self.table[name] for name in tensors})


def test_key_error_on_a_sent_name_is_k8(in_process):
    failure = kit_failure(LooksUpReceivedName, outs(**{"kit.a": torch.zeros(1)}))
    assert str(failure) == message("K8", detail="KeyError: 'kit.a'", device="cpu")


class BareKeyError:
    def from_pp_tensors(self, tensors: Any) -> Out:
        raise KeyError


def test_key_error_without_a_name_is_k8(in_process):
    assert str(kit_failure(BareKeyError, good())) == message("K8", detail="KeyError: ", device="cpu")


class RaisesLikeAdd:
    def from_pp_tensors(self, tensors: Any) -> Out:
        raise RuntimeError("auxiliary PP output must contain at least one tensor")


def test_observer_error_reading_like_an_add_error_is_k8_not_a2(in_process):
    failure = kit_failure(RaisesLikeAdd, outs(**{"kit.a": torch.zeros(1)}))
    assert str(failure) == message(
        "K8", detail="RuntimeError: auxiliary PP output must contain at least one tensor", device="cpu"
    )


class ExpectsCuda:
    def from_pp_tensors(self, tensors: Any) -> Out:
        if any(t.device.type != "cuda" for t in tensors.values()):
            raise RuntimeError("expected cuda tensors")
        return Out(dict(tensors))  # pragma: no cover - only with the receiver on cuda


def test_observer_assuming_the_senders_device_is_k8(in_process):
    failure = kit_failure(ExpectsCuda, good(), devices=["cpu"])
    assert str(failure) == message("K8", detail="RuntimeError: expected cuda tensors", device="cpu")


class Tweaks:
    def __init__(self, change: Any) -> None:
        self.change = change

    def from_pp_tensors(self, tensors: Any) -> Any:
        return self.change(dict(tensors))


@pytest.mark.parametrize(
    "change, detail",
    [
        (lambda d: Out({"kit.b": d["kit.a"]}), "names ['kit.a'] became ['kit.b']"),
        (lambda d: Out({"kit.a": d["kit.a"].half()}), "'kit.a' dtype torch.float32 became torch.float16"),
        (lambda d: Out({"kit.a": d["kit.a"].reshape(-1)}), "'kit.a' shape (1, 2) became (2,)"),
        (lambda d: Out({"kit.a": d["kit.a"] + 1}), "'kit.a' values differ"),
        (lambda d: Out({"kit.a": d["kit.a"].tolist()}), "'kit.a' became a list"),
        (lambda d: object(), "the rebuilt object has no to_pp_tensors() to compare; pass equal="),
    ],
)
def test_rebuilt_output_that_differs_is_k9(change, detail, in_process):
    failure = kit_failure(lambda: Tweaks(change), outs(**{"kit.a": torch.zeros(1, 2)}))
    assert str(failure) == message("K9", detail=detail)


def test_equal_decides_when_given(in_process):
    rebuild_other = lambda: Tweaks(lambda d: object())  # noqa: E731
    check_observer(rebuild_other, good(), equal=lambda a, b: True)
    failure = kit_failure(Obs, good(), equal=lambda a, b: False)
    assert str(failure) == message("K9", detail="equal(original, rebuilt) returned False")


def test_equal_is_called_with_the_sent_output_then_the_rebuilt_one(in_process):
    sent = Out({"kit.a": torch.zeros(2)})
    calls = []
    # Record what each argument is, not the rebuilt output itself: keeping it would be K10.
    check_observer(Obs, st.just(sent), equal=lambda a, b: calls.append((a is sent, type(b), b is sent)) or True)
    assert calls and set(calls) == {(True, Out, False)}


class Keeps:
    """Keeps something from each step on the (long-lived) observer."""

    cache: list = []

    def __init__(self, keep: Any) -> None:
        self.keep = keep

    def from_pp_tensors(self, tensors: Any) -> Out:
        out = Out(dict(tensors))
        self.keep(self, tensors, out)
        return out


@pytest.mark.parametrize(
    "keep, detail",
    [
        (lambda o, t, out: setattr(o, "last", t), "the observer's attribute 'last' holds it"),
        (lambda o, t, out: setattr(o, "views", [t["kit.a"][1:]]), "the observer's attribute 'views' holds it"),
        (lambda o, t, out: setattr(o, "last_output", out), "the observer's attribute 'last_output' holds it"),
        (lambda o, t, out: setattr(o, "seen", t["kit.a"]), "the observer's attribute 'seen' holds it"),
        (
            lambda o, t, out: Keeps.cache.append(t["kit.a"]),
            "something outside the rebuilt output holds it (the observer, or a cache it writes)",
        ),
        (lambda o, t, out: setattr(o, "nested", [[[t["kit.a"]]]]), "the observer's attribute 'nested' holds it"),
        (
            lambda o, t, out: setattr(o, "deep", [[[[t["kit.a"]]]]]),
            "something outside the rebuilt output holds it (the observer, or a cache it writes)",
        ),
        # Attributes that are plain values (no __dict__ to look into) are passed over.
        (lambda o, t, out: o.__dict__.update(steps=1, held=(t["kit.a"],)), "the observer's attribute 'held' holds it"),
    ],
)
def test_observer_keeping_received_tensors_is_k10(keep, detail, in_process):
    Keeps.cache.clear()
    failure = kit_failure(lambda: Keeps(keep), outs(**{"kit.a": torch.zeros(3)}))
    Keeps.cache.clear()
    assert str(failure) == message("K10", name="kit.a", detail=detail)


class SlottedKeeper:
    __slots__ = ()
    cache: list = []

    def from_pp_tensors(self, tensors: Any) -> Out:
        SlottedKeeper.cache.append(tensors)
        return Out(dict(tensors))


def test_retention_is_found_on_an_observer_without_attributes(in_process):
    SlottedKeeper.cache.clear()
    failure = kit_failure(SlottedKeeper, outs(**{"kit.a": torch.zeros(3)}))
    SlottedKeeper.cache.clear()
    assert str(failure) == message(
        "K10", name="kit.a", detail="something outside the rebuilt output holds it (the observer, or a cache it writes)"
    )


def test_observer_keeping_copies_passes(in_process):
    def keep(o, t, out):
        o.last = {name: v.clone() for name, v in t.items()}

    check_observer(lambda: Keeps(keep), good())


# Steps that hang or end the process (K14, K15). Unsupervised, the check runs first in a forked
# child; where that child died, again here with each step first in a child of its own.

# The tests read the minimal output: shrinking on whatever the profile (the mutation profile has none,
# and its first failing draw depends on the check's source).
# A crash ends its step at once: the per-call limit of a crash test is only a safety net, wide
# enough that a busy machine never makes a slow step a hang (and the rest of the check a 0.1 s one).
CRASH_LIMIT = safety_limit(10)
QUICK = settings(database=None, max_examples=10, phases=[Phase.explicit, Phase.generate, Phase.shrink])


def frame_of(fn: Any, statement: str) -> str:
    """How a stack shows the line of ``fn`` that starts with ``statement``."""
    lines, first = inspect.getsourcelines(fn)
    (offset,) = [i for i, line in enumerate(lines) if line.strip().startswith(statement)]
    return Frame(inspect.getsourcefile(fn), first + offset, fn.__name__).render()


def frames(stack: str) -> list:
    return re.split(r"\n(?=  File )", stack)


def shows_the_minimal_output(failure: KitFailure) -> bool:
    return bool(set(failure.__notes__) & planted.MINIMAL)


def hang_of(failure: KitFailure, call: str) -> Hang:
    """The hang a K14 reports, once its message is checked: the call, its limit and why, the stack."""
    hang = failure.__cause__
    assert type(hang) is Hang and hang.call == call
    assert str(failure) == message(
        "K14",
        detail=f"{call} did not return within {hang.limit:g} s ({hang.why})\n"
        f"stuck at (most recent call last):\n{hang.stack}",
    )
    return hang


@pytest.mark.parametrize(
    "harm, statement",
    [
        pytest.param("loop", "while", id="pure Python"),
        # Waited out to the deadline and past it (the stack asked for never comes): a second or two.
        pytest.param("wait_unreachable", "os.read", id="signals blocked", marks=pytest.mark.subprocess),
    ],
)
def test_a_step_that_does_not_return_is_k14_with_the_minimal_output(harm, statement):
    failure = kit_failure(planted.observer(harm), planted.outputs(), timeout=0.3, settings=QUICK)
    hang = hang_of(failure, "from_pp_tensors")
    assert failure.code == "K14" and hang.limit <= 0.3
    assert frames(hang.stack)[-1] == frame_of(planted.HARMS[harm], statement)
    assert shows_the_minimal_output(failure)


@pytest.mark.parametrize("step", list(planted.SLOW_STEPS))
def test_every_step_that_runs_the_plugins_code_runs_under_the_limit(step):
    factory, outputs, kwargs, call = planted.SLOW_STEPS[step]
    with SuiteGuard(0.2).installed():
        failure = kit_failure(factory, outputs, settings=settings(database=None, max_examples=1), **kwargs)
    hang = hang_of(failure, call)
    assert frames(hang.stack)[-1] == frame_of(planted.dawdle, "while")


def test_a_step_that_exits_is_k15_with_its_exit_status():
    failure = kit_failure(planted.Obs, planted.outputs("exit_3"), timeout=CRASH_LIMIT, settings=QUICK)
    assert str(failure) == message("K15", detail="add ended the process with exit status 3")
    assert shows_the_minimal_output(failure)


def test_an_output_that_ends_the_process_when_compared_after_the_relay_is_k15_naming_its_to_pp_tensors():
    # os._exit leaves no stack to name the call by: the kit's own name for the step is the finding's.
    failure = kit_failure(planted.Obs, st.builds(planted.ExitsWhenCompared), timeout=CRASH_LIMIT, settings=QUICK)
    assert str(failure) == message("K15", detail="to_pp_tensors ended the process with exit status 3")


def test_a_step_that_segfaults_is_k15_with_the_signal_and_where_it_struck():
    failure = kit_failure(planted.Obs, planted.outputs("segfault"), timeout=CRASH_LIMIT, settings=QUICK)
    crash = failure.__cause__
    assert type(crash) is Crash and crash.call == "to_pp_tensors"
    assert str(failure) == message(
        "K15",
        detail=f"to_pp_tensors killed the process with SIGSEGV (signal 11)\n"
        f"where (most recent call last):\n{crash.stack}",
    )
    *_, harm, inner = frames(crash.stack)
    assert harm == frame_of(planted.segfault, "ctypes.string_at") and inner.splitlines()[0].endswith(", in string_at")
    assert shows_the_minimal_output(failure)


@pytest.mark.parametrize(
    "harm, code, how, limit",
    [
        ("exit_3", "K15", "ended the process with exit status 3", CRASH_LIMIT),
        pytest.param("wait_unreachable", "K14", "was stopped at its deadline", 0.5, marks=pytest.mark.subprocess),
    ],
)
def test_a_crash_or_hang_that_does_not_come_back_is_still_reported(tmp_path, harm, code, how, limit):
    """The first run, in a forked child, dies; every step passes when run again: the harm came from
    state outside the drawn output (here a marker file), and is reported all the same."""
    failure = kit_failure(Obs, st.just(planted.Once(tmp_path / "harmed", harm)), timeout=limit, settings=QUICK)
    assert str(failure) == message(
        code,
        detail=f"the check's first run, in a forked child, {how}; run again with each step "
        "in a process of its own, every step returned: it depends on state outside "
        "the drawn output (an earlier example, a file, the clock)",
    )


def test_a_failure_in_the_forked_child_that_does_not_come_back_here_is_flaky():
    with pytest.raises(Flaky) as info:
        check_observer(Obs, st.just(planted.FailsInAChild()), settings=QUICK)
    assert str(info.value) == (
        "the check failed in a forked child (RuntimeError: not at home) but passed when run again in "
        "this process, on the same examples: it depends on state outside the drawn output (an "
        "earlier example, a file, the clock)"
    )


def test_a_passing_check_runs_in_a_forked_child_unless_a_supervisor_watches_this_one():
    pids: list = []
    factory = lambda: pids.append(os.getpid()) or Obs()  # noqa: E731
    check_observer(factory, good(), settings=QUICK)
    assert pids == []
    with SuiteGuard().installed():
        check_observer(factory, good(), settings=QUICK)
    assert pids and set(pids) == {os.getpid()}


def test_where_fork_is_missing_the_check_runs_in_this_process(monkeypatch):
    monkeypatch.setattr(containment, "can_fork", lambda: False)  # what the kit asks: ppaux.testing.containment
    pids: list = []
    check_observer(lambda: pids.append(os.getpid()) or Obs(), good(), settings=QUICK)
    assert pids and set(pids) == {os.getpid()}
    hang = hang_of(
        kit_failure(planted.observer("loop"), planted.outputs(), timeout=0.3, settings=QUICK), "from_pp_tensors"
    )
    assert frames(hang.stack)[-1] == frame_of(planted.loop, "while")


def test_once_cuda_is_initialized_the_check_forks_nothing(monkeypatch):
    """A forked child of a process that has initialized CUDA cannot use it: the check and each of
    its steps run here, under the timer only."""

    def no_fork(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("forked")

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    # Every fork the kit makes goes through its guard: the whole check's and each step's.
    monkeypatch.setattr(sys.modules["ppaux.isolation.guard"], "run_forked", no_fork)
    monkeypatch.setattr(testing, "relay", lambda d, **kw: hop_relay(d, channel="loopback", device=kw["device"]))
    pids: list = []
    for channel in ("loopback", "gloo"):
        check_observer(
            lambda: pids.append(os.getpid()) or Obs(),
            good(),
            channel=channel,
            settings=settings(database=None, max_examples=3),
        )
    assert pids and set(pids) == {os.getpid()}
    hang = hang_of(
        kit_failure(planted.observer("loop"), planted.outputs(), timeout=0.3, settings=QUICK), "from_pp_tensors"
    )
    assert frames(hang.stack)[-1] == frame_of(planted.loop, "while")


def test_under_a_supervisor_the_check_runs_in_this_process_with_its_steps_isolated_as_the_supervisor_says():
    supervisor = SuiteGuard()
    supervisor.isolated = True
    with supervisor.installed():
        failure = kit_failure(planted.Obs, planted.outputs("exit_3"), timeout=CRASH_LIMIT, settings=QUICK)
    assert str(failure) == message("K15", detail="add ended the process with exit status 3")
    assert shows_the_minimal_output(failure)


@pytest.mark.subprocess
def test_over_a_channel_of_worker_processes_each_step_runs_in_a_child_of_its_own(monkeypatch):
    """A forked copy of the whole check would share the gloo workers: each step is isolated instead."""
    monkeypatch.setattr(testing, "relay", lambda d, **kw: hop_relay(d, channel="loopback", device=kw["device"]))
    failure = kit_failure(planted.Obs, planted.outputs("exit_3"), channel="gloo", timeout=CRASH_LIMIT, settings=QUICK)
    assert str(failure) == message("K15", detail="add ended the process with exit status 3")
    pids: list = []
    check_observer(
        lambda: pids.append(os.getpid()) or Obs(),
        good(),
        channel="gloo",
        settings=settings(database=None, max_examples=3),
    )
    assert pids and set(pids) == {os.getpid()}


@pytest.mark.subprocess
def test_an_explicit_timeout_replaces_the_limit_of_the_implementations_guard(ppaux_impl, ppaux_observer_check):
    """The fixture's implementation runs under the run's guard (10 s by default); timeout= replaces it."""
    assert ppaux_impl.guard is not None and ppaux_impl.guard.timeout > 0.5
    hangs = ppaux_impl.guard.hangs
    with pytest.raises(KitFailure) as info:
        ppaux_observer_check(planted.observer("loop"), planted.outputs(), timeout=0.3, settings=QUICK)
    assert hang_of(info.value, "from_pp_tensors").limit <= 0.5
    assert ppaux_impl.guard.hangs == hangs and not ppaux_impl.guard.isolated


def test_an_implementations_guard_is_taken_off_add_and_pop_only():
    guard = SuiteGuard()
    ours = load()
    assert testing._unguarded(ours) is ours
    bare = testing._unguarded(ours.guarded(guard))
    assert (bare.add, bare.pop, bare.guard) == (ours.add, ours.pop, None)
    # An Implementation built by hand with a guard: add and pop are its own.
    made = Implementation("made", "p:", ours.add, ours.pop, guard=guard)
    assert (testing._unguarded(made).add, testing._unguarded(made).pop) == (ours.add, ours.pop)


def test_the_check_forks_safely_after_torch_has_used_its_thread_pool():
    """A forked child that enters an OpenMP region this process has used would wait for ever."""
    threads = torch.get_num_threads()
    torch.zeros(1 << 20).add_(1).sum()
    check_observer(planted.Parallel, planted.outputs(), timeout=2, settings=QUICK)
    assert torch.get_num_threads() == threads


@pytest.fixture
def seed_generator():
    """Hypothesis's generator of the seeds of runs without one (not a public API: see
    ppaux.testing.hypothesis_api), as the test leaves it; the caller's is back after."""
    saved = replace_seed_generator(None)
    yield
    replace_seed_generator(saved)


def test_before_a_fork_the_seed_generator_exists_and_one_that_exists_is_kept(seed_generator):
    # A process that has run no Hypothesis test yet has none: made here, both forked children of a
    # check copy it and draw the same seed; made in each child (Hypothesis's own default), they would not.
    prime_seed()
    made = replace_seed_generator(None)
    assert isinstance(made, random.Random)
    kept = random.Random(7)
    replace_seed_generator(kept)
    prime_seed()
    assert replace_seed_generator(None) is kept


@pytest.mark.parametrize("seed", [20261206, None], ids=["seeded", "none yet"])
def test_the_child_and_this_process_draw_the_same_examples(tmp_path, seed_generator, seed):
    """Without a database or derandomize, both runs draw the same seed, the first check in a process
    (no generator yet) too. Each draw is 56 random bits, so that the same draws in both processes
    are not Hypothesis's first, seed-independent choices (zero, small values) alone: seeded, the draws
    are the same on every run, and that is checked. 56 bits: a tensor holds them (int64)."""
    replace_seed_generator(None if seed is None else random.Random(seed))
    log = tmp_path / "drawn"
    drawn = st.binary(min_size=7, max_size=7).map(lambda b: planted.Logged(log, int.from_bytes(b, "big")))
    assert kit_failure(Obs, drawn, settings=settings(database=None, derandomize=False, max_examples=20)).code == "A2"
    runs: dict = {}
    for line in log.read_text().splitlines():
        pid, n = line.split()
        runs.setdefault(pid, []).append(int(n))
    child, here = runs.values()
    assert child == here
    assert seed is None or any(n > 2**16 for n in child)


# Receiving devices, settings and arguments.


class DeviceRecorder:
    seen: list = []

    def from_pp_tensors(self, tensors: Any) -> Out:
        DeviceRecorder.seen += [t.device for t in tensors.values()]
        return Out(dict(tensors))


@pytest.mark.parametrize("devices", ["auto", ["cpu"], (torch.device("cpu"),)])
def test_receiver_allocates_on_each_device(devices, in_process):
    DeviceRecorder.seen = []
    check_observer(DeviceRecorder, outs(**{"kit.a": torch.zeros(1)}), devices=devices)
    assert DeviceRecorder.seen and set(DeviceRecorder.seen) == {torch.device("cpu")}


def test_every_receiving_device_is_checked(in_process):
    DeviceRecorder.seen = []
    check_observer(DeviceRecorder, outs(**{"kit.a": torch.zeros(1)}), devices=["cpu", "cpu"])
    assert DeviceRecorder.seen == [torch.device("cpu")] * 2


def test_settings_are_used(in_process):
    calls = []
    tight = settings(max_examples=3, database=None, phases=[Phase.generate])
    check_observer(
        lambda: calls.append(1) or Obs(),
        st.integers(0, 10**6).map(lambda n: Out({"kit.a": torch.tensor(n)})),
        settings=tight,
    )
    assert len(calls) == 3


def test_one_failing_output_is_one_failure_even_with_several_bugs(in_process):
    mixed = st.sampled_from([Out({"kit.a": torch.zeros(2, 2).t()}), Out({"scores": torch.zeros(1)})])
    failure = kit_failure(Obs, mixed)
    assert str(failure) in (
        message("K1", name="kit.a"),
        message(
            "K5", name="scores", detail="a generic name another output in the same PP dict may use (add would raise A5)"
        ),
    )


@pytest.mark.parametrize(
    "kwargs, text",
    [
        (dict(observer_factory=3), "observer_factory=3 must be callable (e.g. the observer class)"),
        (dict(outputs=[1]), "outputs=[1] must be a Hypothesis strategy of your output objects"),
        (dict(equal=1), "equal=1 must be None or a callable (original, rebuilt) -> bool"),
        (dict(channel="nccl"), "channel='nccl' must be one of ('loopback', 'gloo', 'sglang')"),
        (dict(settings={}), "settings={} must be None or hypothesis.settings"),
        (dict(devices="cpu"), "devices='cpu' must be 'auto' or a non-empty sequence of devices"),
        (
            dict(devices=torch.device("cpu")),
            "devices=device(type='cpu') must be 'auto' or a non-empty sequence of devices",
        ),
        (dict(devices=[]), "devices=[] must be 'auto' or a non-empty sequence of devices"),
        (dict(devices=5), "devices=5 must be 'auto' or a non-empty sequence of devices"),
        (dict(impl=3), "impl=3 must be None, an Implementation, or a module name or .py path"),
        (dict(timeout=0), "timeout=0 must be None or a positive number of seconds"),
        (dict(timeout=-1.5), "timeout=-1.5 must be None or a positive number of seconds"),
        (dict(timeout="soon"), "timeout='soon' must be None or a positive number of seconds"),
        (dict(timeout=float("inf")), "timeout=inf must be None or a positive number of seconds"),
        (dict(timeout=float("nan")), "timeout=nan must be None or a positive number of seconds"),
        (dict(timeout=[1]), "timeout=[1] must be None or a positive number of seconds"),
        (
            dict(impl="no_such_impl_module"),
            "impl='no_such_impl_module': cannot import implementation module "
            "'no_such_impl_module': ModuleNotFoundError: No module named 'no_such_impl_module'",
        ),
    ],
)
def test_bad_arguments_are_invalid_argument(kwargs, text):
    args = dict(observer_factory=Obs, outputs=good())
    args.update(kwargs)
    with pytest.raises(InvalidArgument) as info:
        check_observer(args.pop("observer_factory"), args.pop("outputs"), **args)
    assert str(info.value) == text


@pytest.mark.parametrize("bad", [["gpu0"], [None]])
def test_unknown_device_is_invalid_argument(bad):
    with pytest.raises(InvalidArgument) as info:
        check_observer(Obs, good(), devices=bad)
    assert str(info.value).startswith(f"devices={bad!r}: ")


@pytest.mark.parametrize(
    "impl",
    [str(IMPLS / "unstripped_names.py"), load(str(IMPLS / "unstripped_names.py"))],
    ids=["path", "Implementation"],
)
def test_the_kit_relays_with_the_implementation_it_is_given(impl, in_process):
    """A pop that hands the observer prefixed names breaks the round trip; ppaux's own does not."""
    failure = kit_failure(
        Obs, outs(**{"kit.a": torch.zeros(2)}), impl=impl, settings=settings(database=None, max_examples=1)
    )
    assert failure.code == "K9" and "names ['kit.a'] became ['__sampling_observer_output__.kit.a']" in str(failure)
    check_observer(Obs, outs(**{"kit.a": torch.zeros(2)}), settings=settings(database=None, max_examples=1))


def test_the_pytest_fixture_runs_the_kit(ppaux_observer_check):
    with pytest.raises(KitFailure) as info:
        ppaux_observer_check(Obs, st.just(object()), settings=settings(database=None, max_examples=1))
    assert str(info.value) == message("A1")


class Cyclic:
    """Rebuilds an output that refers to itself: only the garbage collector frees it."""

    def from_pp_tensors(self, tensors: Any) -> Out:
        out = Out(dict(tensors))
        out.me = out
        return out


def test_output_in_a_reference_cycle_is_not_retention(in_process):
    # A few examples: every one is the same cycle, and each costs a full garbage collection.
    check_observer(Cyclic, good(), settings=settings(database=None, max_examples=5))


@pytest.mark.subprocess
@pytest.mark.wire
@pytest.mark.gloo
def test_a_well_behaved_pair_survives_the_real_gloo_relay():
    """The same checks with the hop over two real gloo processes (ppaux.relay.relay, channel="gloo")."""
    seen = []

    class Records(Obs):
        def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Out:
            seen.append({n: t.data_ptr() for n, t in tensors.items() if t.numel()})
            return super().from_pp_tensors(tensors)

    sent = []

    def tracked():
        return good().map(
            lambda out: sent.append({n: t.data_ptr() for n, t in out.payload.items() if t.numel()}) or out
        )

    from ppaux.relay import gloo

    gloo.stop_all()  # a cold start: the first hop spawns the workers, far past a 200 ms deadline
    check_observer(Records, tracked(), channel="gloo", settings=settings(max_examples=6, database=None, deadline=200))
    assert seen and all(set(a.values()).isdisjoint(b.values()) for a, b in zip(sent, seen))


AUTHORS_TEST = """
import torch
from hypothesis import strategies as st
from ppaux.testing import check_observer


class Out:
    def __init__(self, values):
        self.values = values

    def to_pp_tensors(self):
        return {"my_plugin.values": self.values}

    def __repr__(self):
        return "Out()"


class OffByOne:
    def from_pp_tensors(self, tensors):
        return Out(tensors["my_plugin.values"] + 1)


def test_my_observer_survives_the_relay():
    check_observer(OffByOne, st.just(Out(torch.zeros(2))))
"""


def test_a_kit_failure_shows_the_authors_test_line_and_none_of_the_kits_frames(pytester):
    pytester.makepyfile(test_authors=AUTHORS_TEST)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    lines = result.outlines
    start = lines.index(">       check_observer(OffByOne, st.just(Out(torch.zeros(2))))")
    headline = message("K9", detail="'my_plugin.values' values differ").splitlines()[0]
    # The author's line, then the finding right under it: no frame of the kit (or of Hypothesis's
    # wrapper that claims the kit's file) in between, and none anywhere else.
    assert lines[start + 1] == f"E       ppaux.testing.kit.KitFailure: {headline}"
    assert [line for line in lines if Path(testing.__file__).name in line] == []


def test_a_passing_check_prints_and_returns_how_many_outputs_it_drew(capsys, in_process):
    calls: list = []
    # One receiving device: the factory is called once per output.
    result = check_observer(lambda: calls.append(1) or Obs(), good(), devices=["cpu"], settings=QUICK)
    assert (result, capsys.readouterr().out) == (testing.KitResult(len(calls)), f"{result}\n")
    assert (
        str(result) == f"check_observer drew {len(calls)} outputs; each survived add, the relay and pop"
        and len(calls) > 1
    )


def test_the_count_of_a_check_that_passed_in_a_forked_child_comes_back_from_it(capsys):
    result = check_observer(Obs, outs(**{"kit.a": torch.zeros(1)}), settings=QUICK)
    # One possible output: Hypothesis draws it once.
    assert (str(result), capsys.readouterr().out) == (
        "check_observer drew 1 output; each survived add, the relay and pop",
        "check_observer drew 1 output; each survived add, the relay and pop\n",
    )


def test_a_failing_check_notes_how_many_outputs_it_drew(in_process):
    calls: list = []
    failure = kit_failure(lambda: calls.append(1) or Tweaks(lambda d: Out({})), good(), devices=["cpu"], settings=QUICK)
    assert failure.__notes__[-1] == f"check_observer drew {len(calls)} outputs (shrinking included)" and len(calls) > 1
