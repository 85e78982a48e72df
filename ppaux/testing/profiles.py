"""The Hypothesis settings of ppaux's own tests: chosen per run, never registered as profiles.

ppaux is a guest in other people's test runs. It registers no Hypothesis profile and loads none, so a
test that is not ppaux's runs exactly as it would without ppaux, under every profile name and under
``CI=true``. The shipped suite's tests (:mod:`ppaux.conformance`) take their settings from the run:

- the **active profile** (``--hypothesis-profile``, or the ``ci`` profile Hypothesis loads on CI)
  gives where examples are kept (``database``), ``verbosity`` and ``backend``;
- ppaux's **tuning** of the same name, where ppaux has one (:data:`TUNINGS`: ``ci``, ``dev``,
  ``nightly``, ``mutation``), fixes everything that decides which examples run and what a failure
  prints: the ``ci`` run draws the same 40 examples and gives the same verdict wherever it runs;
  ``--ppaux-profile NAME`` names a tuning whatever profile is active;
- under a profile ppaux has no tuning for, the profile's own settings apply, with three that keep the
  verdict sound fixed (:data:`ALWAYS`);
- ``--ppaux-max-examples N`` changes how many examples ppaux's tests draw, and nothing else.

The suite's property tests are written with :func:`given` (Hypothesis's, remembering its strategies),
so that each run builds its own copy of each test under that run's settings (:func:`under`): a
nested session never changes the settings of the run around it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, settings

__all__ = [
    "ALWAYS",
    "TUNINGS",
    "SuiteSettings",
    "UnknownTuning",
    "check_tuning",
    "given",
    "parse_max_examples",
    "resolve",
    "suite_run_args",
    "tuned",
    "under",
]

# The explain phase traces every line under sys.settrace: with torch underneath it costs tens of
# seconds per failing test and adds little to a minimal example and its blob.
_NO_EXPLAIN = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
# A test of a transport moves tensors and may fork per call: slow examples are expected, not a smell.
_SLOW_IS_FINE = (HealthCheck.too_slow, HealthCheck.data_too_large)

# What each tuning fixes. Every tuning sets the same keys, so that none of them leaks in from the
# active profile; database (where not derandomized), verbosity and backend stay the profile's.
TUNINGS: dict[str, dict[str, Any]] = {
    # Same examples every run (derandomize: no database either) so that CI gives one verdict.
    "ci": dict(
        max_examples=40,
        derandomize=True,
        deadline=None,
        phases=_NO_EXPLAIN,
        report_multiple_bugs=False,
        print_blob=True,
        suppress_health_check=_SLOW_IS_FINE,
    ),
    "dev": dict(
        max_examples=100,
        derandomize=False,
        deadline=None,
        phases=_NO_EXPLAIN,
        report_multiple_bugs=True,
        print_blob=True,
        suppress_health_check=(),
    ),
    "nightly": dict(
        max_examples=2000,
        derandomize=False,
        deadline=None,
        phases=_NO_EXPLAIN,
        report_multiple_bugs=True,
        print_blob=True,
        suppress_health_check=_SLOW_IS_FINE,
    ),
    # Many mutants, each a full run: few examples, no shrinking, no database to carry state across mutants.
    "mutation": dict(
        max_examples=12,
        derandomize=True,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        report_multiple_bugs=True,
        print_blob=False,
        suppress_health_check=tuple(HealthCheck),
    ),
}

# Under a profile ppaux has no tuning for. deadline: ppaux's per-call limit (--ppaux-timeout) is what
# calls a slow call a hang; Hypothesis's deadline would call a fork per call flaky. print_blob: a
# failure of the shipped suite is replayed from its blob. The explain phase: see _NO_EXPLAIN.
ALWAYS: dict[str, Any] = dict(deadline=None, print_blob=True)


def tuned(name: str, parent: settings | None = None) -> settings:
    """ppaux's tuning ``name`` over ``parent`` (default: Hypothesis's ``default`` profile, whatever
    profile is loaded, so that a tuning means the same on a CI machine)."""
    return settings(parent or settings.get_profile("default"), **TUNINGS[name])


def suite_run_args(tuning: str, max_examples: int | None = None) -> list[str]:
    """The pytest options with which ppaux's own commands (``ppaux check``, ``ppaux mutate``) run the suite
    under ``tuning``: over Hypothesis's ``default`` profile rather than the ``ci`` one it loads on CI,
    so that a tuning keeps its example database on every machine."""
    args = ["--hypothesis-profile", "default", "--ppaux-profile", check_tuning(tuning) or tuning]
    return args + ([] if max_examples is None else ["--ppaux-max-examples", str(max_examples)])


@dataclass(frozen=True)
class SuiteSettings:
    """The settings of ppaux's tests in one run, and where they came from (for the run's header)."""

    settings: settings
    profile: str
    tuning: str | None
    max_examples: int | None = None

    def describe(self) -> str:
        source = (
            f"ppaux's {self.tuning!r} tuning over profile {self.profile!r}"
            if self.tuning
            else (f"profile {self.profile!r}")
        )
        asked = "" if self.max_examples is None else ", --ppaux-max-examples"
        mode = ", derandomized" if self.settings.derandomize else ""
        return f"{source} ({self.settings.max_examples} examples{mode}{asked})"


class UnknownTuning(ValueError):
    """A tuning ppaux does not have (``--ppaux-profile``, ``ppaux check --profile``)."""


def check_tuning(name: str | None) -> str | None:
    """``name`` if it names one of :data:`TUNINGS` (or is ``None``); else :class:`UnknownTuning`."""
    if name is not None and name not in TUNINGS:
        raise UnknownTuning(f"unknown profile {name!r}; choose from {', '.join(TUNINGS)}")
    return name


def whole_count(text: str | int, what: str) -> int:
    """A count of ``what`` asked for on a command line: a whole number >= 1. ``ValueError`` with the
    one-line reason otherwise."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"expected a whole number of {what} >= 1, not {text!r}")
    return count


