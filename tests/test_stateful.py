"""Interleaved adds and pops of several outputs, faulty ones included, on one PP dict,
checked against a model after every step: no leaked keys."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from ppaux.pytest_plugin import current_implementation
from ppaux_strategies import ObserverFailure, PPOutput, RaisingPPOutput, RecordingObserver, NotPPObserver, NotPPOutput, tensors
from tests.support import assert_same_objects, Oracle, assert_documented

# A small name pool so that adds collide and pops find several outputs.
NAMES = st.sampled_from(["scores", "ids", "top.k"])


def _payloads(max_items: int):
    good = st.dictionaries(NAMES, tensors(max_dims=1, max_side=2), min_size=1, max_size=max_items)
    bad_item = st.tuples(st.one_of(NAMES, st.sampled_from(["", 3])), st.one_of(tensors(max_dims=1, max_side=2), st.just([0.5])))
    bad = st.lists(bad_item, min_size=1, max_size=max_items).map(dict)
    return st.one_of(good, bad, st.just({}))


class TransportMachine(RuleBasedStateMachine):
    """The model is the dict the contract says we must have: ordinary keys plus the aux keys of unpopped successful adds."""

    max_items = 3
    observer_modes = ("rebuild", "return_none", "raise", "drop_one", "add_one", "clear")

    def __init__(self) -> None:
        super().__init__()
        self.t = current_implementation()
        self.d = {}
        self.model = []

    @initialize(ordinary=st.lists(st.sampled_from(["next_token_ids", "hidden_states", "__msg_type__"]), unique=True, max_size=3))
    def start(self, ordinary):
        for key in ordinary:
            value = "pp_output" if key == "__msg_type__" else torch.zeros(2)
            self.d[key] = value
            self.model.append((key, value))

    @rule(data=st.data())
    def add(self, data):
        out = data.draw(st.one_of(_payloads(self.max_items).map(PPOutput), st.builds(NotPPOutput), st.builds(RaisingPPOutput)))
        expected = None if isinstance(out, RaisingPPOutput) else Oracle(self.t.prefix).add_error(self.d, out)
        try:
            self.t.add(self.d, out)
        except ObserverFailure:
            assert isinstance(out, RaisingPPOutput)
        except RuntimeError as exc:
            assert expected is not None, f"add raised {exc!r} for a valid output"
            assert_documented(exc, *expected)
        else:
            assert expected is None and not isinstance(out, RaisingPPOutput)
            self.model += [(self.t.prefix + n, v) for n, v in out.payload.items()]

    @rule(data=st.data())
    def pop(self, data):
        # Drawn here, not in @rule, so that a subclass's observer_modes take effect.
        obs = data.draw(st.one_of(st.none(), st.builds(NotPPObserver), st.sampled_from(self.observer_modes).map(RecordingObserver)))
        aux = [(k, v) for k, v in self.model if isinstance(k, str) and k.startswith(self.t.prefix)]
        expected = Oracle(self.t.prefix).pop_error(self.d, obs)
        try:
            result = self.t.pop(self.d, obs)
        except ObserverFailure:
            assert obs.mode == "raise"
        except RuntimeError as exc:
            assert_documented(exc, *(expected or ("P4",)))
        else:
            if not aux:
                assert result is None
            else:
                assert result is obs.returned[0]
                assert_same_objects(obs.snapshots[0], {k[len(self.t.prefix):]: v for k, v in aux})
                self.model = [(k, v) for k, v in self.model if (k, v) not in aux]

    @invariant()
    def no_leaked_keys(self):
        assert list(self.d) == [k for k, _ in self.model]
        assert all(self.d[k] is v for k, v in self.model)


class ContractMachine(TransportMachine):
    """Only failures that the contract and SGLang agree on: one-item payloads fail before any write, observers keep their dict."""

    max_items = 1
    observer_modes = ("rebuild", "return_none", "raise")


TestContractInterleaving = pytest.mark.contract(pytest.mark.clause("no-leaked-keys")(ContractMachine.TestCase))
TestRobustInterleaving = pytest.mark.robustness(pytest.mark.clause("no-leaked-keys")(TransportMachine.TestCase))

# Short runs shrink fast; a leak shows within a few steps.
TransportMachine.TestCase.settings = settings(stateful_step_count=12)
