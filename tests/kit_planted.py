"""Plugins planted for the kit's hang and crash findings (tests/test_kit.py).

The HARMS misbehave the way a real plugin can (a loop, a wait no signal reaches, an exit, a
segfault), only on outputs of two or more tensors, so that the minimal output Hypothesis reports
has exactly two; one line does the harm in each, for the tests to point at. ``dawdle`` takes a
few seconds in each step the kit runs (SLOW_STEPS). The rest depend on more than the drawn
output (Once, FailsInAChild), use torch's thread pool (Parallel) or log what was drawn (Logged)."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from hypothesis import strategies as st


def loop(tensors: Mapping[str, Any]) -> None:
    while len(tensors) >= 2: pass  # noqa: E701 - one line: the stack points at it wherever a timer strikes  # fmt: skip


def wait_unreachable(tensors: Mapping[str, Any]) -> None:
    if len(tensors) >= 2:
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
        read_end, _ = os.pipe()
        os.read(read_end, 1)  # nobody writes: blocks in the kernel for ever, every signal blocked


def exit_3(tensors: Mapping[str, Any]) -> None:
    if len(tensors) >= 2:
        os._exit(3)


def segfault(tensors: Mapping[str, Any]) -> None:
    if len(tensors) >= 2:
        ctypes.string_at(0)  # reads address 0: SIGSEGV


# A pipe nobody writes to (its write end kept open): waiting to read it is waiting for an event that never comes.
NEVER_READY, _WRITE_END = os.pipe()


def dawdle(*_: Any) -> None:
    """Waits for input that never comes, whatever it is given, 3 s at most: past the tests' limits, but it
    ends, so that a step the kit runs without a limit fails its test in bounded time. It waits rather than
    spins: the tests of the timer on a busy loop are ``loop``'s, and this one leaves the cores to the tests
    beside it."""
    end = time.monotonic() + 3
    while (left := end - time.monotonic()) > 0: select.select([NEVER_READY], [], [], left)  # noqa: E701 - one line: the stack points at it  # fmt: skip


HARMS: dict[str, Callable[[Mapping[str, Any]], None]] = {
    "loop": loop,
    "wait_unreachable": wait_unreachable,
    "exit_3": exit_3,
    "segfault": segfault,
    "dawdle": dawdle,
}


class Out:
    """Sends ``payload``; ``to_pp_tensors()`` first does ``harm`` (a name in HARMS) to it."""

    def __init__(self, payload: dict[str, torch.Tensor], harm: str | None = None) -> None:
        self.payload, self.harm = payload, harm

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        if self.harm:
            HARMS[self.harm](self.payload)
        return self.payload

    def __repr__(self) -> str:
        return f"Out({self.payload!r})"


class Obs:
    """Rebuilds an :class:`Out` from exactly what it receives, ``harm`` done first."""

    harm: str | None = None

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Out:
        if self.harm:
            HARMS[self.harm](tensors)
        return Out(dict(tensors))


def observer(harm: str) -> type:
    """An :class:`Obs` whose ``from_pp_tensors()`` does ``harm``."""
    return type(f"Obs_{harm}", (Obs,), {"harm": harm})


def outputs(harm: str | None = None, most: int = 3) -> st.SearchStrategy[Out]:
    """Outputs of 1 to ``most`` one-element tensors named kit.t0, kit.t1, ..."""
    return st.integers(1, most).map(lambda n: Out({f"kit.t{i}": torch.zeros(1) for i in range(n)}, harm))


# Hypothesis's note on the minimal output (its first words changed in 6.1xx).
MINIMAL = {
    f"{head}: check_observer(\n    output=Out({{'kit.t0': tensor([0.]), 'kit.t1': tensor([0.])}}),\n)"
    for head in ("Falsifying example", "Failing test case")
}


class ExitsWhenCompared(Out):
    """Ends the process the second time its ``to_pp_tensors()`` runs: add's call passes, the
    kit's comparison of it with the rebuilt output after the relay does not."""

    def __init__(self) -> None:
        super().__init__({"kit.t0": torch.zeros(1)})
        self.calls = 0

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        self.calls += 1
        if self.calls > 1:
            os._exit(3)
        return self.payload


