"""The plugin authors' page (docs/kit.md) says what the kit does."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

from ppaux.examples.topk_logprobs.plugin import VALUES
from ppaux.testing import KitFailure, check_observer
from ppaux.testing.findings import FINDINGS, markdown_table, message

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "kit.md").read_text(encoding="utf-8")


def test_findings_table_is_the_generated_one():
    table = markdown_table()
    assert table in DOC
    assert len(table.splitlines()) == 2 + len(FINDINGS)


def test_every_option_of_the_kit_is_in_the_options_table():
    options = [n for n, p in inspect.signature(check_observer).parameters.items() if p.kind is p.KEYWORD_ONLY]
    assert "timeout" in options
    assert re.findall(r"^\| `(\w+)` \|", DOC, flags=re.M) == options


def test_sample_failure_is_the_kits_message_under_the_authors_line_as_pytest_shows_it():
    failure = f"{KitFailure.__module__}.KitFailure: {message('K1', name=VALUES)}"
    shown = "\n".join(f"E       {line}" for line in failure.splitlines())
    assert f">       check_observer(SlicedObserver, outputs(SlicedObserver))\n{shown}\n" in DOC


def test_example_plugin_test_is_three_lines():
    lines = (
        (ROOT / "ppaux" / "examples" / "topk_logprobs" / "test_topk_logprobs.py")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    assert len(lines) == 3 and lines[0] == "from ppaux.testing import check_observer"


def test_messages_fill_in_name_detail_and_device():
    assert message("A4", name="kit.a") == (
        "A4 from add: auxiliary PP output 'kit.a' is not a tensor\nhow to fix:\n"
        "  - convert the value to a `torch.Tensor` in `to_pp_tensors()` (e.g. `torch.as_tensor`)"
    )
    assert message("K8", detail="KeyError: 'x'", device="cuda:1").splitlines()[0] == (
        "K8 observer_raised: from_pp_tensors() raised KeyError: 'x' on tensors received on cuda:1"
    )


def test_the_worked_example_the_docs_point_to_is_a_module_of_the_package():
    run = "`python -m pytest --pyargs ppaux.examples.topk_logprobs`"
    assert run in DOC and run in (ROOT / "README.md").read_text(encoding="utf-8")
    spec = importlib.util.find_spec("ppaux.examples.topk_logprobs")
    assert Path(spec.origin) == ROOT / "ppaux" / "examples" / "topk_logprobs" / "__init__.py"
