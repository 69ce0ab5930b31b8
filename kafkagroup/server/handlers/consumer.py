"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

kio requests become :mod:`kafkagroup.messages.consumer_api` requests; the coordinator answers them (it
routes by group kind, never this layer).

With ``group.coordinator.rebalance.protocols`` lacking ``consumer`` (Kafka's broker key), both APIs stay
advertised and every request is answered UNSUPPORTED_VERSION in its body, the answer a Kafka 4.4.0 broker so
configured sends (observed). What the clients do with it: librdkafka with ``group.protocol=consumer`` raises a
fatal error to the application at its first heartbeat (``ConsumerGroupHeartbeat fatal error: Broker: API
version not supported``); Java's consumer fails with UnsupportedVersionException. Were the APIs left out of
ApiVersions instead, librdkafka would look for the coordinator again for ever and tell the application nothing
(it marks the coordinator dead when ApiVersions lacks the API and never sends the heartbeat).
"""
from __future__ import annotations

from typing import Any

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.consumer_api import (
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, TopicPartitions,
)
from kafkagroup.server.adapter import ms
from kafkagroup.server.framing import Request
from kafkagroup.server.state import NodeState

__all__ = ["HANDLERS", "heartbeat_request"]


def heartbeat_request(body: Any, version: int, client_id: str | None, client_host: str
                      ) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id, rebalance_timeout_ms=ms(body.rebalance_timeout),
        subscribed_topic_names=None if body.subscribed_topic_names is None else list(body.subscribed_topic_names),
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),                   # v1+
        server_assignor=body.server_assignor,
        topic_partitions=None if body.topic_partitions is None else [
            TopicPartitions(tp.topic_id, list(tp.partitions)) for tp in body.topic_partitions],
        client_id=client_id or "", client_host=client_host, version=version)


def _heartbeat(state: NodeState, req: Request, peer: str) -> Any:
    if not state.consumer_protocol:
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None, "member_id": None,
                "member_epoch": 0, "heartbeat_interval": 0, "assignment": None}
    response = state.coordinator.consumer_group_heartbeat(
        heartbeat_request(req.body, req.api_version, req.client_id, peer))
    assignment = None if response.assignment is None else {"topic_partitions": [
        {"topic_id": tp.topic_id, "partitions": tp.partitions} for tp in response.assignment]}
    return {"error_code": response.error_code, "error_message": response.error_message,
            "member_id": response.member_id, "member_epoch": response.member_epoch,
            "heartbeat_interval": response.heartbeat_interval_ms, "assignment": assignment}


def _describe(state: NodeState, req: Request, peer: str) -> Any:
    if not state.consumer_protocol:
        return {"groups": [{"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None, "group_id": group,
                            "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                            "members": ()} for group in req.body.group_ids]}
    response = state.coordinator.consumer_group_describe(
        ConsumerGroupDescribeRequest(list(req.body.group_ids), req.body.include_authorized_operations))
    return {"groups": [{
        "error_code": g.error_code, "error_message": g.error_message, "group_id": g.group_id,
        "group_state": g.group_state, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "assignor_name": g.assignor_name,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": m.subscribed_topic_names, "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": {"topic_partitions": m.assignment},
            "target_assignment": {"topic_partitions": m.target_assignment},
            "member_type": m.member_type,
        } for m in g.members],
    } for g in response.groups]}


HANDLERS = {68: _heartbeat, 69: _describe}
