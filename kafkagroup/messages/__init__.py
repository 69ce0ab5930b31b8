"""The shared message layer: what both sides of Kafka's classic group protocol speak, below both of them.

``api`` (the request and response values of JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the offset and
group-admin APIs, with Kafka's field names), ``error_codes`` (Kafka's numeric ``ErrorCode``), ``clock``
(injected time: ``ManualClock`` for tests and simulations, ``AsyncioClock`` live), ``deferred`` (a response
that arrives later: a parked JoinGroup or SyncGroup) and ``interface`` (``GroupCoordinatorAPI``, the request
API a member calls).  The coordinator, the member client, the wire server and the simulator all import this
package; it imports none of them.
"""
from kafkagroup.messages.api import *  # noqa: F401,F403  (the message dataclasses, see api.__all__)
from kafkagroup.messages import api as _api
from kafkagroup.messages.clock import AsyncioClock, Clock, ManualClock, TimerHandle
from kafkagroup.messages.deferred import Deferred, NotReadyError
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.interface import GroupCoordinatorAPI

__all__ = [
    "AsyncioClock", "Clock", "ManualClock", "TimerHandle", "Deferred", "NotReadyError", "ErrorCode",
    "GroupCoordinatorAPI", *_api.__all__,
]
