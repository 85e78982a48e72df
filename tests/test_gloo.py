"""Real gloo ranks: worker processes on 127.0.0.1, their watchdog, and the same code in threads."""

from __future__ import annotations

import ctypes
import inspect
import multiprocessing
import os
import threading
import time

import pytest
import torch
from hypothesis import given, settings
from ppaux_strategies import (
    CONTIGUOUS_VIEWS,
    PPOutput,
    RecordingObserver,
    aux_payloads,
    tensors,
    tensors_equal,
    transport_dicts,
)

from ppaux.core.transport import SGLANG_TRANSPORT
from ppaux.isolation.status import Frame
from ppaux.relay import gloo
from ppaux.relay.channels import ChannelHang, GlooChannel
from ppaux.relay.hop import relay
from ppaux.relay.wire import CPU_GROUP, DEVICE_GROUP
from tests.support import DoneWork, HalfGather, SentLog

pytestmark = [pytest.mark.wire, pytest.mark.gloo]

# Tests that start a world of their own (fresh ranks, hung or killed ones) cost seconds each:
# they are marked subprocess; those on the shared world run in the quick run.

CONTIGUOUS = tensors(views=CONTIGUOUS_VIEWS, device="cpu")


def test_round_trip_over_gloo_processes():
    """Drawn dicts through one long-lived pair of gloo processes: the observer gets equal tensors."""
    served_by = set()

    @settings(max_examples=8, deadline=None)  # the first example starts the pair of processes
    @given(d=transport_dicts(tensors=CONTIGUOUS), payload=aux_payloads(tensors=CONTIGUOUS))
    def round_trip(d, payload):
        SGLANG_TRANSPORT.add(d, PPOutput(payload))
        got = relay(d, channel="gloo", device="cpu")
        assert list(got) == list(d)
        obs = RecordingObserver()
        SGLANG_TRANSPORT.pop(got, obs)
        for name, tensor in payload.items():
            assert tensors_equal(obs.snapshots[0][name], tensor)
        served_by.add(tuple(p.pid for p in gloo.world(2).procs))

    round_trip()
    # One pair of processes for every example, not a pair per example.
    assert len(served_by) == 1


@pytest.mark.subprocess
def test_gloo_refuses_non_contiguous_with_its_own_message():
    """SGLang finding on the real backend: gloo's message for a non-contiguous aux tensor."""
    d = {"next_token_ids": torch.arange(2)}
    SGLANG_TRANSPORT.add(d, PPOutput({"scores": torch.arange(6.0).reshape(2, 3).t()}))
    with pytest.raises(gloo.RankFailure) as info:
        relay(d, channel="gloo")
    assert str(info.value) == "input tensor has to be contiguous" and info.value.type_name == "RuntimeError"
    assert not gloo.world(2).running  # torn down: the receiver was left mid-dict


def _sleep(ctx, seconds):
    import time

    time.sleep(seconds)


def _die(ctx):
    os._exit(3)


def _spin(ctx):
    ctx.store.set(f"rank {ctx.rank} is stuck", "")
    while True: pass  # noqa: E701 - one line: a stack taken anywhere in the loop names it  # fmt: skip


def _deaf(ctx, seconds):
    """Sleeps with the watchdog's stack request (SIGUSR1) ignored."""
    import signal
    import time

    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    ctx.store.set(f"rank {ctx.rank} is stuck", "")
    time.sleep(seconds)


def _segfault(ctx, after=()):
    """Dies of SIGSEGV once the ranks ``after`` are stuck."""
    import ctypes

    ctx.store.wait([f"rank {rank} is stuck" for rank in after])
    ctypes.string_at(0)


def _frame(fn, text):
    """How a rank's stack shows the line of ``fn`` that holds ``text``."""
    lines, first = inspect.getsourcelines(fn)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return Frame(fn.__code__.co_filename, first + offset, fn.__name__).render()


def _raise_documented(ctx):
    from ppaux.core.errors import AuxiliaryPPError

    raise AuxiliaryPPError("P1")


def _raise_plain(ctx):
    raise ValueError("not from the catalog")


def _rank(ctx):
    return ctx.rank


