"""One-change bugs planted in a copy of ppaux's reference transport, each with the clauses it
breaks and the suite's tests that show it: every broken clause must become a regression test
that fails on the bug and passes on the reference."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import ppaux.core.transport as reference


class Bug(NamedTuple):
    breaks: tuple[str, ...]
    tests: str  # a pytest -k expression
    old: str
    new: str


BUGS: dict[str, Bug] = {
    "none_output_is_a1": Bug(
        ("add.1",), "test_none_output_leaves_dict_untouched", "        if output is None:\n            return\n", ""
    ),
    "add_writes_before_checking_every_item": Bug(
        ("add.6",),
        "test_a_bad_item_after_a_good_one_writes_nothing",
        "            staged[key] = tensor",
        "            tensors[key] = staged[key] = tensor",
    ),
    "a4_names_without_repr": Bug(
        ("add.5",),
        "test_first_failing_item_decides_the_error_in_known_cases",
        'raise AuxiliaryPPError("A4", name)',
        'raise RuntimeError(f"auxiliary PP output {name} is not a tensor")',
    ),
    "value_checked_before_name": Bug(
        ("add.5",),
        "test_first_failing_item_decides_the_error_in_known_cases",
        'if not isinstance(name, str) or not name:\n                raise AuxiliaryPPError("A3")',
        'if not isinstance(name, str) or not name:\n                raise AuxiliaryPPError("A4", name)',
    ),
    "collision_overwrites": Bug(
        ("add.5",),
        "test_add_rejects_reserved_key_collision_without_overwriting",
        "if key in tensors or key in staged:",
        "if key in staged:",
    ),
    "to_pp_tensors_called_twice": Bug(
        ("add.3",),
        "test_to_pp_tensors_called_once_and_its_error_propagates",
        "payload = output.to_pp_tensors()",
        "payload = output.to_pp_tensors() and output.to_pp_tensors()",
    ),
    "no_observer_is_p2": Bug(
        ("pop.3",),
        "test_pop_without_an_observer_is_p1",
        '        if observer is None:\n            raise AuxiliaryPPError("P1")\n',
        "",
    ),
    "pop_returns_the_received_dict": Bug(
        ("pop.7",),
        "test_success_returns_observer_object_and_removes_exactly_aux_keys",
        "        return output\n",
        "        return received\n",
    ),
    "pop_takes_keys_before_the_observer_answers": Bug(
        ("pop.6",),
        "test_failed_pop_leaves_dict_exactly_as_before",
        "tensors[key] for key in aux_keys}",
        "tensors.pop(key) for key in aux_keys}",
    ),
    "every_prefix_stripped": Bug(
        ("pop.1",),
        "test_name_is_key_with_prefix_removed_once",
        "key[len(self.prefix):]: tensors[key]",
        'key.replace(self.prefix, ""): tensors[key]',
    ),
    "pop_leaves_the_last_aux_key": Bug(
        ("no-leaked-keys",),
        "test_interleaved_adds_and_pops_leak_no_key",
        "        for key in aux_keys:\n",
        "        for key in aux_keys[:-1]:\n",
    ),
    "non_str_keys_read_as_str": Bug(
        ("pop.1",),
        "test_non_str_keys_are_ordinary_keys",
        "key for key in tensors if isinstance(key, str) and key.startswith(self.prefix)",
        "key for key in tensors if key.startswith(self.prefix)",
    ),
}


def plant(name: str, folder: Path) -> Path:
    """The reference transport with bug ``name`` planted, as ``folder/planted_NAME.py``."""
    bug = BUGS[name]
    source = Path(reference.__file__).read_text()
    assert source.count(bug.old) == 1, f"{name}: the reference no longer reads {bug.old!r}"
    path = folder / f"planted_{name}.py"
    path.write_text(source.replace(bug.old, bug.new))
    return path
