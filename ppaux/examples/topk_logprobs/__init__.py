"""An example SGLang sampling-observer plugin: per-request top-k log-probabilities."""

from ppaux.examples.topk_logprobs.plugin import TopKLogprobsObserver, TopKLogprobsOutput
from ppaux.examples.topk_logprobs.strategies import outputs

__all__ = ["TopKLogprobsObserver", "TopKLogprobsOutput", "outputs"]
