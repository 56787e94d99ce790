"""Benchmarks that print numbers: `python -m benchmarks.run` (throughput and oracle power, one run)."""
