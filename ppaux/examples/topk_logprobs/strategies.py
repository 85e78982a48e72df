"""Hypothesis strategies for the example plugin: outputs built from drawn logits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from hypothesis import strategies as st

from ppaux.examples.topk_logprobs.plugin import TopKLogprobsObserver, make_output


def logits(*, max_batch: int = 4, max_vocab: int = 8) -> st.SearchStrategy[torch.Tensor]:
    """Draw a [batch, vocab] float32 logits tensor; shrinks towards one request, one token, zeros."""

    @st.composite
    def build(draw: st.DrawFn) -> torch.Tensor:
        batch = draw(st.integers(1, max_batch))
        vocab = draw(st.integers(1, max_vocab))
        flat = draw(st.lists(st.floats(-20, 20, width=32), min_size=batch * vocab, max_size=batch * vocab))
        return torch.tensor(flat, dtype=torch.float32).reshape(batch, vocab)

    return build()


def outputs(observer_class: Callable[..., Any] = TopKLogprobsObserver) -> st.SearchStrategy[Any]:
    """Draw what ``observer_class(k).after_sample`` returns for drawn logits."""
    return st.builds(make_output, st.builds(observer_class, st.integers(1, 3)), logits())
