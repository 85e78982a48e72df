"""ppaux.transport's SGLang-named module functions and PPAuxTransport's prefix check.

The property tests reach add/pop through a PPAuxTransport bound to a drawn prefix; these pin
the two module-level names SGLang code calls, and the constructor's documented refusal.
"""

from __future__ import annotations

import pytest
import torch
from ppaux_strategies import PPOutput, RecordingObserver

from ppaux import transport
from ppaux.conformance.support import assert_same_objects


def test_module_functions_use_sglang_prefix_and_round_trip():
    t = torch.zeros(2)
    d = {"next_token_ids": t}
    transport.add_auxiliary_output_to_pp_tensors(d, PPOutput({"scores": t}))
    assert list(d) == ["next_token_ids", "__sampling_observer_output__.scores"]
    obs = RecordingObserver()
    out = transport.pop_auxiliary_output_from_pp_tensors(d, obs)
    assert out is obs.returned[0]
    assert len(obs.snapshots) == 1 and list(d) == ["next_token_ids"]
    assert_same_objects(obs.snapshots[0], {"scores": t})


@pytest.mark.parametrize("prefix", ["", b"x.", 5, None])
def test_prefix_must_be_a_non_empty_str(prefix):
    with pytest.raises(ValueError) as info:
        transport.PPAuxTransport(prefix)
    assert str(info.value) == f"the reserved prefix must be a non-empty str, not {prefix!r}"
