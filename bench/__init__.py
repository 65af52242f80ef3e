"""Benchmarks for edgeprint; run from the repository root (``python -m bench.api_bench``)."""
