"""twin: a discrete-event digital twin of AI-training datacenters."""

__version__ = "0.16.0"
"""Bumped whenever a change moves the results of some scenario and seed (``python
tests/golden_tables.py --record`` refuses to record changed fingerprints under the same version):
stored results and replications made by another version are never reused."""
