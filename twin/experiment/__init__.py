"""Running replications, storing results, comparisons and sweeps."""
