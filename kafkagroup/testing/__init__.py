"""Test against a real Kafka client without a broker: a kafkagroup node you start, observe and steer.

* :func:`start_server` -> :class:`KafkaServer` (``bootstrap``, ``control``), in process or as a subprocess;
* the pytest fixture ``kafka_server`` (:mod:`kafkagroup.testing.plugin`, registered as a pytest plugin by
  installing kafkagroup[serve]) with the markers ``kafka_topics`` and ``kafka_config``;
* :class:`Control` / :class:`ControlClient`: groups and members (state, generation, assignment), ``wait``,
  ``expire``, ``inject_error``, ``delay``, ``drop`` -- in process, or over ``kafkagroup serve --control``'s
  HTTP endpoint (``kafkagroup ctl`` from a shell).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {"Control": "control", "ControlClient": "control", "GroupView": "observe", "MemberView": "observe",
            "KafkaServer": "server", "start_server": "server"}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from kafkagroup.testing.control import Control, ControlClient
    from kafkagroup.testing.observe import GroupView, MemberView
    from kafkagroup.testing.server import KafkaServer, start_server


def __getattr__(name: str) -> Any:     # imported on first use: the command line loads only testing.cli
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkagroup.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kafkagroup.testing.{module}"), name)
