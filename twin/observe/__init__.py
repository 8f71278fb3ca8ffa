"""Recording what happens: columnar event log, node state intervals, time-weighted levels."""