@pytest.mark.subprocess
def test_world_watchdog_kills_ranks_that_hang_and_restarts():
    # The shared worlds other tests started may still run: only this world's processes must go.
    before = set(multiprocessing.active_children())
    # The world's own watchdog (20 s) outlasts the sleeping rank: only the call's 0.5 s stops it.
    w = gloo.GlooWorld(2, timeout=20.0)
    try:
        # Warm: the first call imports this module in the workers.
        assert w.run({0: (_rank, ()), 1: (_rank, ())}) == {0: gloo.Outcome("ok", 0), 1: gloo.Outcome("ok", 1)}
        first = [p.pid for p in w.procs]
        out = w.run({0: (_sleep, (3,)), 1: (_rank, ())}, timeout=0.5)
        assert out[0].status == "hang" and out[1].status == "ok" and out[1].value == 1
        # Asked for its stack before it was killed: the rank's own frames, below serve().
        with pytest.raises(ChannelHang) as info:
            gloo.raise_failure(out)
        assert str(info.value) == (
            "gloo rank 0 did not finish within 0.5 s: stopped by the watchdog; stuck at (most recent call last):\n"
            + _frame(_sleep, "time.sleep(")
        )
        assert not w.running
        assert w.run({0: (_rank, ()), 1: (_rank, ())}) == {0: gloo.Outcome("ok", 0), 1: gloo.Outcome("ok", 1)}
        # Fresh ranks: the hung exchange may have left bytes in flight.
        assert set(p.pid for p in w.procs).isdisjoint(first)
        # A call the worker cannot even load is reported, and the worker keeps serving.
        out = w.run({0: (_rank, ()), 1: (_rank, ())})
        w.conns[0].send_bytes(b"not a call")
        assert w._collect([0], 5.0)[0].error.type_name in ("UnpicklingError", "RuntimeError")
    finally:
        w.stop()
    assert set(multiprocessing.active_children()) <= before


@pytest.mark.subprocess
def test_world_reports_dead_ranks_and_documented_errors():
    w = gloo.GlooWorld(2)
    try:
        w.start()
        rendezvous = w.tmp
        assert os.path.isdir(rendezvous)
        # Daemons: a test run that dies without stopping its world takes the ranks with it.
        assert [p.daemon for p in w.procs] == [True, True]
        # Warm: a rank that first imports this module may answer after the dead peer's grace.
        assert w.run({0: (_rank, ()), 1: (_rank, ())}) == {0: gloo.Outcome("ok", 0), 1: gloo.Outcome("ok", 1)}
        out = w.run({0: (_die, ()), 1: (_raise_documented, ())})
        assert out[0].status == "died" and out[0].exitcode == 3
        # os._exit leaves no stack: the exit status alone, in words.
        assert (
            out[0].stack == ""
            and gloo.describe_failure(0, out[0]) == "gloo rank 0 died: ended the process with exit status 3"
        )
        assert out[1].status == "error" and out[1].error.code == "P1"
        assert str(out[1].error) == "received auxiliary PP output without a sampling observer"
    finally:
        w.stop()
    # The rendezvous directory goes with the world.
    assert (w.tmp, os.path.exists(rendezvous)) == (None, False)


@pytest.mark.subprocess
def test_a_stopped_rank_says_where_it_was_stuck_and_a_dead_one_what_killed_it():
    """Real ranks: one spinning in pure Python, one killed by SIGSEGV, one that ignores the
    watchdog's request for its stack. The dead rank's grace is all the others get."""
    before = set(multiprocessing.active_children())
    w = gloo.GlooWorld(3, timeout=20.0)
    try:
        # Warm: the first call imports this module in the workers.
        assert [o.value for o in w.run({r: (_rank, ()) for r in range(3)}).values()] == [0, 1, 2]
        out = w.run({0: (_segfault, ((1, 2),)), 1: (_spin, ()), 2: (_deaf, (30,))})
        assert [(o.status, o.exitcode, o.limit, o.after) for o in out.values()] == [
            ("died", -11, None, None),
            ("hang", None, gloo.FAILURE_GRACE, 0),
            ("hang", None, gloo.FAILURE_GRACE, 0),
        ]
        with pytest.raises(gloo.RankFailure) as info:
            gloo.raise_failure(out)
        # faulthandler's stack of the fatal signal, down to the C call that faulted.
        assert str(info.value) == (
            "gloo rank 0 died: killed the process with SIGSEGV (signal 11); where (most recent call last):\n"
            + _frame(_segfault, "string_at(0)")
            + "\n"
            + _frame(ctypes.string_at, "_string_at(")
        )
        assert gloo.describe_failure(1, out[1]) == (
            "gloo rank 1 did not finish within 0.5 s of rank 0's failure: "
            "stopped by the watchdog; stuck at (most recent call last):\n" + _frame(_spin, "while True")
        )
        assert gloo.describe_failure(2, out[2]) == (
            "gloo rank 2 did not finish within 0.5 s of rank 0's failure: "
            "stopped by the watchdog; no stack could be obtained "
            "(no answer to SIGUSR1 within 0.5 s: the rank blocks, ignores or handles that signal itself)"
        )
        assert not w.running
    finally:
        w.stop()
    assert set(multiprocessing.active_children()) <= before


