"""What offsets, describe and list need from a consumer group (KIP-848): the member checks of OffsetCommit and
OffsetFetch (Kafka's ``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch``), the
ConsumerGroupDescribe answer and the ListGroups entry.  Storing and reading offsets is kind-agnostic
(:class:`~kafkagroup.coordinator.offsets.OffsetHandlers` over the group id's
:class:`~kafkagroup.coordinator.offset_state.GroupOffsets`).

* OffsetCommit: a commit with a negative epoch is an admin's (or a manual-assignment consumer's) and is
  accepted only while the group has no members; otherwise the member must exist (UNKNOWN_MEMBER_ID), a member
  on the consumer protocol must use OffsetCommit v9+ (UNSUPPORTED_VERSION: older versions cannot carry a member
  epoch), and the member must send its current member epoch (STALE_MEMBER_EPOCH otherwise -- e.g. a member
  fenced while it was processing; a member on the classic protocol sends it as its generation and gets
  ILLEGAL_GENERATION).
* TxnOffsetCommit (Kafka's ``validateTransactionalOffsetCommit``, which calls ``validateOffsetCommit`` with
  ``isTransactional=true``): the same checks without the version rule (TxnOffsetCommit v0-v2 carry no member, so
  they reach a non-empty group as UNKNOWN_MEMBER_ID), and a stale epoch is ILLEGAL_GENERATION for every member
  (Kafka maps STALE_MEMBER_EPOCH to it: TxnOffsetCommit has no such error).
* OffsetFetch: without member id and with a negative epoch it is an admin's and always answered; otherwise
  the same member and epoch checks (v9+ carry them).
* Retention (Kafka's ``ConsumerGroup`` expiration condition): an offset of a topic no member subscribes to
  expires ``offsets.retention.minutes`` after its commit (or at the explicit expiry an OffsetCommit v2-v4 set);
  offsets of subscribed topics and of partitions with a pending transactional offset never do.
"""
from __future__ import annotations

from kafkagroup.coordinator.consumer.group import ConsumerGroup, ConsumerGroupMember
from kafkagroup.coordinator.consumer.target import preferred_assignor
from kafkagroup.messages.api import ListedGroup, OffsetCommitRequest, OffsetFetchRequest, TxnOffsetCommitRequest
from kafkagroup.messages.consumer_api import (
    MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER, DescribedConsumerGroup, DescribedConsumerGroupMember,
    DescribedTopicPartitions,
)
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.topics import TopicsView
from kafkagroup.structs import TopicPartition

__all__ = ["consumer_commit_error", "consumer_txn_commit_error", "consumer_fetch_error", "describe_consumer_group", "list_entry",
           "expired_offsets"]

_E = ErrorCode


def consumer_commit_error(group: ConsumerGroup, req: OffsetCommitRequest) -> ErrorCode | None:
    return _commit_error(group, req.member_id, req.generation_id, transactional=False, version=req.version)


def consumer_txn_commit_error(group: ConsumerGroup, req: TxnOffsetCommitRequest) -> ErrorCode | None:
    return _commit_error(group, req.member_id, req.generation_id, transactional=True, version=None)


def _commit_error(group: ConsumerGroup, member_id: str, epoch: int, *, transactional: bool,
                  version: int | None) -> ErrorCode | None:
    """Kafka's ``ConsumerGroup.validateOffsetCommit`` (the TxnOffsetCommit caller maps STALE_MEMBER_EPOCH to
    ILLEGAL_GENERATION)."""
    if epoch < 0 and group.is_empty():
        return None
    member = group.members.get(member_id)
    if member is None:
        return _E.UNKNOWN_MEMBER_ID
    if not transactional and version is not None and version < 9 and not member.uses_classic_protocol:
        return _E.UNSUPPORTED_VERSION
    error = _epoch_error(member, epoch)
    return _E.ILLEGAL_GENERATION if transactional and error is not None else error


def _epoch_error(member: ConsumerGroupMember, epoch: int) -> ErrorCode | None:
    """Kafka's ``validateMemberEpoch``: a classic member's generation must be its epoch (ILLEGAL_GENERATION),
    a consumer-protocol member's epoch too (STALE_MEMBER_EPOCH)."""
    if epoch == member.member_epoch:
        return None
    return _E.ILLEGAL_GENERATION if member.uses_classic_protocol else _E.STALE_MEMBER_EPOCH


def consumer_fetch_error(group: ConsumerGroup, req: OffsetFetchRequest) -> ErrorCode | None:
    if req.member_id is None and req.member_epoch < 0:
        return None
    member = group.members.get(req.member_id or "")
    if member is None:
        return _E.UNKNOWN_MEMBER_ID
    return _epoch_error(member, req.member_epoch)


def _partitions(assignment: dict, topics: TopicsView) -> list[DescribedTopicPartitions]:
    return [DescribedTopicPartitions(t, topics.topic_name(t) or "", sorted(ps)) for t, ps in assignment.items()]


def describe_consumer_group(group: ConsumerGroup, topics: TopicsView) -> DescribedConsumerGroup:
    members = [DescribedConsumerGroupMember(
        m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
        list(m.subscribed_topic_names), m.subscribed_topic_regex,
        _partitions(dict(m.assignment.assigned), topics), _partitions(dict(group.target.get(m.member_id, {})), topics),
        MEMBER_TYPE_CLASSIC if m.uses_classic_protocol else MEMBER_TYPE_CONSUMER)
        for m in group.members.values()]
    return DescribedConsumerGroup(_E.NONE, group.group_id, None, group.state_name, group.group_epoch,
                                  group.assignment_epoch,
                                  preferred_assignor(m.server_assignor for m in group.members.values()), members)


def list_entry(group: ConsumerGroup) -> ListedGroup:
    return ListedGroup(group.group_id, group.protocol_type, group.state_name, group.group_type)


def expired_offsets(group: ConsumerGroup, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    subscribed = group.all_subscribed_topics()
    pending = group.offset_state.pending_txn_partitions
    expired = []
    for tp, o in group.offset_state.committed.items():
        if tp.topic in subscribed or tp in pending:
            continue
        if (now_ms >= o.expire_timestamp) if o.expire_timestamp is not None else (
                now_ms - o.commit_timestamp >= retention_ms):
            expired.append(tp)
    return expired
