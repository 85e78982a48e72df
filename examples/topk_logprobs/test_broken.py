"""The kit on the broken variants: each fails with the finding that names its fix."""

import pytest

from examples.topk_logprobs import outputs
from examples.topk_logprobs.broken import ForgetfulObserver, SlicedObserver
from examples.topk_logprobs.plugin import TOKEN_IDS, VALUES
from ppaux.testing import KitFailure, check_observer
from ppaux.testing.findings import message


def test_sliced_topk_is_reported_as_non_contiguous():
    with pytest.raises(KitFailure) as info:
        check_observer(SlicedObserver, outputs(SlicedObserver))
    assert str(info.value) == message("K1", name=VALUES)


def test_forgotten_tensor_is_reported_as_missing():
    with pytest.raises(KitFailure) as info:
        check_observer(ForgetfulObserver, outputs(ForgetfulObserver))
    assert str(info.value) == message("K7", name=TOKEN_IDS)