def test_raise_failure_names_the_first_problem():
    err = gloo.RankFailure("ValueError", "bad")
    with pytest.raises(gloo.RankFailure) as info:
        gloo.raise_failure({0: gloo.Outcome("hang"), 1: gloo.Outcome("error", error=err)})
    assert info.value is err
    with pytest.raises(gloo.RankFailure) as info:
        gloo.raise_failure({0: gloo.Outcome("ok"), 1: gloo.Outcome("died", exitcode=-6)})
    assert (str(info.value), info.value.type_name, info.value.code) == (
        "gloo rank 1 died: killed the process with SIGABRT (signal 6)",
        "ProcessDied",
        None,
    )
    with pytest.raises(ChannelHang) as info:
        gloo.raise_failure({0: gloo.Outcome("hang")})
    assert str(info.value) == "gloo rank 0 did not finish: stopped by the watchdog"
    gloo.raise_failure({0: gloo.Outcome("ok")})


@pytest.mark.parametrize(
    "outcome, message",
    [
        # Outcomes made elsewhere (the loopback pipeline's): no exit code, no stack, no limit.
        (gloo.Outcome("died"), "gloo rank 2 died"),
        (
            gloo.Outcome("died", exitcode=1, stack='  File "x.py", line 3, in f'),
            (
                "gloo rank 2 died: ended the process with exit status 1; where (most recent call last):\n"
                '  File "x.py", line 3, in f'
            ),
        ),
        (
            gloo.Outcome("hang", limit=10.0, stack=""),
            "gloo rank 2 did not finish within 10 s: stopped by the watchdog; no stack could be obtained "
            "(no answer to SIGUSR1 within 0.5 s: the rank blocks, ignores or handles that signal itself)",
        ),
        (
            gloo.Outcome("hang", limit=0.5, after=0, stack='  File "x.py", line 3, in f'),
            "gloo rank 2 did not finish within 0.5 s of rank 0's failure: "
            "stopped by the watchdog; stuck at (most recent call last):\n"
            '  File "x.py", line 3, in f',
        ),
    ],
)
def test_a_failed_rank_is_described_with_what_is_known_of_it(outcome, message):
    assert gloo.describe_failure(2, outcome) == message


def _dump(*threads, fatal=False):
    """A faulthandler dump of ``threads``, each a list of ``(path, line, function)``, innermost first."""
    parts = []
    for i, frames in enumerate(threads):
        head = (
            "Current thread 0x00007f00 (most recent call first):"
            if i == 0
            else f"Thread 0x00007f0{i} (most recent call first):"
        )
        parts.append(
            "\n".join([head, *(f'  File "{path}", line {line} in {function}' for path, line, function in frames)])
        )
    return (("Fatal Python error: Segmentation fault\n\n" if fatal else "") + "\n\n".join(parts) + "\n").encode()


def test_a_ranks_stack_is_the_thread_that_serves_cut_to_the_ranks_own_work():
    here = gloo.__file__
    entry = [(here, 9, "serve"), (here, 8, "rank_main"), (here, 7, "_process_main"), ("process.py", 108, "run")]
    helper = [("helper.py", 5, "poll"), ("threading.py", 975, "run")]
    # The thread that serves calls, whichever comes first in the dump, from the call down.
    assert gloo.rank_stack(_dump(helper, [("x.py", 3, "inner"), ("x.py", 2, "outer"), *entry], fatal=True)) == (
        '  File "x.py", line 2, in outer\n  File "x.py", line 3, in inner'
    )
    # Stuck in serve itself (a call it could not unpickle): that frame, with its source line.
    assert gloo.rank_stack(_dump(entry)) == Frame(here, 9, "serve").render()
    # Before the rank serves (its rendezvous, an extension): cut at rank_main.
    assert gloo.rank_stack(_dump([(here, 4, "make_context"), *entry[1:]])) == Frame(here, 4, "make_context").render()
    # No frame of this module's (another file's serve does not count): the first thread with frames, whole.
    assert gloo.rank_stack(_dump([], [("other.py", 2, "serve"), ("other.py", 1, "main")])) == (
        '  File "other.py", line 1, in main\n  File "other.py", line 2, in serve'
    )
    assert gloo.rank_stack(b"") == ""
    # A path that is not UTF-8 is shown with a replacement character, in either case.
    odd = _dump([("x<FF>.py", 3, "inner"), *entry]).replace(b"<FF>", b"\xff")
    assert gloo.rank_stack(odd) == '  File "x\ufffd.py", line 3, in inner'
    odd = _dump([], [("x<FF>.py", 2, "main")]).replace(b"<FF>", b"\xff")
    assert gloo.rank_stack(odd) == '  File "x\ufffd.py", line 2, in main'


