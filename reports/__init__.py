"""Reports (outputs under reports/out/): ``python -m reports build`` (the one-page index),
``python -m reports mutation`` (the gate) and ``python -m reports.bench`` (benchmarks)."""
