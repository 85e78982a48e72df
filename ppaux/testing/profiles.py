"""Hypothesis profiles shipped with ppaux; registered when the pytest plugin loads."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

# The explain phase traces every line under sys.settrace: with torch underneath it costs
# tens of seconds per failing test and adds little to a minimal example and its blob.
_NO_EXPLAIN = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]

# Hypothesis loads its own "ci" profile (no database) when it sees a CI variable, and a bare
# settings() inherits whatever is loaded: build on "default" so a profile means the same everywhere.
_BASE = settings.get_profile("default")

PROFILES = {
    # Same examples every run (derandomize) so that CI gives one verdict; blob printed to replay.
    "ci": settings(
        _BASE,
        derandomize=True,
        deadline=None,
        print_blob=True,
        max_examples=40,
        report_multiple_bugs=False,
        phases=_NO_EXPLAIN,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    ),
    "dev": settings(_BASE, deadline=None, print_blob=True, max_examples=100, phases=_NO_EXPLAIN),
    "nightly": settings(
        _BASE,
        deadline=None,
        print_blob=True,
        max_examples=2000,
        phases=_NO_EXPLAIN,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    ),
    # Many mutants, each a full run: few examples, no shrinking, no database to carry state across mutants.
    "mutation": settings(
        _BASE,
        derandomize=True,
        print_blob=False,
        deadline=None,
        database=None,
        max_examples=12,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    ),
}


def register() -> None:
    for name, profile in PROFILES.items():
        settings.register_profile(name, profile)