@pytest.mark.subprocess
def test_a_stopped_rank_is_asked_for_its_stack_and_waited_for_until_its_own_frames_are_written(tmp_path, monkeypatch):
    """faulthandler stood in for: SIGUSR1 to a hung rank writes its dump, its own frames at the next
    poll; a rank already gone cannot be signalled; a dead rank's file is read whole."""
    here = gloo.__file__
    entry = [(here, 9, "serve"), (here, 8, "rank_main")]
    w = gloo.GlooWorld(4)
    w.tmp = str(tmp_path)

    class Proc:
        def __init__(self, pid):
            self.pid = pid

    w.procs = [Proc(100), Proc(101), Proc(102), Proc(103)]
    old = _dump([("old.py", 1, "before")])
    (tmp_path / "rank0.stack").write_bytes(old)  # written before this call: not part of the answer
    (tmp_path / "rank3.stack").write_bytes(_dump([("crash.py", 7, "boom"), *entry], fatal=True))
    pending = []
    signalled = []

    def kill(pid, sig):
        signalled.append((pid, sig))
        if pid == 101:
            raise ProcessLookupError(pid)
        # The rank starts writing: another thread's frames now, those of the thread that serves a poll later.
        path = tmp_path / f"rank{pid - 100}.stack"
        dump = _dump([("helper.py", 5, "poll")], [("stuck.py", 5, "wait"), ("stuck.py", 4, "call"), *entry])
        cut = dump.index(b"Thread 0x00007f01")
        with open(path, "ab") as f:
            f.write(dump[:cut])
        pending.append((path, dump[cut:]))

    polls = []

    def sleep(seconds):
        time.sleep(seconds)
        polls.append(seconds)
        while len(polls) > 1 and pending:  # the rest arrives only after the first poll found none of it
            path, rest = pending.pop()
            with open(path, "ab") as f:
                f.write(rest)

    monkeypatch.setattr(gloo.os, "kill", kill)
    monkeypatch.setattr(
        gloo, "time", type("Time", (), {"monotonic": staticmethod(time.monotonic), "sleep": staticmethod(sleep)})
    )
    stacks = w._stacks([0, 1, 2], [3])
    assert signalled == [(100, gloo.STACK_SIGNAL), (101, gloo.STACK_SIGNAL), (102, gloo.STACK_SIGNAL)]
    assert stacks == {
        0: '  File "stuck.py", line 4, in call\n  File "stuck.py", line 5, in wait',
        1: "",
        2: '  File "stuck.py", line 4, in call\n  File "stuck.py", line 5, in wait',
        3: '  File "crash.py", line 7, in boom',
    }


def test_world_shape_is_validated():
    with pytest.raises(ValueError) as info:
        gloo.GlooWorld(3, ag_size=2)
    assert str(info.value) == "world_size=3 must be >= 2 and a multiple of ag_size=2"


@pytest.mark.subprocess
def test_world_that_cannot_rendezvous_fails_to_start(monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setattr(gloo, "rendezvous_dir", lambda: str(blocker))
    w = gloo.GlooWorld(2, timeout=5.0)
    with pytest.raises(RuntimeError) as info:
        w.start()
    assert str(info.value).startswith("gloo ranks failed to start: {0: Outcome(status='died'")
    assert not w.running


@pytest.mark.subprocess
def test_a_world_keeps_its_files_out_of_the_current_directory_and_stop_removes_them(monkeypatch, tmp_path):
    """The ranks' FileStore and stack files live in the world's own directory: a user's working
    directory (which the worker processes share) gets none of them, and stop() removes them all."""
    monkeypatch.chdir(tmp_path)
    w = gloo.GlooWorld(2, timeout=20.0)
    try:
        w.start()
        assert w.run({0: (_rank, ()), 1: (_rank, ())})[1].value == 1
        own = w.tmp
        assert own is not None and os.listdir(own) and os.listdir(tmp_path) == []
    finally:
        w.stop()
    assert not os.path.exists(own) and os.listdir(tmp_path) == []


def _reply(conn, thread, limit=20.0):
    """The next reply of the rank running in ``thread``; fails as soon as that rank has died."""
    deadline = time.monotonic() + limit
    while not conn.poll(0.01):
        if not thread.is_alive():
            pytest.fail("the rank thread died before replying")
        if time.monotonic() > deadline:
            pytest.fail(f"no reply within {limit} s")
    return gloo.loads(conn.recv_bytes())


def _run_in_threads(fn, n, limit=20.0):
    """``fn(rank)`` for each rank in daemon threads; the first exception is raised as soon as
    it happens, rather than after the other ranks give up waiting for the failed one."""
    errors = []

    def guarded(r):
        try:
            fn(r)
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + limit
    while any(t.is_alive() for t in threads) and not errors and time.monotonic() < deadline:
        time.sleep(0.01)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads), f"ranks still running after {limit} s"


