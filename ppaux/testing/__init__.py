"""Test tooling: the observer conformance kit (:func:`check_observer`), loading an implementation
under test (:mod:`~ppaux.testing.impl`), the Hypothesis profiles (:mod:`~ppaux.testing.profiles`),
the pytest plugin (:mod:`~ppaux.testing.plugin`) and its result rows (:mod:`~ppaux.testing.results`).

A plugin's test is three lines::

    from ppaux.testing import check_observer
    from my_plugin import MyObserver, outputs
    def test_pp_relay(): check_observer(MyObserver, outputs())
"""

from typing import TYPE_CHECKING

from ppaux._lazy import exports

if TYPE_CHECKING:
    from ppaux.testing.impl import Implementation, ImplementationError, load
    from ppaux.testing.kit import KitFailure, KitResult, check_observer

__all__ = ["Implementation", "ImplementationError", "KitFailure", "KitResult", "check_observer", "load"]

# The kit and the loader (torch with them) are imported on the first use of one of their names: the
# plugin and the profiles, imported by every pytest run ppaux is installed in, need neither.
__getattr__, __dir__ = exports(
    __name__,
    {
        **dict.fromkeys(["Implementation", "ImplementationError", "load"], "ppaux.testing.impl"),
        **dict.fromkeys(["KitFailure", "KitResult", "check_observer"], "ppaux.testing.kit"),
    },
)
