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
