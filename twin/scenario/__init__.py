"""Scenario schema and loading."""

from twin.scenario.loader import Loaded, load_dict, load_scenario
from twin.scenario.schema import Scenario

__all__ = ["Loaded", "Scenario", "load_dict", "load_scenario"]
