"""kafkagroup: Kafka consumer-group rebalancing with a native engine.

>>> import kafkagroup
>>> kafkagroup.assign("roundrobin", {"t0": 3}, {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0"]}}).assignment
{'C0': [t0-0, t0-2], 'C1': [t0-1]}

The Spark layer (``kafkagroup.spark``) is optional and never imported from here.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Names are imported on first use (PEP 562), so that ``import kafkagroup.server`` or ``kafkagroup serve``
# does not load numpy and the native engine, which serving groups never calls.
_EXPORTS = {
    "AssignmentResult": "kafkagroup.api", "assign": "kafkagroup.api",
    "BatchResult": "kafkagroup.batch", "GroupBatch": "kafkagroup.batch", "assign_many": "kafkagroup.batch",
    "ArrayResult": "kafkagroup.engine", "Metrics": "kafkagroup.engine", "assign_arrays": "kafkagroup.engine",
    "strategies": "kafkagroup.engine",
    "InvalidGroupError": "kafkagroup.errors", "InvariantError": "kafkagroup.errors",
    "KafkaGroupError": "kafkagroup.errors", "ProtocolError": "kafkagroup.errors",
    "CompactGroup": "kafkagroup.model", "Member": "kafkagroup.model", "build_group": "kafkagroup.model",
    "TopicPartition": "kafkagroup.structs",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from kafkagroup.api import AssignmentResult, assign
    from kafkagroup.batch import BatchResult, GroupBatch, assign_many
    from kafkagroup.engine import ArrayResult, Metrics, assign_arrays, strategies
    from kafkagroup.errors import InvalidGroupError, InvariantError, KafkaGroupError, ProtocolError
    from kafkagroup.model import CompactGroup, Member, build_group
    from kafkagroup.structs import TopicPartition


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if not name.startswith("_") and importlib.util.find_spec(f"kafkagroup.{name}") is not None:
            return importlib.import_module(f"kafkagroup.{name}")    # kafkagroup.engine etc., as before
        raise AttributeError(f"module 'kafkagroup' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
