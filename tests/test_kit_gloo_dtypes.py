"""Pins the kit's table of dtypes gloo cannot carry to a real 2-process gloo send/recv."""

from __future__ import annotations

import pytest
import torch

from ppaux.relay import gloo
from ppaux.testing.findings import GLOO_REJECTED_DTYPES

pytestmark = [pytest.mark.wire, pytest.mark.gloo, pytest.mark.subprocess]

ALL_TORCH_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)


def _carry(ctx, dtypes):
    """Rank 0 sends an 8-element tensor of each dtype, rank 1 receives it; each rank says which arrived intact."""
    carried = []
    for dtype in dtypes:
        tensor = torch.empty(8, dtype=dtype)
        try:
            if ctx.rank == 0:
                if not tensor.is_quantized:
                    tensor.view(torch.uint8).copy_(torch.arange(tensor.view(torch.uint8).numel(), dtype=torch.uint8))
                ctx.cpu.send([tensor], 1, 0).wait()
                ok = True
            else:
                ctx.cpu.recv([tensor], 0, 0).wait()
                raw = tensor.view(torch.uint8)
                ok = torch.equal(raw, torch.arange(raw.numel(), dtype=torch.uint8))
        except (RuntimeError, NotImplementedError):
            ok = False
        carried.append((str(dtype), ok))
        ctx.cpu.barrier().wait()
    return carried


def test_gloo_carries_every_dtype_but_the_ones_the_kit_rejects():
    outcomes = gloo.world(2).run({rank: (_carry, (ALL_TORCH_DTYPES,)) for rank in (0, 1)}, timeout=60)
    assert [o.status for o in outcomes.values()] == ["ok", "ok"], outcomes
    rejected = {dtype for o in outcomes.values() for dtype, ok in o.value if not ok}
    assert rejected == {str(dt) for dt in GLOO_REJECTED_DTYPES}