def test_rank_code_in_threads_sends_and_receives_through_real_gloo_groups(monkeypatch, tmp_path):
    """rank_main, serve and the gloo channel run in threads of this process (for coverage): a
    parent drives two ranks over pipes exactly as it drives worker processes."""
    store = str(tmp_path / "store")
    pipes = [multiprocessing.Pipe() for _ in range(4)]
    # Daemon threads, and replies awaited only while their rank lives: a rank that fails fails
    # the test at once instead of leaving its peers blocked in gloo.
    threads = [
        threading.Thread(target=gloo.rank_main, args=(r, 4, store, 2, 10.0, pipes[r][1]), daemon=True) for r in range(4)
    ]
    for t in threads:
        t.start()
    parents = [p for p, _ in pipes]
    answer = lambda r: _reply(parents[r], threads[r])  # noqa: E731
    assert [answer(r) for r in range(4)] == [("ready",)] * 4
    d = {"x": torch.arange(4.0), "n": "meta"}
    calls = {
        0: (gloo._send, (d, 2)),
        1: (gloo._send, ({"x": torch.arange(4.0), "n": "meta"}, 3, True)),
        2: (gloo._recv, (0, "cpu")),
        3: (gloo._recv, (1, None)),
    }
    started = []
    real_isend = GlooChannel.isend
    monkeypatch.setattr(
        GlooChannel, "isend", lambda self, t, group: started.append(self.peer) or real_isend(self, t, group)
    )
    for r, call in calls.items():
        parents[r].send_bytes(gloo.dumps(call))
    replies = [answer(r) for r in range(4)]
    # Only rank 1 asked for async_send: its sends (to rank 3) were started, rank 0's blocked.
    assert started and set(started) == {3}
    assert replies[0] == replies[1] == ("ok", None)
    for reply in replies[2:]:
        assert reply[0] == "ok" and torch.equal(reply[1]["x"], torch.arange(4.0)) and reply[1]["n"] == "meta"
    parents[0].send_bytes(gloo.dumps((_raise_documented, ())))
    assert answer(0) == ("error", "AuxiliaryPPError", "received auxiliary PP output without a sampling observer", "P1")
    parents[1].send_bytes(gloo.dumps((_raise_plain, ())))
    assert answer(1) == ("error", "ValueError", "not from the catalog", None)
    for c in parents:
        c.send_bytes(gloo.dumps(None))
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)


def _mark(ctx, value):
    ctx.mark = value
    # What an extension joins its own groups with: the rendezvous store, shared by every rank.
    ctx.store.set(f"mark of {ctx.rank}", value)


def _read_mark(ctx):
    peer = 1 - ctx.rank
    return ctx.mark, ctx.world_size, ctx.ag_size, ctx.store.get(f"mark of {peer}").decode()


def test_an_extension_is_set_up_on_every_rank_before_it_serves(tmp_path):
    """It runs on each rank before the rank says it is ready, and sees the world's shape and its store."""
    store = str(tmp_path / "store")
    pipes = [multiprocessing.Pipe() for _ in range(2)]
    threads = [
        threading.Thread(
            target=gloo.rank_main, args=(r, 2, store, 2, 10.0, pipes[r][1], (_mark, (f"set on {r}",))), daemon=True
        )
        for r in range(2)
    ]
    for t in threads:
        t.start()
    parents = [p for p, _ in pipes]
    assert [_reply(parents[r], threads[r]) for r in range(2)] == [("ready",)] * 2
    for r in range(2):
        parents[r].send_bytes(gloo.dumps((_read_mark, ())))
    assert [_reply(parents[r], threads[r]) for r in range(2)] == [
        ("ok", ("set on 0", 2, 2, "set on 1")),
        ("ok", ("set on 1", 2, 2, "set on 0")),
    ]
    for c in parents:
        c.send_bytes(gloo.dumps(None))
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)


@pytest.mark.subprocess
def test_a_shared_world_with_an_extension_sets_it_up_on_its_worker_processes():
    w = gloo.world(2, extension=(_mark, ("shared",)))
    try:
        outcomes = w.run({rank: (_read_mark, ()) for rank in (0, 1)}, timeout=30)
        assert {rank: o.value for rank, o in outcomes.items()} == {
            0: ("shared", 2, 1, "shared"),
            1: ("shared", 2, 1, "shared"),
        }
        assert gloo.world(2, extension=(_mark, ("shared",))) is w and gloo.world(2) is not w
    finally:
        w.stop()


def test_shared_world_is_reused_and_stopped():
    w = gloo.world(2)
    assert gloo.world(2) is w
    gloo.stop_all()
    assert not w.running


class _Conn:
    def __init__(self, readable, data=None):
        self.readable, self.data, self.waits = readable, data, []

    def poll(self, timeout):
        self.waits.append(timeout)
        return self.readable

    def recv_bytes(self):
        if self.data is None:
            raise EOFError
        return self.data


