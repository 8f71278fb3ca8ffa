"""Failure-rate acceleration by temperature (model.md §2; sources-realism §3): the ASHRAE TC9.9
X-factor on a server's inlet air and Arrhenius on a component's junction temperature.

Both give an acceleration factor AF, the ageing rate relative to the reference temperature at which
a part's configured failure distribution holds; the model carries each part's effective age at that
rate (``twin.physics.thermal.accelerated_failure_time_h``), so at a constant temperature the observed
MTBF is MTBF_ref / AF.

Pure functions of floats or numpy arrays, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from twin.physics.arrays import FloatOrArray, as_f64 as _f, float_or_array as _out

__all__ = ["ASHRAE_XFACTOR", "BOLTZMANN_EV_PER_K", "xfactor", "xfactor_af", "xfactor_af_of", "arrhenius_af"]

ASHRAE_XFACTOR: tuple[tuple[float, float], ...] = ((15.0, 0.72), (20.0, 1.00), (45.0, 1.76))
"""ASHRAE TC9.9 (2011) relative server failure rate at an inlet temperature (°C): 0.72 at 15 °C, 1.00 at
20 °C, 1.76 at 45 °C (via The Green Grid, 2017; sources-realism §3)."""

BOLTZMANN_EV_PER_K = 8.617e-5
"""Boltzmann's constant in eV/K as the NIST/SEMATECH e-Handbook §8.1.5.1 gives it."""

_KELVIN = 273.15


def xfactor(inlet_c: ArrayLike, table: Sequence[tuple[float, float]] = ASHRAE_XFACTOR) -> FloatOrArray:
    """Relative failure rate at inlet ``inlet_c`` (°C) from a table of (°C, factor) points: piecewise
    linear between the points, held at the end values outside them (no extrapolation: below 15 °C the
    line through the ASHRAE points would reach 0 at about 2 °C)."""
    t = np.asarray([p[0] for p in table], dtype=np.float64)
    x = np.asarray([p[1] for p in table], dtype=np.float64)
    return _out(np.interp(_f(inlet_c), t, x))


def xfactor_af(inlet_c: ArrayLike, reference_c: float,
               table: Sequence[tuple[float, float]] = ASHRAE_XFACTOR) -> FloatOrArray:
    """Acceleration factor X(T)/X(T_ref) of a part whose configured failure distribution holds at the
    reference inlet ``reference_c`` (°C)."""
    return _out(_f(xfactor(inlet_c, table)) / float(xfactor(reference_c, table)))


def xfactor_af_of(reference_c: float, table: Sequence[tuple[float, float]] = ASHRAE_XFACTOR
                  ) -> Callable[[ArrayLike], FloatOrArray]:
    """:func:`xfactor_af` for one reference inlet ``reference_c`` (°C) and table, with the table's points and
    the reference's factor taken once: the same values, for a model that evaluates it at every part's event."""
    t = np.asarray([p[0] for p in table], dtype=np.float64)
    x = np.asarray([p[1] for p in table], dtype=np.float64)
    ref = float(xfactor(reference_c, table))

    def af(inlet_c: ArrayLike) -> FloatOrArray:
        return _out(_f(np.interp(_f(inlet_c), t, x)) / ref)

    return af


def arrhenius_af(temp_c: ArrayLike, t_ref_c: ArrayLike, activation_ev: ArrayLike) -> FloatOrArray:
    """Arrhenius acceleration factor exp[(Ea/k)(1/T_ref − 1/T)] (temperatures in °C, converted to
    kelvin; ``activation_ev`` in eV; NIST/SEMATECH §8.1.5.1). 1 at T_ref and for Ea = 0."""
    tk = _f(temp_c) + _KELVIN
    rk = _f(t_ref_c) + _KELVIN
    return _out(np.exp(_f(activation_ev) / BOLTZMANN_EV_PER_K * (1.0 / rk - 1.0 / tk)))
