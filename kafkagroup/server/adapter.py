"""kio request entities -> ``kafkagroup.messages`` requests, and the version-dependent reshaping of the
coordinator's responses.

The coordinator's request and response dataclasses use Kafka's field names, so most responses go to
:func:`kafkagroup.server.entities.to_entity` as they are; what is left here is what differs between
versions: fields a version does not send (read with their Kafka default), LeaveGroup v0-v2 (one member,
answered with a top-level error), and OffsetFetch v8+ (a batch of groups).
"""
from __future__ import annotations

import datetime
from typing import Any

from kafkagroup.messages.api import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, MemberIdentity, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic, OffsetDeleteRequest, OffsetDeleteRequestTopic, OffsetFetchRequest,
    OffsetFetchRequestTopic, OffsetFetchResponse, SyncGroupRequest,
)
from kafkagroup.messages.error_codes import ErrorCode

__all__ = [
    "ms", "join_group", "sync_group", "heartbeat", "leave_group", "leave_group_response", "offset_commit",
    "offset_fetch_groups", "offset_fetch_response", "offset_delete", "describe_groups", "list_groups",
    "delete_groups",
]

_MS = datetime.timedelta(milliseconds=1)


def ms(delta: datetime.timedelta) -> int:
    """A kio ``timedelta_i32``/``timedelta_i64`` field as integer milliseconds."""
    return delta // _MS


def join_group(body: Any, version: int, client_id: str | None, client_host: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),          # v5+
        protocol_type=body.protocol_type,
        protocols=[(p.name, p.metadata) for p in body.protocols],
        session_timeout_ms=ms(body.session_timeout),
        rebalance_timeout_ms=ms(body.rebalance_timeout) if hasattr(body, "rebalance_timeout") else -1,  # v1+
        reason=getattr(body, "reason", None),                                  # v8+
        client_id=client_id or "",
        client_host=client_host,
        version=version,
    )


def sync_group(body: Any) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),          # v3+
        protocol_type=getattr(body, "protocol_type", None),                  # v5+
        protocol_name=getattr(body, "protocol_name", None),                  # v5+
        assignments=[(a.member_id, a.assignment) for a in body.assignments],
    )


def heartbeat(body: Any) -> HeartbeatRequest:
    return HeartbeatRequest(body.group_id, body.generation_id, body.member_id,
                            getattr(body, "group_instance_id", None))


def leave_group(body: Any) -> LeaveGroupRequest:
    if hasattr(body, "members"):                                               # v3+: a batch
        members = [MemberIdentity(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                   for m in body.members]
    else:
        members = [MemberIdentity(body.member_id)]
    return LeaveGroupRequest(body.group_id, members)


def leave_group_response(response: LeaveGroupResponse, version: int) -> LeaveGroupResponse:
    """v0-v2 carry one member and only a top-level error: the member's, as Kafka's LeaveGroupResponse."""
    if version < 3 and response.error_code == ErrorCode.NONE and response.members:
        return LeaveGroupResponse(response.members[0].error_code, [])
    return response


def offset_commit(body: Any, version: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=body.group_id,
        generation_id=body.generation_id_or_member_epoch,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),          # v7+
        retention_time_ms=ms(body.retention_time) if hasattr(body, "retention_time") else -1,  # v2-v4
        topics=[OffsetCommitRequestTopic(t.name, [
            OffsetCommitRequestPartition(p.partition_index, p.committed_offset,
                                         getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
            for p in t.partitions]) for t in body.topics],
        version=version,
    )


def offset_fetch_groups(body: Any) -> list[OffsetFetchRequest]:
    """One request per group: v8+ batches groups, older versions name one."""
    stable = getattr(body, "require_stable", False)
    groups = body.groups if hasattr(body, "groups") else [body]
    return [OffsetFetchRequest(g.group_id, None if g.topics is None else [
        OffsetFetchRequestTopic(t.name, list(t.partition_indexes)) for t in g.topics], stable,
        getattr(g, "member_id", None), getattr(g, "member_epoch", -1)) for g in groups]        # v9+: member


def offset_fetch_response(responses: list[OffsetFetchResponse], group_ids: list[str], version: int) -> Any:
    if version >= 8:
        return {"groups": [{"group_id": g, "topics": r.topics, "error_code": r.error_code}
                           for g, r in zip(group_ids, responses)]}
    return responses[0]


def offset_delete(body: Any) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(body.group_id, [
        OffsetDeleteRequestTopic(t.name, [p.partition_index for p in t.partitions]) for t in body.topics])


def describe_groups(body: Any, version: int = 0) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(list(body.groups), version)


def list_groups(body: Any) -> ListGroupsRequest:
    return ListGroupsRequest(list(getattr(body, "states_filter", ())))        # v4+


def delete_groups(body: Any) -> DeleteGroupsRequest:
    return DeleteGroupsRequest(list(body.groups_names))
