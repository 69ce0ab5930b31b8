"""What every handler of one ``kafkagroup serve`` node shares: its address, the coordinator, the log."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.server.log import InMemoryLog

__all__ = ["NodeState", "NODE_ID", "CLUSTER_ID", "NO_RESPONSE"]

NODE_ID = 0
CLUSTER_ID = "kafkagroup-serve"
NO_RESPONSE: Any = object()   # a handler's answer when Kafka sends none (Produce with acks=0)


@dataclass(slots=True)
class NodeState:
    host: str
    port: int
    coordinator: GroupCoordinator
    log: InMemoryLog
    next_producer_id: int = 1000        # InitProducerId hands out 1000, 1001, ...
    faults: Any = None                  # a kafkagroup.server.faults.Faults: what a test injects (None: nothing)
