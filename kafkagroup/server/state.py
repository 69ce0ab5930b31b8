"""What every handler of one ``kafkagroup serve`` node shares: its address, the coordinator, the log, its configs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.server.log import InMemoryLog

__all__ = ["NodeState", "NODE_ID", "CLUSTER_ID", "NO_RESPONSE", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
           "TRANSACTIONS_REFUSED", "DEFAULT_FETCH_MAX_BYTES"]

NODE_ID = 0
CLUSTER_ID = "kafkagroup-serve"
NO_RESPONSE: Any = object()   # a handler's answer when Kafka sends none (Produce with acks=0)
DEFAULT_FETCH_MAX_BYTES = 55 * 1024 * 1024    # Kafka's broker default for fetch.max.bytes
# serve's answer to a transactional producer (FindCoordinator for a transactional id, a transactional
# InitProducerId): transactions are not implemented; why this code, handlers/cluster.py
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TRANSACTIONS_REFUSED = "transactions are not supported by kafkagroup serve"


@dataclass(slots=True)
class NodeState:
    host: str
    port: int
    coordinator: GroupCoordinator
    log: InMemoryLog
    # broker key -> (value text, config source): what DescribeConfigs reports (server.topic_config)
    broker_config: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    next_producer_id: int = 1000        # InitProducerId hands out 1000, 1001, ...
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES   # fetch.max.bytes: caps every Fetch's max_bytes
    consumer_protocol: bool = True      # group.coordinator.rebalance.protocols lists consumer (KIP-848)
    faults: Any = None                  # a kafkagroup.server.faults.Faults: what a test injects (None: nothing)
