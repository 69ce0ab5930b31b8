"""The rebalance simulator: a real coordinator and real members on a test clock, each member inside a
modelled application poll loop, driven through a scripted scenario.

- :mod:`.scenario` -- the scenario format, defaults and validation (:func:`parse_scenario`);
- :mod:`.app` -- the application's poll loop (records per poll, processing times, max.poll.interval.ms);
- :mod:`.harness` -- :class:`GroupHarness`: coordinator + cluster + named members + ownership ledger;
- :mod:`.consumer_member` -- a consumer-protocol (KIP-848) member: heartbeats, reconciles at its polls;
- :mod:`.runner` -- :func:`simulate`: run a scenario;
- :mod:`.report` -- :class:`SimulationReport` and what it measures; :mod:`.timeline` -- ownership over time;
- :mod:`.plot` -- the pictures (matplotlib); :mod:`.cli` -- ``kafkagroup simulate``;
- :mod:`.errors` -- :class:`ScenarioError`, :class:`SimulationError`.

This layer sits above :mod:`kafkagroup.client` and :mod:`kafkagroup.coordinator`; neither imports it.
"""
from __future__ import annotations

import importlib
from typing import Any

# Lazy: ``kafkagroup.cli`` imports kafkagroup.sim.cli to register the subcommand, and the coordinator stack
# should load only when a simulation runs.
_HOME = {
    "ScenarioError": "errors", "SimulationError": "errors", "GroupHarness": "harness",
    "MemberReport": "report", "SimulationReport": "report", "StepReport": "report",
    "ScenarioWarning": "runner", "simulate": "runner", "Scenario": "scenario", "parse_scenario": "scenario",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'kafkagroup.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kafkagroup.sim.{_HOME[name]}"), name)
