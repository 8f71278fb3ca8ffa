"""SimPy components of the twin. Physics lives in :mod:`twin.physics` (no SimPy there)."""
