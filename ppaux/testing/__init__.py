"""Test tooling: the observer conformance kit (:func:`check_observer`), loading an implementation
under test (:mod:`~ppaux.testing.impl`), the Hypothesis profiles (:mod:`~ppaux.testing.profiles`),
the pytest plugin (:mod:`~ppaux.testing.plugin`) and its result rows (:mod:`~ppaux.testing.results`).

A plugin's test is three lines::

    from ppaux.testing import check_observer
    from my_plugin import MyObserver, outputs
    def test_pp_relay(): check_observer(MyObserver, outputs())
"""

from ppaux.testing.impl import Implementation, ImplementationError, load
from ppaux.testing.kit import KitFailure, KitResult, check_observer

__all__ = ["Implementation", "ImplementationError", "KitFailure", "KitResult", "check_observer", "load"]
