"""Pins the kit's table of dtypes gloo cannot carry to a real 2-process gloo send/recv."""

from __future__ import annotations

import datetime
import multiprocessing
import os
import warnings

import pytest
import torch

from ppaux.testing.findings import GLOO_REJECTED_DTYPES

pytestmark = [pytest.mark.wire, pytest.mark.gloo]

ALL_TORCH_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)


def _rank(rank: int, store_path: str, results) -> None:
    import torch.distributed as dist

    warnings.simplefilter("ignore")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    store = dist.FileStore(store_path, 2)
    # A peer that fails must not leave the other blocked for gloo's default 30 minutes.
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2, timeout=datetime.timedelta(seconds=30))
    try:
        for dtype in ALL_TORCH_DTYPES:
            tensor = torch.empty(8, dtype=dtype)
            try:
                if rank == 0:
                    if not tensor.is_quantized:
                        tensor.view(torch.uint8).copy_(torch.arange(tensor.view(torch.uint8).numel(), dtype=torch.uint8))
                    dist.send(tensor, 1)
                    carried = True
                else:
                    dist.recv(tensor, 0)
                    raw = tensor.view(torch.uint8)
                    carried = torch.equal(raw, torch.arange(raw.numel(), dtype=torch.uint8))
            except (RuntimeError, NotImplementedError):
                carried = False
            results.put((rank, str(dtype), carried))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def test_gloo_carries_every_dtype_but_the_ones_the_kit_rejects(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    ranks = [ctx.Process(target=_rank, args=(r, str(tmp_path / "store"), results)) for r in range(2)]
    for p in ranks:
        p.start()
    try:
        rows = [results.get(timeout=120) for _ in range(2 * len(ALL_TORCH_DTYPES))]
        for p in ranks:
            p.join(60)
    finally:
        for p in ranks:
            if p.is_alive():  # pragma: no cover - only when a rank hangs
                p.kill()
                p.join()
    assert [p.exitcode for p in ranks] == [0, 0]
    carried = {}
    for _rank_id, dtype, ok in rows:
        carried[dtype] = carried.get(dtype, True) and ok
    rejected = {dtype for dtype, ok in carried.items() if not ok}
    assert rejected == {str(dt) for dt in GLOO_REJECTED_DTYPES}
