"""The nightly fuzz job: ppaux's Hypothesis tests under the ``nightly`` profile until a time budget is spent.

``python -m fuzz run`` drives pytest in rounds (one subprocess per round, one device
placement per round) and keeps every failure in a Hypothesis example database;
``python -m fuzz replay`` re-runs the saved failures. See ``docs/README-fuzz.md``.
"""
