"""Three ways to get the example plugin wrong that only a PP relay shows.

``SlicedObserver`` computes one extra candidate (to break ties) and slices it off: the
slice is a view with the row stride of the wider tensor, so gloo refuses it.
``ForgetfulObserver`` reads the token ids on the first stage but its output never
sends them.
``FlatteningObserver`` flattens the ``[batch, k]`` tensors for the wire and never reshapes
them back: the rebuilt output's ``to_pp_tensors()`` looks like the original's, but what
SGLang's scheduler gets from ``copy_to_host()`` holds flat rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ppaux.examples.topk_logprobs.plugin import TOKEN_IDS, VALUES, TopKLogprobsObserver, TopKLogprobsOutput


class SlicedObserver(TopKLogprobsObserver):
    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> TopKLogprobsOutput | None:
        k = min(self.k, state.shape[-1])
        values, ids = state.topk(min(k + 1, state.shape[-1]), dim=-1)
        return TopKLogprobsOutput(values[:, :k], ids[:, :k])


class ForgetfulOutput(TopKLogprobsOutput):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {VALUES: self.values}


class ForgetfulObserver(TopKLogprobsObserver):
    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> TopKLogprobsOutput | None:
        values, ids = state.topk(min(self.k, state.shape[-1]), dim=-1)
        return ForgetfulOutput(values, ids)


class FlatOutput(TopKLogprobsOutput):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {VALUES: self.values.reshape(-1), TOKEN_IDS: self.token_ids.reshape(-1)}


class FlatteningObserver(TopKLogprobsObserver):
    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> TopKLogprobsOutput | None:
        values, ids = state.topk(min(self.k, state.shape[-1]), dim=-1)
        return FlatOutput(values, ids)

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> TopKLogprobsOutput:
        return FlatOutput(tensors[VALUES], tensors[TOKEN_IDS])