class _Proc:
    def __init__(self, alive, exitcode=None):
        self.alive, self.exitcode, self.joins = alive, exitcode, []
        self.sentinel = self

    def is_alive(self):
        return self.alive

    def join(self, timeout):
        self.joins.append(timeout)


def test_the_watchdog_waits_the_whole_limit_while_no_rank_has_failed():
    watchdog = gloo.Watchdog(10.0, 1.0)
    assert (watchdog.remaining(10.25), watchdog.remaining(12.0)) == (0.75, 0.0)
    # A reply read at the deadline counts: only a wait that has ended with ranks still waiting gives up.
    assert (watchdog.expired(10.75), watchdog.expired(11.0)) == (False, True)
    assert (watchdog.limit, watchdog.after) == (1.0, None)


def test_the_watchdog_gives_the_others_only_a_short_grace_from_the_first_failure_seen():
    watchdog = gloo.Watchdog(0.0, 100.0)
    watchdog.failed(2, 3.0)
    assert (watchdog.remaining(3.0), watchdog.limit, watchdog.after) == (gloo.FAILURE_GRACE, gloo.FAILURE_GRACE, 2)
    # _collect sees the failures again on each pass: the grace that began with the first one stands.
    watchdog.failed(1, 3.25)
    assert (watchdog.remaining(3.0), watchdog.after) == (gloo.FAILURE_GRACE, 2)


def test_a_grace_that_ends_no_sooner_than_the_deadline_does_not_count():
    watchdog = gloo.Watchdog(0.0, 1.0)
    watchdog.failed(0, 1.0 - gloo.FAILURE_GRACE)
    assert (watchdog.remaining(0.0), watchdog.limit, watchdog.after) == (1.0, 1.0, None)


class _Rank:
    """A rank process for ``_collect``: its sentinel is a real pipe, ready (at end of file) once the rank is dead."""

    def __init__(self, alive):
        self.alive, self.exitcode = alive, 3
        self.sentinel, write = os.pipe()
        self.ends = [self.sentinel]
        if alive:
            self.ends.append(write)
        else:
            os.close(write)

    def is_alive(self):
        return self.alive

    def join(self, timeout):
        pass


def _collected(answers, timeout):
    """The outcomes ``_collect`` reports, and the stacks it asked for, for ranks that answer at once
    (``"ok"``), soon (``"soon"``, a twentieth of a second later), die at once (``"died"``) or never
    (``None``), each over a real pipe."""
    w = gloo.GlooWorld(len(answers))
    pipes = [multiprocessing.Pipe(duplex=False) for _ in answers]
    w.conns = [reader for reader, _ in pipes]
    w.procs = [_Rank(alive=answer != "died") for answer in answers]
    reply = gloo.dumps(("ok", None))
    soon = [
        threading.Timer(0.05, writer.send_bytes, (reply,))
        for (_, writer), answer in zip(pipes, answers)
        if answer == "soon"
    ]
    for (_, writer), answer in zip(pipes, answers):
        if answer == "ok":
            writer.send_bytes(reply)
    for timer in soon:
        timer.start()
    asked = []
    w._stacks = lambda hung, dead: asked.append((hung, dead)) or {rank: f"stack of {rank}" for rank in [*hung, *dead]}
    try:
        out = w._collect(range(len(answers)), timeout)
    finally:
        for timer in soon:
            timer.join()
        for (reader, writer), proc in zip(pipes, w.procs):
            reader.close()
            writer.close()
            for end in proc.ends:
                os.close(end)
        w.procs, w.conns = [], []
    return out, asked


def test_collect_reads_the_replies_that_are_there_before_it_gives_up():
    out, _ = _collected(["ok", None], timeout=0.0)
    assert (out[0].status, out[1].status, out[1].limit, out[1].after) == ("ok", "hang", 0.0, None)


def test_collect_waits_on_for_a_rank_still_working_while_none_has_failed():
    out, asked = _collected(["ok", "soon"], timeout=30.0)
    assert out == {0: gloo.Outcome("ok"), 1: gloo.Outcome("ok")} and asked == []


@pytest.mark.subprocess
def test_collect_gives_failed_ranks_their_stacks_and_a_hung_one_the_grace_it_had():
    # Rank 0 is found dead at once (its sentinel wakes the wait, though its pipe stays silent).
    out, asked = _collected(["died", "ok", None], timeout=100.0)
    # One request for the stacks of every failed rank, none for a rank that answered.
    assert asked == [([2], [0])]
    assert out == {
        0: gloo.Outcome("died", exitcode=3, stack="stack of 0"),
        1: gloo.Outcome("ok"),
        2: gloo.Outcome("hang", stack="stack of 2", limit=gloo.FAILURE_GRACE, after=0),
    }
    # A timeout shorter than the grace: rank 1 had all of its time.
    out, _ = _collected(["died", None], timeout=gloo.FAILURE_GRACE / 2)
    assert out[1] == gloo.Outcome("hang", stack="stack of 1", limit=gloo.FAILURE_GRACE / 2, after=None)


