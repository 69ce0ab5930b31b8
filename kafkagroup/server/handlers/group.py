"""The classic group and offset APIs: kio requests in, the coordinator's answers out.

JoinGroup and SyncGroup may be parked by the coordinator (a :class:`~kafkagroup.messages.Deferred`); their
handlers return a coroutine that awaits it, so the connection waits while the loop serves everyone else.
"""
from __future__ import annotations

from typing import Any

from kafkagroup.messages.api import (ListGroupsResponse, OffsetCommitRequestTopic, OffsetCommitResponse,
                                     OffsetCommitResponsePartition, OffsetCommitResponseTopic,
                                     OffsetDeleteRequestTopic, OffsetDeleteResponsePartition,
                                     OffsetDeleteResponseTopic)
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server import adapter
from kafkagroup.server.framing import Request
from kafkagroup.server.state import NodeState

__all__ = ["HANDLERS"]


def _join_group(state: NodeState, req: Request, peer: str) -> Any:
    return state.coordinator.join_group(adapter.join_group(req.body, req.api_version, req.client_id, peer)).wait()


def _sync_group(state: NodeState, req: Request, peer: str) -> Any:
    return state.coordinator.sync_group(adapter.sync_group(req.body)).wait()


def _heartbeat(state: NodeState, req: Request, peer: str) -> Any:
    return state.coordinator.heartbeat(adapter.heartbeat(req.body))


def _leave_group(state: NodeState, req: Request, peer: str) -> Any:
    response = state.coordinator.leave_group(adapter.leave_group(req.body))
    return adapter.leave_group_response(response, req.api_version)


def _known(state: NodeState, topic: str, partition: int) -> bool:
    parts = state.log.topics.get(topic)
    return parts is not None and 0 <= partition < len(parts)


def _offset_commit(state: NodeState, req: Request, peer: str) -> Any:
    """Kafka's broker (KafkaApis) answers UNKNOWN_TOPIC_OR_PARTITION itself for a partition its metadata does
    not have, never auto-creating a topic; the coordinator sees only the rest, and nothing at all when nothing
    is left (no group is created then)."""
    request = adapter.offset_commit(req.body, req.api_version)
    unknown: dict[str, list[OffsetCommitResponsePartition]] = {}
    known = []
    for topic in request.topics:
        parts = [p for p in topic.partitions if _known(state, topic.name, p.partition_index)]
        for p in topic.partitions:
            if not _known(state, topic.name, p.partition_index):
                unknown.setdefault(topic.name, []).append(
                    OffsetCommitResponsePartition(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if parts:
            known.append(OffsetCommitRequestTopic(topic.name, parts))
    if not unknown:
        return state.coordinator.offset_commit(request)
    response = OffsetCommitResponse()
    if known:
        request.topics = known
        response = state.coordinator.offset_commit(request)
    answered = {t.name: t for t in response.topics}
    for name, parts in unknown.items():
        if name in answered:
            answered[name].partitions.extend(parts)
        else:
            response.topics.append(OffsetCommitResponseTopic(name, parts))
    return response


def _offset_fetch(state: NodeState, req: Request, peer: str) -> Any:
    requests = adapter.offset_fetch_groups(req.body)
    responses = [state.coordinator.offset_fetch(r) for r in requests]
    return adapter.offset_fetch_response(responses, [r.group_id for r in requests], req.api_version)


def _offset_delete(state: NodeState, req: Request, peer: str) -> Any:
    """As OffsetCommit, partitions the broker does not have are UNKNOWN_TOPIC_OR_PARTITION before the
    coordinator; but the coordinator is asked even with nothing left, and a group-level error it gives (no such
    group, a group that is not a consumer group) is the whole answer, with no partitions (Kafka 4)."""
    request = adapter.offset_delete(req.body)
    unknown: dict[str, list[OffsetDeleteResponsePartition]] = {}
    known = []
    for topic in request.topics:
        for index in topic.partition_indexes:
            if not _known(state, topic.name, index):
                unknown.setdefault(topic.name, []).append(
                    OffsetDeleteResponsePartition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        indexes = [i for i in topic.partition_indexes if _known(state, topic.name, i)]
        if indexes:
            known.append(OffsetDeleteRequestTopic(topic.name, indexes))
    if not unknown:
        return state.coordinator.offset_delete(request)
    request.topics = known
    response = state.coordinator.offset_delete(request)
    if response.error_code != ErrorCode.NONE:
        return response
    answered = {t.name: t for t in response.topics}
    for name, parts in unknown.items():
        if name in answered:
            answered[name].partitions.extend(parts)
        else:
            response.topics.append(OffsetDeleteResponseTopic(name, parts))
    return response


def _describe_groups(state: NodeState, req: Request, peer: str) -> Any:
    """From v6 a group the coordinator does not have is GROUP_ID_NOT_FOUND with Kafka's message (older
    versions: error 0, state Dead). Kafka 4's admin client asks v6 and reports "not found" from it."""
    response = state.coordinator.describe_groups(adapter.describe_groups(req.body))
    if req.api_version < 6:
        return response
    return {"groups": [
        {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": f"Group {g.group_id} not found.",
         "group_id": g.group_id, "group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": []}
        if g.error_code == ErrorCode.NONE and g.group_state == "Dead" else g for g in response.groups]}


def _list_groups(state: NodeState, req: Request, peer: str) -> Any:
    response = state.coordinator.list_groups(adapter.list_groups(req.body))
    types = {t.lower() for t in getattr(req.body, "types_filter", ())}        # v5+ (KIP-848)
    if types and "classic" not in types:
        response = ListGroupsResponse(response.error_code, [])
    return {"error_code": response.error_code,
            "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.group_state,
                        "group_type": "classic"} for g in response.groups]}


def _delete_groups(state: NodeState, req: Request, peer: str) -> Any:
    return state.coordinator.delete_groups(adapter.delete_groups(req.body))


HANDLERS = {
    8: _offset_commit, 9: _offset_fetch, 11: _join_group, 12: _heartbeat, 13: _leave_group, 14: _sync_group,
    15: _describe_groups, 16: _list_groups, 42: _delete_groups, 47: _offset_delete,
}
