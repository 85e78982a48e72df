"""Two ways to get the example plugin wrong that only a PP relay shows.

``SlicedObserver`` computes one extra candidate (to break ties) and slices it off: the
slice is a view with the row stride of the wider tensor, so gloo refuses it.
``ForgetfulObserver`` reads the token ids on the first stage but its output never
sends them.
"""

from __future__ import annotations

from typing import Mapping, Optional

import torch

from examples.topk_logprobs.plugin import VALUES, TopKLogprobsObserver, TopKLogprobsOutput


class SlicedObserver(TopKLogprobsObserver):
    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Optional[TopKLogprobsOutput]:
        k = min(self.k, state.shape[-1])
        values, ids = state.topk(min(k + 1, state.shape[-1]), dim=-1)
        return TopKLogprobsOutput(values[:, :k], ids[:, :k])


class ForgetfulOutput(TopKLogprobsOutput):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {VALUES: self.values}


class ForgetfulObserver(TopKLogprobsObserver):
    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Optional[TopKLogprobsOutput]:
        values, ids = state.topk(min(self.k, state.shape[-1]), dim=-1)
        return ForgetfulOutput(values, ids)
