"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (spec §2.6, §2.7, §3.9; KIP-496).

An OffsetCommit is validated against the group (:func:`validate_offset_commit`, Kafka's
``validateOffsetCommit``), then written to the store in one transaction *before* it is acknowledged; the
in-memory cache changes only after the write committed, so a failed write (mapped per §2.6 step 9) leaves
neither the store nor the cache half-updated, and an acknowledged offset is always on disk.  Because a
consumer commit completes within the request, there is never a pending consumer commit; the only pending
offsets are *transactional* ones (:mod:`~kafkagroup.coordinator.offsets_txn`), held per producer id until a
transaction marker commits or aborts them.  OffsetFetch with ``require_stable`` (v7+) answers offset -1
with UNSTABLE_OFFSET_COMMIT for a partition with such a pending offset (the Java rule, §8 row 10; the
Scala one also counts pending consumer commits, which cannot exist here).  Partitions with pending
transactional offsets never expire, and a group holding some is not removed by the retention task.

OffsetDelete follows ``GroupCoordinator.handleDeleteOffsets``: unknown or Dead group -> GROUP_ID_NOT_FOUND;
Empty -> every requested partition deleted (absent ones answer NONE too); PreparingRebalance /
CompletingRebalance / Stable consumer group -> GROUP_SUBSCRIBED_TO_TOPIC for the partitions of topics it
subscribes to (unknown subscriptions count as subscribed), the others deleted; any other non-empty group
-> NON_EMPTY_GROUP.  A deletion also drops pending transactional offsets of those partitions (Kafka's
tombstone does), is durable before the answer, and -- as in Scala's ``cleanupGroupMetadata`` -- an Empty
group left without offsets becomes Dead and is removed in the same write (Java leaves it Empty until the
next retention run removes it; the end state is the same).

Version-dependent behaviour: a commit with generation >= 0 to an unknown group is ILLEGAL_GENERATION for
OffsetCommit v0-v8 and GROUP_ID_NOT_FOUND from v9 (``OffsetCommitRequest.version``; the Java coordinator's
rule -- the Scala one answers ILLEGAL_GENERATION at every version).  Limit: the coordinator has no topic
metadata, so OffsetDelete never answers UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist (Kafka's
request handler does, before the coordinator).
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

from kafkagroup.messages.clock import Clock
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import StoreWriteError, group_write_error, offset_commit_write_error
from kafkagroup.coordinator.group import ClassicGroup, GroupState, OffsetAndMetadata
from kafkagroup.coordinator.membership import validate_current_member
from kafkagroup.coordinator.offset_state import GroupOffsets
from kafkagroup.messages.api import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    OffsetCommitRequestTopic, OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic, OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from kafkagroup.coordinator.rebalance import RebalanceEngine
from kafkagroup.coordinator.request_limits import INT64
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.structs import TopicPartition

__all__ = ["OffsetHandlers", "utf16_length", "validate_offset_commit", "commit_response_topics", "response_topics",
           "uniform_commit_topics", "uniform_commit_response"]

log = logging.getLogger("kafkagroup.coordinator")

_S = GroupState
_E = ErrorCode
#: OffsetCommitRequest.DEFAULT_RETENTION_TIME: the only retention_time_ms meaning "use offsets.retention.minutes"
DEFAULT_RETENTION_TIME_MS = -1


def utf16_length(s: str) -> int:
    """Java's ``String.length()``: UTF-16 code units (characters outside the BMP count twice)."""
    if s.isascii():
        return len(s)
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def uniform_commit_topics(topics: Sequence[OffsetCommitRequestTopic], error: ErrorCode
                          ) -> list[OffsetCommitResponseTopic]:
    """Every partition of the request answered ``error`` (a null array -- refused with 42 -- answers none)."""
    return [OffsetCommitResponseTopic(t.name, [OffsetCommitResponsePartition(p.partition_index, error)
                                               for p in t.partitions or ()]) for t in topics or ()]


