"""A tensor's bytes, the way the wire sees them."""

from __future__ import annotations

import torch


def tensor_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's elements in row-major order as ``uint8`` bytes on the CPU, in a fresh copy.

    A view of the tensor's own storage would not do: a tensor that is contiguous by torch's rule
    may still carry any stride in a size-1 dimension (``torch.arange(6.0)[::6]`` has stride 6),
    and such a tensor cannot be viewed as bytes. gloo sends its elements all the same.
    """
    flat = torch.empty(tensor.numel(), dtype=tensor.dtype)
    flat.copy_(tensor.detach().reshape(-1))
    return flat.view(torch.uint8)
