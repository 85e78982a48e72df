"""SGLang's own wire code against ppaux's model, over real gloo ranks (opt-in: -m sglang; it
downloads the release). The model must deliver what SGLang's code delivers, message for message."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import settings

import ppaux.relay.sglang as sglang
from ppaux.examples.topk_logprobs import TopKLogprobsObserver, outputs
from ppaux.examples.topk_logprobs.broken import FlatteningObserver
from ppaux.testing import KitFailure, check_observer

pytestmark = [pytest.mark.sglang, pytest.mark.gloo]


def _wire_diff(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ppaux", "wire-diff", *argv], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def release():
    try:
        return sglang.wire_source(sglang.DEFAULT_VERSION)
    except sglang.ReleaseUnavailable as exc:
        pytest.skip(str(exc))


def test_the_model_matches_sglang_0_5_23_on_every_drawn_dict_and_configuration(release):
    proc = _wire_diff("--profile", "ci")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == (
        "ppaux wire-diff: sglang==0.5.23 and ppaux's model agree on every drawn PP dict "
        "(pp x attention-TP: 2x1, 3x1, 2x2, 3x2; profile ci)\n"
    )


def test_the_release_matrix_names_each_release(release):
    proc = _wire_diff("--sglang-version", "all", "--profile", "mutation", timeout=1800)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 0.5.")]
    assert [row.split(" | ")[0].strip("| ") for row in rows] == list(sglang.RELEASES), proc.stdout + proc.stderr[-2000:]
    assert proc.returncode == (0 if all("| matches |" in row for row in rows) else 1)


def test_the_fault_matrix_over_sglangs_code_is_the_models(release, tmp_path):
    for extra in ([], ["--integrity"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ppaux", "faults", "--channel", "sglang", "--report", str(tmp_path), *extra],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_the_kit_relays_over_sglangs_code(release):
    """The example plugin survives one hop of SGLang's own code, and the flattening one still fails."""
    check_observer(TopKLogprobsObserver, outputs(), channel="sglang", settings=settings(max_examples=5, database=None))
    with pytest.raises(KitFailure) as info:
        check_observer(
            FlatteningObserver,
            outputs(FlatteningObserver),
            channel="sglang",
            settings=settings(max_examples=5, database=None),
        )
    assert "host.values: shape (" in str(info.value)
