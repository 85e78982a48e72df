"""Per-request top-k log-probabilities and their token ids, relayed over PP.

A sampling observer as an out-of-tree SGLang plugin would install it on the model
runner: ``before_grammar`` sees the raw logits, ``after_sample`` returns a device-side
auxiliary output. Under pipeline parallelism the last stage sends that output with
``to_pp_tensors()`` and the first stage rebuilds it with ``from_pp_tensors()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

# One namespace for every name this plugin puts into SGLang's PP dict.
VALUES = "topk_logprobs.values"
TOKEN_IDS = "topk_logprobs.token_ids"


@dataclass(frozen=True)
class TopKLogprobsHostOutput:
    """Scheduler side: one row of (token id, log-probability) pairs per request."""

    values: torch.Tensor
    token_ids: torch.Tensor
    per_request: list[list[tuple[int, float]]] = field(default_factory=list)

    def consume(self, batch: Any, commits: Sequence[Any]) -> None:
        for row_ids, row_values in zip(self.token_ids.tolist(), self.values.tolist()):
            self.per_request.append(list(zip(row_ids, row_values)))


@dataclass(frozen=True, eq=False)
class TopKLogprobsOutput:
    """Device side: ``values`` (float32) and ``token_ids`` (int64), both [batch, k]."""

    values: torch.Tensor
    token_ids: torch.Tensor

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> TopKLogprobsHostOutput:
        return TopKLogprobsHostOutput(copy_tensor(self.values), copy_tensor(self.token_ids))

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {VALUES: self.values, TOKEN_IDS: self.token_ids}

    def __repr__(self) -> str:
        return f"TopKLogprobsOutput(values={self.values.tolist()}, token_ids={self.token_ids.tolist()})"


class TopKLogprobsObserver:
    """A ``SamplingObserver`` that is also a ``PipelineParallelSamplingObserver``."""

    def __init__(self, k: int = 2) -> None:
        self.k = k

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        # Before the grammar mask: the model's own distribution, not the constrained one.
        return torch.log_softmax(logits.float(), dim=-1)

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> TopKLogprobsOutput | None:
        values, ids = state.topk(min(self.k, state.shape[-1]), dim=-1)
        return TopKLogprobsOutput(values, ids)

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> TopKLogprobsOutput:
        return TopKLogprobsOutput(tensors[VALUES], tensors[TOKEN_IDS])


def make_output(observer: Any, logits: torch.Tensor) -> Any:
    """What the last stage's observer returns for these logits, as in production."""
    state = observer.before_grammar(logits, None)
    return observer.after_sample(state, logits.argmax(dim=-1))


def as_dict(output: TopKLogprobsOutput) -> dict[str, list[Any]]:  # Any: torch's tolist(), nested by rank
    return {name: t.tolist() for name, t in output.to_pp_tensors().items()}
