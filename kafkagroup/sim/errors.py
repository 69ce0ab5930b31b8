"""The simulator's errors (one errors module for the layer).

- :class:`ScenarioError` -- a scenario that cannot be run as given; the message names the key, step or value.
- :class:`SimulationError` -- the simulation could not go on: the initial group never settled within
  ``settle_timeout_ms``, or the harness was driven wrongly (starting a member that is already running).
"""
from __future__ import annotations

from kafkagroup.errors import KafkaGroupError

__all__ = ["ScenarioError", "SimulationError"]


class ScenarioError(KafkaGroupError, ValueError):
    """A scenario with a missing, unknown-typed or out-of-range value."""


class SimulationError(KafkaGroupError, RuntimeError):
    """The simulated group could not reach the state the scenario needs (e.g. it never settled)."""
