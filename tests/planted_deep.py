"""Bugs planted in a copy of ppaux's reference transport that show only beyond the small scope CI draws
(issue 36): a loop bound, a size threshold, a dtype-only and a layout-only path, a long run of pops.
Each is one change a real transport could make; ``deep=False`` marks the control, inside the small scope,
that ``ppaux check`` must still find. The depth benchmark (``python -m reports.depth_bench``) and
tests/test_depth.py plant them."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import ppaux.core.transport as reference

_DELETE = "        for key in aux_keys:\n            del tensors[key]\n"
_RECEIVED = "        received = {key[len(self.prefix) :]: tensors[key] for key in aux_keys}\n"


class DeepBug(NamedTuple):
    what: str
    threshold: str  # what the minimal example needs, at the bug's threshold
    deep: bool
    old: str
    new: str


DEEP_BUGS: dict[str, DeepBug] = {
    "delete_stops_after_one": DeepBug(
        "pop's deletion loop stops after 1 aux name (the control: inside the small scope)",
        "2 aux keys",
        False,
        _DELETE,
        "        for key in aux_keys[:1]:\n            del tensors[key]\n",
    ),
    "delete_stops_after_four": DeepBug(
        "pop's deletion loop stops after 4 aux names (a loop bound)",
        "5 aux keys",
        True,
        _DELETE,
        "        for key in aux_keys[:4]:\n            del tensors[key]\n",
    ),
    "fast_path_over_12_keys": DeepBug(
        "pop returns early for dicts of more than 12 keys, leaving the aux keys (a size threshold)",
        "13 keys",
        True,
        "        # Delete by our own key list",
        "        if len(tensors) > 12:\n            return output\n        # Delete by our own key list",
    ),
    "bfloat16_over_64_elements": DeepBug(
        "pop hands over bfloat16 tensors of more than 64 elements as float32 copies (a dtype-only path)",
        "one bfloat16 tensor of 65+ elements",
        True,
        _RECEIVED,
        "        received = {key[len(self.prefix) :]: _narrowed(tensors[key]) for key in aux_keys}\n",
    ),
    "rank4_views_copied": DeepBug(
        "pop hands over non-contiguous tensors of rank 4 or more as contiguous copies (a layout-only path)",
        "one non-contiguous tensor of rank 4",
        True,
        _RECEIVED,
        "        received = {key[len(self.prefix) :]: _packed(tensors[key]) for key in aux_keys}\n",
    ),
    "sixteenth_pop_leaks": DeepBug(
        "from its 16th call on one dict, pop leaves the last aux key (a long run of adds and pops)",
        "16 pops on one dict, the last with an aux key",
        True,
        "        if not aux_keys:\n            return None\n",
        "        if _count_pop(tensors) >= 16:\n            aux_keys = aux_keys[:-1]\n"
        "        if not aux_keys:\n            return None\n",
    ),
}

# Helpers the planted lines call. A plain torch.Tensor only: a tensor subclass (the suite's trap for
# values read) takes the ordinary path, as a fast path keyed on the exact type would.
_HELPERS = """

def _narrowed(value):
    if type(value) is torch.Tensor and value.dtype == torch.bfloat16 and value.numel() > 64:
        return value.float()
    return value


def _packed(value):
    if type(value) is torch.Tensor and value.dim() >= 4 and not value.is_contiguous():
        return value.contiguous()
    return value


# Pops per dict; the dicts stay referenced so that an id is never reused within a run.
_POPS = {}


def _count_pop(tensors):
    entry = _POPS.setdefault(id(tensors), [tensors, 0])
    entry[1] += 1
    return entry[1]
"""


def plant_deep(name: str, folder: Path) -> Path:
    """The reference transport with deep bug ``name`` planted, as ``folder/deep_NAME.py``."""
    bug = DEEP_BUGS[name]
    source = Path(reference.__file__).read_text()
    assert source.count(bug.old) == 1, f"{name}: the reference no longer reads {bug.old!r}"
    path = folder / f"deep_{name}.py"
    path.write_text(source.replace(bug.old, bug.new) + _HELPERS)
    return path
