"""Answers for the APIs serve advertises without implementing them (:data:`kafkagroup.server.versions.
SWITCHED_OFF`): every request gets UNSUPPORTED_VERSION in its response body, the body a Kafka 4.4.0 broker
with the feature switched off sends (observed with group.coordinator.rebalance.protocols=classic).

What the clients do with it: librdkafka with ``group.protocol=consumer`` raises a fatal error to the
application (``ConsumerGroupHeartbeat fatal error: Broker: Unsupported version``) at its first heartbeat; Java's
consumer fails with UnsupportedVersionException.  A key leaves :data:`HANDLERS` by itself once it is SUPPORTED.
"""
from __future__ import annotations

from typing import Any, Callable

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.framing import Request
from kafkagroup.server.state import NodeState
from kafkagroup.server.versions import SWITCHED_OFF

__all__ = ["HANDLERS"]


def _consumer_group_heartbeat(state: NodeState, req: Request, peer: str) -> Any:
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None, "member_id": None,
            "member_epoch": 0, "heartbeat_interval": 0, "assignment": None}


def _consumer_group_describe(state: NodeState, req: Request, peer: str) -> Any:
    return {"groups": [{"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None, "group_id": group,
                        "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                        "members": ()} for group in req.body.group_ids]}


_ANSWERS: dict[int, Callable[..., Any]] = {68: _consumer_group_heartbeat, 69: _consumer_group_describe}
HANDLERS = {key: _ANSWERS[key] for key in SWITCHED_OFF}
