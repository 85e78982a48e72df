"""An implementation module missing a required name."""

_OUTPUT_PREFIX = "__sampling_observer_output__."
