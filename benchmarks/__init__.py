"""Benchmarks: every timing is a ratio against a reference measured in the same run."""
