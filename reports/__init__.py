"""Reports: ``python -m reports build`` (the one-page index) and ``python -m reports mutation`` (the gate)."""
