"""The fault matrix over SGLang's own code, as ``ppaux faults --channel sglang`` prints it: the
model's column beside SGLang's, a cell where they part marked."""

from __future__ import annotations

import pytest

from ppaux.cli.faults import build_report
from ppaux.relay.faults import OUTCOMES, Verdict
from ppaux.report.render import faults_markdown

D, X, H, S, OK = OUTCOMES

pytestmark = pytest.mark.wire


def test_the_sglang_matrix_sets_the_models_column_beside_sglangs_and_marks_where_they_part():
    cells = {"none": Verdict(OK, "fine"), "bit_flip": Verdict(S, "x")}
    model = {"none": Verdict(OK, "also fine"), "bit_flip": Verdict(H, "y")}
    expected = {"none": OK, "bit_flip": S}
    got = faults_markdown(build_report(cells, channel="sglang", integrity=False, expected=expected, model=model))
    assert got == (
        "### Fault matrix: sglang channel, SGLang's wire (integrity off)\n"
        "\n"
        "| fault | what it does | SGLang's own code | ppaux's model (gloo) | expected | detail |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| none | no fault | harmless | harmless | harmless | fine |\n"
        "| bit_flip | one bit of the tensor's bytes flips on the wire | silent corruption "
        "| hang stopped by the watchdog **(differs)** | silent corruption | x |\n"
        "\n"
        "Silent corruptions: 1 (bit_flip)\n"
    )