def parse_max_examples(text: str | int | None) -> int | None:
    """A count of examples asked for (``--ppaux-max-examples``): a whole number >= 1, or ``None``."""
    return None if text is None else whole_count(text, "examples")


def resolve(
    active: settings, profile: str, tuning: str | None = None, max_examples: int | None = None
) -> SuiteSettings:
    """The settings of ppaux's tests under the active profile ``active`` (named ``profile``), with the
    tuning asked for (``--ppaux-profile``, one of :data:`TUNINGS`) or else the one named like the
    profile, if any, and ``max_examples`` if asked for."""
    name = tuning if tuning is not None else (profile if profile in TUNINGS else None)
    if name is None:
        fixed = dict(ALWAYS, phases=tuple(p for p in active.phases if p is not Phase.explain))
    else:
        fixed = dict(TUNINGS[name])
    if max_examples is not None:
        fixed["max_examples"] = max_examples
    return SuiteSettings(settings(active, **fixed), profile, name, max_examples)


@dataclass(frozen=True)
class _Strategies:
    test: Callable[..., Any]
    kwargs: Mapping[str, Any]


# The attribute under which given() keeps a test's strategies: public, so that under() needs no
# Hypothesis internals to build the test again.
_KEPT = "ppaux_given"


def given(**strategies: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """:func:`hypothesis.given` for a test of ppaux's suite: the same test, which also keeps its
    strategies so that each run can build it again under its own settings (:func:`under`)."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        wrapped = hypothesis.given(**strategies)(test)
        setattr(wrapped, _KEPT, _Strategies(test, strategies))
        return wrapped

    return decorate


def under(test: Callable[..., Any], run: settings) -> Callable[..., Any] | None:
    """A fresh copy of ``test`` (made by :func:`given`) under ``run``'s settings; ``None`` for any
    other function. The copy digests like the original: the same derandomized examples, the same
    keys in the example database."""
    kept = getattr(test, _KEPT, None)
    if not isinstance(kept, _Strategies):
        return None
    copy: Callable[..., Any] = run(hypothesis.given(**kept.kwargs)(kept.test))
    setattr(copy, _KEPT, kept)
    return copy
