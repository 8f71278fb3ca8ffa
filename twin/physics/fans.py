"""Server fans (issue 42): the fan laws and a node's fan curve.

Pure functions, no clock; each takes floats or numpy arrays (a float for scalar input).

* **Cube law** (fan affinity laws: flow ∝ speed, pressure ∝ speed², power ∝ speed³; "fan power ∝ RPM³",
  sources-next §1): P = P_max · (s / s_max)³ with the speed s as a fraction of the fan's maximum (s_max = 1).
* **Fan curve** of a node: the air flow the node needs is the heat it gives its air over the temperature rise
  the fan control allows, Q / (T_exhaust − T_inlet) (an energy balance, m·c_p·ΔT = Q, at a held exhaust
  temperature), relative to the flow at the design point (the node at its nameplate power with
  ``design_inlet_c`` inlet air is full speed):
  demand = max(min_speed, (Q / Q_design) · (T_exhaust − T_design) / (T_exhaust − T_inlet)).
  The flow is proportional to speed (first affinity law), so demand is the speed of a node with all its fans.
* **A failed fan**: the ``healthy`` of ``count`` fans left carry the node's flow, each at
  min(1, demand · count / healthy); the node's fan power is (healthy / count) · P_max · s³, which rises as
  (count / healthy)² while the fans keep up. When they cannot (speed 1), the node's GPUs warm: that is the
  thermal model's fan factor (``twin.physics.plant.fan_r_factor``, below ``required`` healthy fans).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from twin.physics.arrays import FloatOrArray, as_f64 as _f, float_or_array as _out

__all__ = ["fan_power_w", "fan_demand", "fan_speed", "node_fan_power_w"]

MIN_RISE_C = 1.0
"""Smallest exhaust-over-inlet rise the fan curve divides by, °C (an inlet at or above the exhaust set point
asks for full speed rather than an infinite flow)."""


def fan_power_w(speed: ArrayLike, max_w: ArrayLike) -> FloatOrArray:
    """Fan power (W) at ``speed`` (fraction of maximum speed, in [0, 1]): the cube law max_w · speed³."""
    s = _f(speed)
    return _out(_f(max_w) * s * s * s)


def fan_demand(load_share: ArrayLike, inlet_c: ArrayLike, design_inlet_c: float, exhaust_c: float,
               min_speed: float) -> FloatOrArray:
    """Speed a node's fans need all together (fraction of full speed; may exceed 1 when the design point is
    passed): max(min_speed, load_share · (exhaust_c − design_inlet_c) / max(exhaust_c − inlet_c, 1 °C)).

    ``load_share``: the heat the node gives its air over that heat at its nameplate power (0..1);
    ``inlet_c``: its inlet air, °C; ``design_inlet_c``: the inlet at which nameplate heat needs full speed;
    ``exhaust_c``: the exhaust temperature the fan control holds, °C."""
    rise = np.maximum(exhaust_c - _f(inlet_c), MIN_RISE_C)
    return _out(np.maximum(min_speed, _f(load_share) * ((exhaust_c - design_inlet_c) / rise)))


def fan_speed(demand: ArrayLike, count: int, healthy: ArrayLike) -> FloatOrArray:
    """Speed of each working fan (fraction of full, at most 1) when ``healthy`` of ``count`` carry the flow
    ``demand`` (:func:`fan_demand`): min(1, demand · count / healthy); 0 with no fan left."""
    h = _f(healthy)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(h > 0, np.minimum(1.0, _f(demand) * count / np.where(h > 0, h, 1.0)), 0.0)
    return _out(s)


def node_fan_power_w(demand: ArrayLike, count: int, healthy: ArrayLike, max_w: ArrayLike) -> FloatOrArray:
    """Power (W) of a node's fans: ``healthy`` of ``count`` fans, each at :func:`fan_speed`, each drawing
    max_w / count at full speed by the cube law."""
    s = _f(fan_speed(demand, count, healthy))
    return _out(_f(max_w) * (_f(healthy) / count) * s * s * s)
