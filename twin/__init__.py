"""twin: a discrete-event digital twin of AI-training datacenters."""

__version__ = "0.1.0"
