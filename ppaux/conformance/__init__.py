"""The conformance suite, shipped with the package: the contract, robustness, property and stateful
tests of the PP auxiliary transport.

Run it against any implementation from any directory::

    pytest --pyargs ppaux.conformance --ppaux-impl=MODULE_OR_FILE

or through ``ppaux check --impl MODULE_OR_FILE``, which adds the conformance report. Each test
carries its contract clause (``@pytest.mark.clause("add.6")``, see :mod:`ppaux.core.clauses`) and
``contract`` (SGLang has this behaviour) or ``robustness`` (the contract's guarantee where SGLang
differs). The implementation under test comes from the ``ppaux_impl`` fixture of ppaux's pytest
plugin, bound to each run.
"""

# The suite's marks, registered by its conftest.py when the suite is collected (and by any project
# whose tests import the suite's modules under --strict-markers).
MARKS = {
    "contract": "(ppaux) documented behaviour that SGLang has too",
    "robustness": "(ppaux) guarantees of the contract where SGLang differs",
    "clause(id)": "(ppaux) the contract clause a property checks",
}
