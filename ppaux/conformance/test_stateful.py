"""Interleaved adds and pops of several outputs, faulty ones included, on one PP dict, checked
against a model after every step: no leaked keys.

Each rule takes its output or observer as a drawn argument, so that a counterexample reads as
the few calls that show the bug, values in each call (``state.add(output=PPOutput({...}))``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test
from ppaux_strategies import (
    NotPPObserver,
    NotPPOutput,
    ObserverFailure,
    PPOutput,
    RaisingPPOutput,
    RecordingObserver,
    bound,
)

from ppaux.conformance.support import Oracle, assert_documented, assert_same_objects, verdict
from ppaux.testing.impl import Implementation

# A small name pool so that adds collide and pops find several outputs.
NAMES = st.sampled_from(["scores", "ids", "top.k"])
# The machine compares tensors by identity only, so a tensor costs no choice: short steps let
# Hypothesis delete whole steps when it shrinks (with drawn tensors a counterexample kept
# several redundant adds).
TENSORS = st.just(()).map(torch.zeros)
# Steps of a run: the scope's (ppaux_strategies.bound("steps"), 12 in the small scope: short runs shrink fast,
# and most leaks show within a few steps); a larger scope reaches what only a long run of adds and pops shows.
# Only the step count changes with the scope: each test's factory line below is what Hypothesis derives
# its derandomized examples from, so CI's runs stay the ones they were.


def outputs(max_items: int) -> st.SearchStrategy[object]:
    """Valid outputs, malformed ones (bad names, non-tensors, empty) and outputs add must refuse."""
    good = st.dictionaries(NAMES, TENSORS, min_size=1, max_size=max_items)
    bad_item = st.tuples(st.one_of(NAMES, st.sampled_from(["", 3])), st.one_of(TENSORS, st.just([0.5])))
    bad = st.lists(bad_item, min_size=1, max_size=max_items).map(dict)
    payloads: st.SearchStrategy[object] = st.one_of(good, bad, st.just({}))
    return st.one_of(payloads.map(PPOutput), st.builds(NotPPOutput), st.builds(RaisingPPOutput))


def observers(modes: Sequence[str]) -> st.SearchStrategy[object]:
    """A recording observer in one of ``modes``, no observer, or one without PP support: one choice each."""
    return st.sampled_from([*modes, None, "not PP"]).map(
        lambda mode: None if mode is None else NotPPObserver() if mode == "not PP" else RecordingObserver(mode)
    )


def machine(max_items: int, observer_modes: Sequence[str]) -> Callable[[Implementation], RuleBasedStateMachine]:
    """A state machine over one PP dict whose model is the dict the contract says we must have:
    ordinary keys plus the aux keys of unpopped successful adds."""

    class TransportMachine(RuleBasedStateMachine):
        def __init__(self, impl: Implementation) -> None:
            super().__init__()
            self.t = impl
            # The ordinary entries SGLang's last stage always sends; every step must keep them in place.
            self.d: dict[object, object] = {"next_token_ids": torch.zeros(2), "__msg_type__": "pp_output"}
            self.model: list[tuple[object, object]] = list(self.d.items())

        @rule(output=outputs(max_items))
        def add(self, output: Any) -> None:  # Any: a drawn output, valid or not (an accepted one is a PPOutput)
            expected = None if isinstance(output, RaisingPPOutput) else Oracle(self.t.prefix).add_error(self.d, output)
            try:
                self.t.add(self.d, output)
            except ObserverFailure as exc:
                assert isinstance(output, RaisingPPOutput), (
                    f"expected add({output!r}) to raise no ObserverFailure, got {exc!r}"
                )
            except RuntimeError as exc:
                assert expected is not None, f"expected add({output!r}) to succeed, got {exc!r}"
                assert_documented(self.t, exc, *expected)
            else:
                assert expected is None, f"expected add({output!r}) to raise {verdict(expected)}, got no exception"
                assert not isinstance(output, RaisingPPOutput), (
                    f"expected add({output!r}) to propagate the ObserverFailure of to_pp_tensors(), got no exception"
                )
                self.model += [(self.t.prefix + n, v) for n, v in output.payload.items()]
            self.no_leaked_keys()

        @rule(observer=observers(observer_modes))
        def pop(self, observer: Any) -> None:  # Any: a drawn observer (one that was called records)
            aux = [(k, v) for k, v in self.model if isinstance(k, str) and k.startswith(self.t.prefix)]
            expected = Oracle(self.t.prefix).pop_error(self.d, observer)
            try:
                result = self.t.pop(self.d, observer)
            except ObserverFailure as exc:
                assert observer.mode == "raise", (
                    f"expected pop with {observer!r} to raise no ObserverFailure, got {exc!r}"
                )
            except RuntimeError as exc:
                assert_documented(self.t, exc, *(expected or ("P4",)))
            else:
                if not aux:
                    assert result is None, (
                        f"expected pop with {observer!r} and no aux keys to return None, got {result!r}"
                    )
                else:
                    assert result is observer.returned[0], (
                        f"expected pop to return the observer's own object {observer.returned[0]!r}, got {result!r}"
                    )
                    assert_same_objects(observer.snapshots[0], {k[len(self.t.prefix) :]: v for k, v in aux})
                    self.model = [(k, v) for k, v in self.model if (k, v) not in aux]
            self.no_leaked_keys()

        def no_leaked_keys(self) -> None:
            # Checked at the end of every step rather than as an @invariant, which Hypothesis
            # would print as a line of its own after each step of a counterexample.
            expected = [k for k, _ in self.model]
            assert list(self.d) == expected, f"expected the dict's keys {expected!r}, got {list(self.d)!r}"
            for k, v in self.model:
                assert self.d[k] is v, f"expected the very value object under {k!r}, got another object: {self.d[k]!r}"

    return TransportMachine


# Only failures that the contract and SGLang agree on: one-item payloads fail before any write,
# observers keep their dict.
ContractMachine = machine(max_items=1, observer_modes=("rebuild", "return_none", "raise"))
RobustMachine = machine(max_items=3, observer_modes=("rebuild", "return_none", "raise", "drop_one", "add_one", "clear"))


@pytest.mark.contract
@pytest.mark.clause("no-leaked-keys")
def test_interleaved_adds_and_pops_leak_no_key(ppaux_impl: Implementation, ppaux_settings: settings) -> None:
    """no-leaked-keys: after any sequence of adds and pops of one-item outputs, valid or not, the dict holds exactly the
    ordinary keys and the aux keys of successful adds not yet popped."""
    run = settings(ppaux_settings, stateful_step_count=bound("steps"))
    # hypothesis types the factory as a class, yet runs any callable that returns a machine.
    run_state_machine_as_test(lambda: ContractMachine(ppaux_impl), settings=run)  # type: ignore[arg-type]


@pytest.mark.robustness
@pytest.mark.clause("no-leaked-keys")
def test_interleaved_faulty_adds_and_pops_leak_no_key(ppaux_impl: Implementation, ppaux_settings: settings) -> None:
    """no-leaked-keys: holds with any output and any observer too; multi-item outputs that fail half-way and
    observers that change the dict they are handed leave no key behind (SGLang leaks both)."""
    run = settings(ppaux_settings, stateful_step_count=bound("steps"))
    # hypothesis types the factory as a class, yet runs any callable that returns a machine.
    run_state_machine_as_test(lambda: RobustMachine(ppaux_impl), settings=run)  # type: ignore[arg-type]
