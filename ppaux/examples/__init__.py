"""Worked examples, shipped with the package so that the docs' pointers work from an install:
``ppaux.examples.topk_logprobs`` is an observer plugin with its kit test and broken variants
(``python -m pytest --pyargs ppaux.examples.topk_logprobs`` runs their tests)."""
