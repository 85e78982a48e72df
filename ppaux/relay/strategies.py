"""Hypothesis strategies of faults on the PP output relay and schedules that place them in a run
(see :mod:`ppaux.relay.faults`). They live beside the relay, not in ``ppaux_strategies``, which
depends on the contract core only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from ppaux_strategies.validation import check_range, check_type

from ppaux.relay.faults import FAULTS, BitFlip, Delay, Fault

# Faults that need a real worker process, or a group of all-gather ranks, to mean anything.
PROCESS_FAULTS = ("kill_mid_send",)
ALL_GATHER_FAULTS = ("diverge",)


class FaultSchedule(NamedTuple):
    """``fault`` strikes at step ``step`` of a run of ``steps`` steps (later steps are clean)."""

    fault: Fault
    step: int
    steps: int


def _check_names(names: Sequence[str] | None) -> tuple[str, ...]:
    if names is None:
        return tuple(FAULTS)
    names = tuple(names)
    unknown = [n for n in names if n not in FAULTS]
    if not names or unknown:
        raise InvalidArgument(f"names={names!r} must be a non-empty selection of {tuple(FAULTS)!r}")
    return names


def faults(
    *, names: Sequence[str] | None = None, keys: Sequence[str] | None = None, include_none: bool = False
) -> st.SearchStrategy[Fault]:
    """Draw a named fault (:data:`ppaux.relay.faults.FAULTS`), aimed at the first aux key or at one of
    ``keys``; ``bit_flip`` draws which bit, ``delay`` how long (at most 20 ms).

    ``names`` restricts the kinds; ``include_none`` adds the no-fault baseline.
    Shrinks towards the first kind in ``names`` (``drop_key`` by default) on the first aux key.
    """
    chosen = _check_names(names)
    check_type(bool, include_none, "include_none")
    if keys is not None:
        keys = tuple(keys)
        if not keys:
            raise InvalidArgument("keys must be None or a non-empty sequence of keys to aim at")
    target = st.none() if keys is None else st.one_of(st.none(), st.sampled_from(keys))

    def build(name: str) -> st.SearchStrategy[Fault]:
        cls = FAULTS[name]
        if cls is BitFlip:
            return st.builds(BitFlip, key=target, bit=st.integers(0, 63))
        if cls is Delay:
            return st.builds(Delay, key=target, seconds=st.sampled_from([0.0, 0.005, 0.02]))
        return st.builds(cls, key=target)

    kinds = st.sampled_from(chosen).flatmap(build)
    return st.one_of(kinds, st.just(Fault())) if include_none else kinds


def fault_schedules(
    *, steps: int = 2, names: Sequence[str] | None = None, keys: Sequence[str] | None = None
) -> st.SearchStrategy[FaultSchedule]:
    """Draw a :class:`FaultSchedule`: a fault from :func:`faults` and the step (of ``steps``,
    two by default) it strikes. ``reorder`` needs a later step to swap with, so it is only drawn before the last.

    Shrinks towards the first fault kind at step 0.
    """
    check_range(steps, "steps", low=1, high=16)
    chosen = _check_names(names)
    if steps == 1:
        chosen = tuple(n for n in chosen if n != "reorder")
        if not chosen:
            raise InvalidArgument("reorder needs steps >= 2")

    @st.composite
    def schedule(draw: st.DrawFn) -> FaultSchedule:
        fault = draw(faults(names=chosen, keys=keys))
        last = steps - 2 if fault.name == "reorder" else steps - 1
        return FaultSchedule(fault, draw(st.integers(0, last)), steps)

    return schedule()