def test_read_reply_tells_working_answered_and_dead_ranks_apart():
    working = _Conn(False)
    assert gloo.read_reply(working, _Proc(True)) is None
    # It only looks: _collect does the waiting, on every rank at once.
    assert working.waits == [0]
    assert gloo.read_reply(_Conn(True, gloo.dumps(("ok", 5))), _Proc(True)) == gloo.Outcome("ok", 5)
    closed = _Proc(False, -9)
    assert gloo.read_reply(_Conn(True), closed) == gloo.Outcome("died", exitcode=-9)
    # A rank whose pipe closed but whose process lingers must not hold up the whole world.
    assert len(closed.joins) == 1 and closed.joins[0] is not None
    assert gloo.read_reply(_Conn(False), _Proc(False, 1)) == gloo.Outcome("died", exitcode=1)


def test_pipeline_ranks_in_threads_over_real_gloo_groups(tmp_path):
    """The pipeline's rank function in threads of this process over real gloo groups (no
    all-gather, no loopback stall detector): the same code the worker processes run."""
    from ppaux_strategies import RecordingObserver

    from ppaux.relay.pipeline import PipelineConfig, Plan, Stage, run_rank

    store = str(tmp_path / "store")
    config = PipelineConfig([Stage(observer=RecordingObserver()), Stage()], outputs=[{"s": torch.arange(3.0)}])
    reports = {}

    def rank(r):
        ctx = gloo.make_context(r, 2, store, 1, 10.0)
        reports[r] = run_rank(ctx, Plan(config))

    _run_in_threads(rank, 2)
    assert torch.equal(reports[0].received[0]["s"], torch.arange(3.0))
    assert reports[1].keys == [["next_token_ids", "__msg_type__"]]


class _LoggingGroup:
    """A stand-in process group that logs each point-to-point call."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def send(self, tensors, peer, tag):
        self.log.append((self.name, "send", tensors, peer, tag))
        return DoneWork()

    def recv(self, tensors, peer, tag):
        self.log.append((self.name, "recv", tensors, peer, tag))
        return DoneWork()


def test_gloo_channel_routes_each_group_name_to_its_own_process_group():
    log = []
    ch = GlooChannel(cpu=_LoggingGroup("cpu-pg", log), device=_LoggingGroup("device-pg", log), peer=3)
    t = torch.zeros(2)
    ch.send(t, DEVICE_GROUP)
    ch.recv(t, CPU_GROUP)
    assert ch.isend(t, DEVICE_GROUP).wait() is True
    assert [(name, op, peer, tag) for name, op, _, peer, tag in log] == [
        ("device-pg", "send", 3, 0),
        ("cpu-pg", "recv", 3, 0),
        ("device-pg", "send", 3, 0),
    ]
    assert all(len(ts) == 1 and ts[0] is t for _, _, ts, _, _ in log)


def test_contexts_join_cpu_device_and_consecutive_all_gather_groups(tmp_path):
    store = str(tmp_path / "store")
    got = {}

    def rank(r):
        ctx = gloo.make_context(r, 4, store, 2, 10.0)
        gathered = ctx.all_gather.all_gather(torch.tensor([r]))
        # Pairs swap one tensor over the device group: evens send first, odds receive first.
        mine, theirs = torch.tensor([10 * r]), torch.empty(1, dtype=torch.long)
        ch = ctx.channel(r ^ 1)
        for op in (ch.send, ch.recv) if r % 2 == 0 else (ch.recv, ch.send):
            op(mine if op == ch.send else theirs, DEVICE_GROUP)
        got[r] = (ctx.rank, ctx.all_gather.rank, ctx.all_gather.size, gathered.tolist(), theirs.item())

    _run_in_threads(rank, 4)
    assert got == {
        0: (0, 0, 2, [0, 1], 10),
        1: (1, 1, 2, [0, 1], 0),
        2: (2, 0, 2, [2, 3], 30),
        3: (3, 1, 2, [2, 3], 20),
    }


def test_the_all_gather_group_gathers_complex_tensors_as_torch_distributed_does(tmp_path):
    """gloo itself refuses complex ("Invalid scalar type"); torch.distributed.all_gather, which
    SGLang's all-gather is, gathers them, and so must the model."""
    store = str(tmp_path / "store")
    got = {}

    def rank(r):
        ctx = gloo.make_context(r, 2, store, 2, 10.0)
        got[r] = ctx.all_gather.all_gather(torch.tensor([r + 1j, -r * 1j], dtype=torch.complex64))

    _run_in_threads(rank, 2)
    want = torch.tensor([1j, 0j, 1 + 1j, -1j], dtype=torch.complex64)
    assert all(t.dtype == torch.complex64 and torch.equal(t, want) for t in got.values()), got


