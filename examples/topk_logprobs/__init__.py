"""An example SGLang sampling-observer plugin: per-request top-k log-probabilities."""

from examples.topk_logprobs.plugin import TopKLogprobsObserver, TopKLogprobsOutput
from examples.topk_logprobs.strategies import outputs

__all__ = ["TopKLogprobsObserver", "TopKLogprobsOutput", "outputs"]
