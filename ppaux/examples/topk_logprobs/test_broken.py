"""The kit on the broken variants: each fails with the finding that names its fix."""

import re

import pytest

from ppaux.examples.topk_logprobs import outputs
from ppaux.examples.topk_logprobs.broken import FlatteningObserver, ForgetfulObserver, SlicedObserver
from ppaux.examples.topk_logprobs.plugin import TOKEN_IDS, VALUES
from ppaux.testing import KitFailure, check_observer
from ppaux.testing.findings import message


def test_sliced_topk_is_reported_as_non_contiguous() -> None:
    with pytest.raises(KitFailure) as info:
        check_observer(SlicedObserver, outputs(SlicedObserver))
    assert str(info.value) == message("K1", name=VALUES)


def test_forgotten_tensor_is_reported_as_missing() -> None:
    with pytest.raises(KitFailure) as info:
        check_observer(ForgetfulObserver, outputs(ForgetfulObserver))
    assert str(info.value) == message("K7", name=TOKEN_IDS)


@pytest.mark.parametrize("channel", ["loopback", pytest.param("gloo", marks=pytest.mark.gloo)])
def test_flat_rows_are_reported_with_the_path_and_the_shapes(channel: str) -> None:
    """Its to_pp_tensors() survives the relay; what copy_to_host() gives the scheduler does not."""
    with pytest.raises(KitFailure) as info:
        check_observer(FlatteningObserver, outputs(FlatteningObserver), channel=channel)
    head = str(info.value).splitlines()[0]
    shapes = re.fullmatch(
        r"K9 mismatch: the rebuilt output differs from the original after the relay: "
        r"host\.values: shape \((\d+), (\d+)\) became \((\d+),\)",
        head,
    )
    assert shapes, head
    rows, k, flat = map(int, shapes.groups())
    assert rows * k == flat