def uniform_commit_response(req: OffsetCommitRequest, error: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse(uniform_commit_topics(req.topics, error))


def validate_offset_commit(group: ClassicGroup, generation_id: int, member_id: str,
                           group_instance_id: str | None, *, transactional: bool) -> ErrorCode | None:
    """Kafka's ``validateOffsetCommit`` (§2.6 steps 3-6): None when the commit may be stored.

    ``transactional`` (TxnOffsetCommit): a commit without member id and generation is accepted by a
    non-empty group (older TxnOffsetCommit versions send neither), and CompletingRebalance is no error."""
    if group.state is _S.DEAD:
        return _E.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and group.state is _S.EMPTY:
        return None  # admin tools / manual assignment: no member checks
    if generation_id >= 0 or member_id != "" or group_instance_id is not None:
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return _E.ILLEGAL_GENERATION
    elif not transactional and group.state is not _S.EMPTY:
        return _E.UNKNOWN_MEMBER_ID  # only members can commit to a non-empty group
    if not transactional and group.state is _S.COMPLETING_REBALANCE:
        return _E.REBALANCE_IN_PROGRESS
    return None


def commit_response_topics(topics: Sequence[OffsetCommitRequestTopic], now: int, expire: int | None,
                           max_metadata: int
                           ) -> tuple[list[tuple[TopicPartition, OffsetAndMetadata]], list[list[ErrorCode]]]:
    """Split a commit's partitions into the accepted offsets (their record offset is stamped by the store's
    write) and the per-partition codes (OFFSET_METADATA_TOO_LARGE for metadata over the limit, else NONE)."""
    accepted: list[tuple[TopicPartition, OffsetAndMetadata]] = []
    codes: list[list[ErrorCode]] = []
    for topic in topics:
        topic_codes = []
        for p in topic.partitions:
            metadata = p.committed_metadata if p.committed_metadata is not None else ""
            if utf16_length(metadata) > max_metadata:
                topic_codes.append(_E.OFFSET_METADATA_TOO_LARGE)
            else:
                accepted.append((TopicPartition(topic.name, p.partition_index),
                                 OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, metadata,
                                                   now, expire)))
                topic_codes.append(_E.NONE)
        codes.append(topic_codes)
    return accepted, codes


def response_topics(topics: Sequence[OffsetCommitRequestTopic], codes: list[list[ErrorCode]],
                    write_error: ErrorCode) -> list[OffsetCommitResponseTopic]:
    """Per-partition answers: the write's error where the partition was accepted, its own code otherwise."""
    return [OffsetCommitResponseTopic(topic.name, [
        OffsetCommitResponsePartition(p.partition_index, write_error if code is _E.NONE else code)
        for p, code in zip(topic.partitions, topic_codes)]) for topic, topic_codes in zip(topics, codes)]