@pytest.mark.subprocess
def test_contexts_without_all_gather_and_a_rendezvous_that_times_out(tmp_path):
    store = str(tmp_path / "store")
    gathers = {}
    _run_in_threads(lambda r: gathers.__setitem__(r, gloo.make_context(r, 2, store, 1, 10.0).all_gather), 2)
    assert gathers == {0: None, 1: None}
    lonely = str(tmp_path / "lonely")
    with pytest.raises(RuntimeError):
        gloo.make_context(0, 2, lonely, 1, 0.2)  # rank 1 never comes: gloo gives up after the timeout


class _FakeContext:
    def __init__(self, channel, all_gather):
        self._channel, self.all_gather, self.peers = channel, all_gather, []

    def channel(self, peer):
        self.peers.append(peer)
        return self._channel


def test_send_and_recv_calls_use_the_ranks_all_gather_group_and_device(monkeypatch):
    log = SentLog()
    ctx = _FakeContext(log, HalfGather())
    gloo._send(ctx, {"x": torch.arange(4.0)}, 5)
    assert ctx.peers == [5] and log.messages[-1].values == [2.0, 3.0]  # this rank's half of the tensor
    asked = []
    monkeypatch.setattr(gloo, "recv_tensor_dict", lambda ch, **kw: asked.append((ch, kw)) or {})
    assert gloo._recv(ctx, 7, "cpu") == {}
    assert ctx.peers == [5, 7] and asked == [(log, {"all_gather_group": ctx.all_gather, "device": "cpu"})]


def test_relay_asks_rank_1_to_receive_on_the_named_device(monkeypatch):
    runs = []

    class _World:
        def run(self, calls):
            runs.append(calls)
            return {0: gloo.Outcome("ok"), 1: gloo.Outcome("ok", {"x": 1})}

    monkeypatch.setattr(gloo, "world", lambda n: _World() if n == 2 else None)
    assert gloo.relay({"x": 1}, device=torch.device("cuda", 1)) == {"x": 1}
    assert gloo.relay({"x": 1}) == {"x": 1}
    # A string crosses to the worker: torch.device("cuda", 1) arrives as "cuda:1".
    assert [c[1] for c in runs] == [(gloo._recv, (0, "cuda:1")), (gloo._recv, (0, None))]
    assert [c[0] for c in runs] == [(gloo._send, ({"x": 1}, 1))] * 2


def test_a_gloo_channel_moves_nothing_for_a_meta_tensor_as_torch_distributed():
    calls = []

    class Group:
        def send(self, tensors, peer, tag):
            calls.append(("send", peer))
            return DoneWork()

        def recv(self, tensors, peer, tag):
            calls.append(("recv", peer))
            return DoneWork()

    ch = GlooChannel(Group(), Group(), 1)
    meta = torch.empty(2, device="meta")
    ch.send(meta, CPU_GROUP)
    ch.recv(meta, DEVICE_GROUP)
    assert ch.isend(meta, CPU_GROUP).wait() is True and calls == []
    ch.send(torch.zeros(1), CPU_GROUP)
    ch.recv(torch.zeros(1), DEVICE_GROUP)
    assert calls == [("send", 1), ("recv", 1)]


def test_every_rank_of_a_world_is_started_with_its_extension(monkeypatch):
    """What each worker process of a shared world is handed: its rank, the world's shape and the extension to set up."""
    import shutil

    started = []

    class Conn:
        def close(self):
            pass

    class Rank:
        def __init__(self, target, args, daemon):
            self.args = args

        def start(self):
            started.append(self.args)

    class Context:
        Pipe = staticmethod(lambda: (Conn(), Conn()))

        def Process(self, target, args, daemon):  # noqa: N802 - multiprocessing's name
            return Rank(target, args, daemon)

    def extension(ctx):
        pass

    monkeypatch.setattr(gloo, "_context", lambda: Context())
    monkeypatch.setattr(gloo, "_worlds", {})  # the shared world made here is this test's alone
    w = gloo.world(2, extension=(extension, ("9.9.9",)))
    monkeypatch.setattr(w, "_collect", lambda ranks, timeout: {r: gloo.Outcome("ok") for r in ranks})
    try:
        w.start()
        assert [(a[0], a[1], a[3], a[6]) for a in started] == [
            (0, 2, 1, (extension, ("9.9.9",))),
            (1, 2, 1, (extension, ("9.9.9",))),
        ]
    finally:
        w.procs, w.conns = [], []
        shutil.rmtree(w.tmp)
