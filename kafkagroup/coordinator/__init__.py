"""Kafka's group coordinator (server side), pure Python: classic groups (shared/spec/coordinator.md) and
consumer groups (KIP-848, ``consumer/``) under one group-id namespace (``groups``), with offsets kept per group
id (``offset_state``).

Modules: ``coordinator`` (GroupCoordinator: gate, entry points, routing by group kind, partition load/unload),
``groups`` (the registry), ``consumer/`` (reconcile, group, target, regex, heartbeat, offsets), ``membership``
(Join/Sync/Heartbeat/Leave), ``rebalance`` (join/sync phases and timers), ``group`` (state machine, vote),
``offsets`` (commit/fetch/delete/retention), ``offsets_txn`` (TxnOffsetCommit, transaction markers),
``request_limits`` (what Kafka's wire format can carry; INVALID_REQUEST otherwise), ``store`` (SQLite),
``partitioning`` (partition_for), ``aio`` (asyncio driver), ``errors`` (the coordinator's exceptions and
store-write error maps), ``config`` (broker keys).

The requests, responses, ``ErrorCode``, clocks and ``Deferred`` come from the shared message layer
(:mod:`kafkagroup.messages`); they are re-exported here so that ``from kafkagroup.coordinator import
GroupCoordinator, ManualClock, JoinGroupRequest`` keeps working.
"""
from kafkagroup.coordinator.aio import AsyncGroupCoordinator
from kafkagroup.messages.clock import AsyncioClock, Clock, ManualClock, TimerHandle
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.coordinator.group import ClassicGroup, ClassicGroupMember, GroupState
from kafkagroup.coordinator.partitioning import partition_for
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.messages.deferred import Deferred, NotReadyError
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import IllegalGroupStateError, StoreError, StoreWriteError
from kafkagroup.messages.interface import GroupCoordinatorAPI
from kafkagroup.messages.api import *  # noqa: F401,F403  (the message dataclasses, see messages.__all__)
from kafkagroup.messages import api as _messages

__all__ = [
    "GroupCoordinator", "AsyncGroupCoordinator", "ClassicGroup", "ClassicGroupMember", "GroupState", "GroupStore", "partition_for",
    "AsyncioClock", "Clock", "ManualClock", "TimerHandle", "CoordinatorConfig", "Deferred", "NotReadyError",
    "ErrorCode", "IllegalGroupStateError", "StoreError", "StoreWriteError", "GroupCoordinatorAPI", *_messages.__all__,
]