class OffsetHandlers:
    """Offset requests and the retention task, over the group registry and the store."""

    def __init__(self, clock: Clock, config: CoordinatorConfig, engine: RebalanceEngine, store: GroupStore,
                 groups: dict[str, ClassicGroup], create_group: Callable[[str], ClassicGroup],
                 partition_for: Callable[[str], int]) -> None:
        self.clock = clock
        self.config = config
        self.engine = engine
        self.store = store
        self.groups = groups
        self.create_group = create_group
        self.partition_for = partition_for

    # ================================================================ OffsetCommit

    def offset_commit(self, req: OffsetCommitRequest) -> OffsetCommitResponse:
        """§2.6 from step 2."""
        group = self.groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:  # a commit from an older generation, or a vanished group
                return uniform_commit_response(
                    req, _E.GROUP_ID_NOT_FOUND if req.version >= 9 else _E.ILLEGAL_GENERATION)
            log.info("creating simple consumer group %s via a manual offset commit", req.group_id)
            group = self.create_group(req.group_id)
        error = validate_offset_commit(group, req.generation_id, req.member_id, req.group_instance_id,
                                       transactional=False)
        if error is not None:
            return uniform_commit_response(req, error)
        state = group.state
        if state is _S.STABLE or state is _S.PREPARING_REBALANCE:
            self.engine.restart_session(group, group.members[req.member_id])
        return self.store_commit(group.group_id, group.offset_state, req)

    def store_commit(self, group_id: str, state: GroupOffsets, req: OffsetCommitRequest) -> OffsetCommitResponse:
        """Write a validated commit durably, then into ``state`` (the group id's offsets, of either kind)."""
        now = self.clock.now_ms()
        # Only -1 (OffsetCommitRequest.DEFAULT_RETENTION_TIME) means "the broker's offsets.retention"; any other
        # value, negative ones included, sets expireTimestamp = now + retention (OffsetMetadataManager
        # .expireTimestampMs; GroupCoordinatorAdapter.commitOffsets for the Scala coordinator), so a retention
        # below -1 gives an expiry in the past and the offset goes at the next retention run.  Kafka adds in a
        # Java long, so now + a retention near 2**63 wraps negative and the offset expires at the next run; here
        # the sum saturates at int64's bounds instead (never expires, and stays storable in SQLite's INTEGER).
        # RetentionTimeMs is a field of OffsetCommit v2-v4 only, and an *ignorable* one (OffsetCommitRequest.json):
        # a Java client sending another version drops the value silently and the broker applies its own
        # retention, so it is ignored here for those versions too.
        retention = req.retention_time_ms if 2 <= req.version <= 4 else DEFAULT_RETENTION_TIME_MS
        expire = (None if retention == DEFAULT_RETENTION_TIME_MS
                  else max(INT64[0], min(now + retention, INT64[1])))
        accepted, codes = commit_response_topics(req.topics, now, expire,
                                                 self.config.offset_metadata_max_bytes)
        write_error = _E.NONE
        if accepted:
            try:
                self.store.store_offsets(group_id, self.partition_for(group_id), accepted)
            except StoreWriteError as exc:
                write_error = offset_commit_write_error(exc.code)
                log.warning("offset commit of group %s failed: %s", group_id, exc)
            else:
                offsets = state.committed
                for tp, value in accepted:
                    offsets[tp] = value
        return OffsetCommitResponse(response_topics(req.topics, codes, write_error))

    # ================================================================= OffsetFetch

    def offset_fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        """§2.7 from step 2: offsets regardless of the group state; absent ones as offset -1."""
        group = self.groups.get(req.group_id)
        live = group is not None and group.state is not _S.DEAD
        return self.fetch(group.offset_state if group is not None and live else None, req)

    def fetch(self, state: GroupOffsets | None, req: OffsetFetchRequest) -> OffsetFetchResponse:
        """The offsets of ``state`` (None: a group id with none) as OffsetFetch answers them."""
        offsets = state.committed if state is not None else {}
        # require_stable: partitions with a pending transactional offset answer -1 / UNSTABLE_OFFSET_COMMIT
        unstable = state.pending_txn_partitions if state is not None and req.require_stable else {}
        if req.topics is None:  # committed partitions only: a pending-only partition is not listed (Java)
            by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
            for tp, o in offsets.items():
                by_topic.setdefault(tp.topic, []).append(
                    OffsetFetchResponsePartition(tp.partition, error_code=_E.UNSTABLE_OFFSET_COMMIT) if tp in unstable
                    else OffsetFetchResponsePartition(tp.partition, o.committed_offset, o.leader_epoch, o.metadata))
            return OffsetFetchResponse(_E.NONE, [OffsetFetchResponseTopic(t, ps) for t, ps in by_topic.items()])
        topics = []
        for topic in req.topics:
            parts = []
            for index in topic.partition_indexes:
                tp = TopicPartition(topic.name, index)
                o = offsets.get(tp)
                if tp in unstable:
                    parts.append(OffsetFetchResponsePartition(index, error_code=_E.UNSTABLE_OFFSET_COMMIT))
                elif o is None:
                    parts.append(OffsetFetchResponsePartition(index))
                else:
                    parts.append(OffsetFetchResponsePartition(index, o.committed_offset, o.leader_epoch, o.metadata))
            topics.append(OffsetFetchResponseTopic(topic.name, parts))
        return OffsetFetchResponse(_E.NONE, topics)

    # ================================================================ OffsetDelete

    def offset_delete(self, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
        """KIP-496 from after the gate (see the module docstring for the rules)."""
        group = self.groups.get(req.group_id)
        if group is None or group.state is _S.DEAD:
            return OffsetDeleteResponse(_E.GROUP_ID_NOT_FOUND)
        if group.state is _S.EMPTY:
            subscribed: Callable[[str], bool] = lambda topic: False  # noqa: E731
        elif group.protocol_type == "consumer":
            topics = group.subscribed_topics      # None: unknown or unparsable -> treated as subscribed
            subscribed = (lambda topic: True) if topics is None else topics.__contains__  # noqa: E731
        else:
            return OffsetDeleteResponse(_E.NON_EMPTY_GROUP)
        response = OffsetDeleteResponse(_E.NONE)
        doomed: list[TopicPartition] = []
        for topic in req.topics:
            code = _E.GROUP_SUBSCRIBED_TO_TOPIC if subscribed(topic.name) else _E.NONE
            response.topics.append(OffsetDeleteResponseTopic(topic.name, [
                OffsetDeleteResponsePartition(index, code) for index in topic.partition_indexes]))
            if code is _E.NONE:
                doomed.extend(TopicPartition(topic.name, index) for index in topic.partition_indexes)
        present = [tp for tp in dict.fromkeys(doomed) if tp in group.offsets or tp in group.pending_txn_partitions]
        if present:
            error = self.remove_offsets(group, present)
            if error is not None:  # nothing was deleted; a failed write is a group-level error (Java)
                return OffsetDeleteResponse(error)
        return response

    def remove_offsets(self, group: ClassicGroup, partitions: list[TopicPartition]) -> ErrorCode | None:
        """Delete committed and pending offsets of ``partitions`` durably, then from memory; an Empty group
        left with no offsets becomes Dead and is removed in the same write.  Returns the mapped write error
        (nothing changed then) or None."""
        doomed = set(partitions)
        left = len(group.offsets) - sum(1 for tp in doomed if tp in group.offsets)
        remove_group = (group.state is _S.EMPTY and left == 0
                        and all(tp in doomed for tp in group.pending_txn_partitions))
        try:
            self.store.delete_offsets(group.group_id, partitions, delete_group=remove_group)
        except StoreWriteError as exc:
            log.warning("deleting offsets of group %s failed: %s", group.group_id, exc)
            return group_write_error(exc.code)
        for tp in partitions:
            group.offsets.pop(tp, None)
            group.drop_pending_txn_partition(tp)
        if remove_group:
            self._remove_dead(group)
        return None

    def _remove_dead(self, group: ClassicGroup) -> None:
        group.transition_to(_S.DEAD, self.clock.now_ms())
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # ================================================================== retention

    def expired_offsets(self, group: ClassicGroup, now_ms: int) -> list[TopicPartition]:
        """Offsets of ``group`` that may expire now (``GroupMetadata.removeExpiredOffsets``, spec §3.9)."""
        retention = self.config.offsets_retention_ms
        subscribed: set[str] = set()
        if group.protocol_type is not None and group.state is _S.EMPTY:
            state_ts = group.state_timestamp

            def base(o: OffsetAndMetadata) -> int:
                return state_ts if state_ts is not None else o.commit_timestamp
        elif group.protocol_type == "consumer" and group.subscribed_topics is not None and group.state is _S.STABLE:
            subscribed = group.subscribed_topics

            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp
        elif group.protocol_type is None:
            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp
        else:
            return []
        expired = []
        pending = group.pending_txn_partitions      # never expire under an open transaction
        for tp, o in group.offsets.items():
            if tp.topic in subscribed or tp in pending:
                continue
            if o.expire_timestamp is not None:
                if now_ms >= o.expire_timestamp:
                    expired.append(tp)
            elif now_ms - base(o) >= retention:
                expired.append(tp)
        return expired

    def cleanup_group(self, group: ClassicGroup) -> tuple[int, bool]:
        """Expire offsets of one group; an Empty group left without offsets becomes Dead and is removed.
        Returns (offsets removed, group removed).  A failed write changes nothing (retried next period)."""
        expired = self.expired_offsets(group, self.clock.now_ms())
        remove_group = (group.state is _S.EMPTY and len(expired) == len(group.offsets)
                        and not group.pending_txn_offsets)
        if not expired and not remove_group:
            return 0, False
        try:
            self.store.delete_offsets(group.group_id, expired, delete_group=remove_group)
        except StoreWriteError as exc:
            log.warning("offset expiry of group %s failed: %s", group.group_id, exc)
            return 0, False
        for tp in expired:
            del group.offsets[tp]
        if remove_group:
            self._remove_dead(group)
        return len(expired), remove_group
