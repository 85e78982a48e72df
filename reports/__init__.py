"""Report builders and benchmarks (outputs under reports/out/)."""
