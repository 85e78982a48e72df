"""ppaux.isolation.clock: the limits kept only as safety nets widen with $PPAUX_TIMEOUT_FACTOR."""

from __future__ import annotations

import pytest

from ppaux.isolation import MONOTONIC, safety_limit


@pytest.mark.parametrize(
    "factor, expected",
    [(None, 60.0), ("3", 180.0), ("0.5", 30.0), ("0", 60.0), ("-2", 60.0), ("inf", 60.0), ("nan", 60.0), ("x", 60.0)],
)
def test_a_safety_limit_scales_by_a_positive_factor_and_ignores_any_other(monkeypatch, factor, expected):
    if factor is None:
        monkeypatch.delenv("PPAUX_TIMEOUT_FACTOR", raising=False)
    else:
        monkeypatch.setenv("PPAUX_TIMEOUT_FACTOR", factor)
    assert safety_limit(60.0) == expected


def test_the_real_clock_moves_forward_across_a_sleep():
    before = MONOTONIC.monotonic()
    MONOTONIC.sleep(0.01)
    assert MONOTONIC.monotonic() >= before + 0.01
