"""Classic-protocol Kafka group coordinator (server side), pure Python; see shared/spec/coordinator.md.

Modules: ``coordinator`` (GroupCoordinator: gate, entry points, partition load/unload), ``membership``
(Join/Sync/Heartbeat/Leave), ``rebalance`` (join/sync phases and timers), ``group`` (state machine, vote),
``offsets`` (commit/fetch/delete/retention), ``offsets_txn`` (TxnOffsetCommit, transaction markers),
``request_limits`` (what Kafka's wire format can carry; INVALID_REQUEST otherwise), ``store`` (SQLite),
``partitioning`` (partition_for), ``aio`` (asyncio driver), ``messages`` (requests/responses), ``errors``
(Kafka error codes), ``clock`` (injected time), ``deferred`` (parked responses), ``config`` (broker keys),
``interface`` (the request API Protocol).
"""
from kafkagroup.coordinator.aio import AsyncGroupCoordinator
from kafkagroup.coordinator.clock import AsyncioClock, Clock, ManualClock, TimerHandle
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.coordinator.group import ClassicGroup, ClassicGroupMember, GroupState
from kafkagroup.coordinator.partitioning import partition_for
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.coordinator.deferred import Deferred, NotReadyError
from kafkagroup.coordinator.errors import ErrorCode, IllegalGroupStateError, StoreWriteError
from kafkagroup.coordinator.interface import GroupCoordinatorAPI
from kafkagroup.coordinator.messages import *  # noqa: F401,F403  (the message dataclasses, see messages.__all__)
from kafkagroup.coordinator import messages as _messages

__all__ = [
    "GroupCoordinator", "AsyncGroupCoordinator", "ClassicGroup", "ClassicGroupMember", "GroupState", "GroupStore", "partition_for",
    "AsyncioClock", "Clock", "ManualClock", "TimerHandle", "CoordinatorConfig", "Deferred", "NotReadyError",
    "ErrorCode", "IllegalGroupStateError", "StoreWriteError", "GroupCoordinatorAPI", *_messages.__all__,
]