class Once:
    """``to_pp_tensors()`` does ``harm`` the first time any process runs it (a marker file says
    whether one has): state outside the drawn output."""

    def __init__(self, marker: Path, harm: str) -> None:
        self.marker, self.harm = marker, harm

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        payload = {"kit.t0": torch.zeros(1), "kit.t1": torch.zeros(1)}
        if not self.marker.exists():
            self.marker.touch()
            HARMS[self.harm](payload)
        return payload


class Parallel(Obs):
    """Runs a torch op large enough for its thread pool in ``from_pp_tensors()``: fine, unless the
    process was forked after its parent used that pool."""

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Out:
        torch.zeros(1 << 20).add_(1).sum()
        return super().from_pp_tensors(tensors)


class Logged:
    """Writes the process and ``n`` to ``log`` each time it is sent; sends nothing (A2) when ``n`` is
    odd: which drawn example fails first, and what was drawn before it, is the seed's choice."""

    def __init__(self, log: Path, n: int) -> None:
        self.log, self.n = log, n

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        with self.log.open("a") as f:
            f.write(f"{os.getpid()} {self.n}\n")
        return {} if self.n % 2 else {"kit.n": torch.tensor(self.n)}


class FailsInAChild:
    """``to_pp_tensors()`` raises in any process but the one that made it: a check that fails in the
    kit's forked child and passes in the test's process."""

    def __init__(self) -> None:
        self.home = os.getpid()

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        if os.getpid() != self.home:
            raise RuntimeError("not at home")
        return {"kit.t0": torch.zeros(1)}


class Slow:
    """A value whose ``==`` dawdles: what the comparison of host outputs calls."""

    def __eq__(self, other: object) -> bool:
        dawdle()
        return True

    __hash__ = None  # type: ignore[assignment]


class Host:
    def __init__(self, value: Any) -> None:
        self.value = value

    def consume(self, batch: Any, commits: Any) -> None:
        pass


class Hosted(Out):
    """An output with SGLang's lifecycle: ``copy_to_host()`` hands the scheduler a :class:`Host` of
    ``value``, after ``harm`` when ``copy_harm`` is set."""

    def __init__(self, payload: dict[str, torch.Tensor], value: Any = 0, copy_harm: str | None = None) -> None:
        super().__init__(payload)
        self.value, self.copy_harm = value, copy_harm

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Host:
        if self.copy_harm:
            HARMS[self.copy_harm](self.payload)
        return Host(self.value)


class Rebuilds(Obs):
    """Rebuilds ``kind(tensors, **extra)``."""

    kind: Callable[..., Any] = Out
    extra: dict[str, Any] = {}

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Any:
        return self.kind(dict(tensors), **self.extra)


def rebuilds(kind: Callable[..., Any], **extra: Any) -> type:
    return type("Rebuilds", (Rebuilds,), {"kind": kind, "extra": extra})


def dawdling_observer() -> Obs:
    dawdle()
    return Obs()


ONE_TENSOR = {"kit.t0": torch.zeros(1)}
# Each step of the kit that runs a plugin's code, made to dawdle: (observer factory, outputs,
# keyword arguments of check_observer, the call the hang names).
SLOW_STEPS: dict[str, Any] = {
    "add": (Obs, st.just(Out(ONE_TENSOR, "dawdle")), {}, "to_pp_tensors"),
    "observer factory": (dawdling_observer, st.just(Out(ONE_TENSOR)), {}, "observer_factory"),
    "pop": (observer("dawdle"), st.just(Out(ONE_TENSOR)), {}, "from_pp_tensors"),
    "to_pp_tensors of the rebuilt output": (
        rebuilds(Out, harm="dawdle"),
        st.just(Out(ONE_TENSOR)),
        {},
        "to_pp_tensors",
    ),
    "copy_to_host": (rebuilds(Hosted, copy_harm="dawdle"), st.just(Hosted(ONE_TENSOR)), {}, "copy_to_host"),
    "the comparison of the host outputs": (
        rebuilds(Hosted, value=Slow()),
        st.just(Hosted(ONE_TENSOR, value=Slow())),
        {},
        "the comparison of the host outputs",
    ),
    "equal": (Obs, st.just(Out(ONE_TENSOR)), {"equal": dawdle}, "equal"),
}
