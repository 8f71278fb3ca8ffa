"""The cooling plant's equations (twin/physics/plant.py; model.md §4), each checked against values
worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import plant


def test_crah_capacity_derates_above_the_design_ambient_only() -> None:
    f = plant.crah_capacity_factor(np.array([20.0, 35.0, 40.0, 90.0]), 35.0, 0.02)
    assert f.tolist() == pytest.approx([1.0, 1.0, 0.9, 0.0])  # 5 °C over: 10 % less; never below 0


def test_room_target_rises_with_the_excess_heat() -> None:
    assert plant.room_target_c(20.0, 700e3, 800e3, 0.05) == 20.0  # capacity covers the heat
    assert plant.room_target_c(20.0, 800e3, 800e3, 0.05) == 20.0
    assert plant.room_target_c(20.0, 900e3, 800e3, 0.05) == pytest.approx(25.0)  # 100 kW × 0.05 °C/kW


def test_fan_factor() -> None:
    assert plant.fan_r_factor(6, 6) == 1.0
    assert plant.fan_r_factor(8, 6) == 1.0
    assert plant.fan_r_factor(4, 6) == pytest.approx(1.5)
    assert plant.fan_r_factor(0, 6) == 1.0  # no fan: the node trips, R is not used


def test_cop_free_cooling_and_facility_power() -> None:
    cop = plant.chiller_cop(np.array([25.0, 35.0, 100.0]), 5.0, 25.0, 0.1, 2.0)
    assert cop.tolist() == pytest.approx([5.0, 4.0, 2.0])
    free = plant.free_cooling(np.array([10.0, 14.0, 20.0]), 20.0, 6.0)
    assert free.tolist() == [True, True, False]
    cool = plant.cooling_power_w(np.array([1000.0, 1000.0]), 0.05, np.array([4.0, 4.0]), np.array([True, False]))
    assert cool.tolist() == pytest.approx([50.0, 300.0])
    assert plant.facility_power_w(950.0, 100.0, 0.95, 0.985) == pytest.approx(1100.0 / 0.985)
