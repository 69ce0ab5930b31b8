"""OffsetCommit, OffsetFetch and offset expiry (spec §2.6, §2.7, §3.9).

An OffsetCommit is validated against the group (``validateOffsetCommit``), then written to the store in
one transaction *before* it is acknowledged; the in-memory cache changes only after the write committed,
so a failed write (mapped per §2.6 step 9) leaves neither the store nor the cache half-updated, and an
acknowledged offset is always on disk.  Because a commit completes within the request, there is never a
pending (unacknowledged) consumer commit to report as UNSTABLE_OFFSET_COMMIT; transactional commits are not
implemented.

Version-dependent behaviour follows the Scala coordinator: a commit with generation >= 0 to an unknown
group is ILLEGAL_GENERATION (the Java coordinator answers GROUP_ID_NOT_FOUND from OffsetCommit v9).
"""
from __future__ import annotations

import logging
from typing import Callable

from kafkagroup.coordinator.clock import Clock
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.errors import ErrorCode, StoreWriteError, offset_commit_write_error
from kafkagroup.coordinator.group import ClassicGroup, GroupState, OffsetAndMetadata
from kafkagroup.coordinator.membership import validate_current_member
from kafkagroup.coordinator.messages import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
)
from kafkagroup.coordinator.rebalance import RebalanceEngine
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.structs import TopicPartition

__all__ = ["OffsetHandlers", "utf16_length"]

log = logging.getLogger("kafkagroup.coordinator")

_S = GroupState
_E = ErrorCode


def utf16_length(s: str) -> int:
    """Java's ``String.length()``: UTF-16 code units (characters outside the BMP count twice)."""
    if s.isascii():
        return len(s)
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def uniform_commit_response(req: OffsetCommitRequest, error: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse([OffsetCommitResponseTopic(t.name, [
        OffsetCommitResponsePartition(p.partition_index, error) for p in t.partitions]) for t in req.topics])


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
                return uniform_commit_response(req, _E.ILLEGAL_GENERATION)
            log.info("creating simple consumer group %s via a manual offset commit", req.group_id)
            group = self.create_group(req.group_id)
        error = self._validate(group, req)
        if error is not None:
            return uniform_commit_response(req, error)
        state = group.state
        if state is _S.COMPLETING_REBALANCE:
            return uniform_commit_response(req, _E.REBALANCE_IN_PROGRESS)
        if state is _S.STABLE or state is _S.PREPARING_REBALANCE:
            self.engine.restart_session(group, group.members[req.member_id])
        return self._store(group, req)

    @staticmethod
    def _validate(group: ClassicGroup, req: OffsetCommitRequest) -> ErrorCode | None:
        if group.state is _S.DEAD:
            return _E.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.state is _S.EMPTY:
            return None  # admin tools / manual assignment: no member checks
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = validate_current_member(group, req.member_id, req.group_instance_id)
            if error is not None:
                return error
            if req.generation_id != group.generation_id:
                return _E.ILLEGAL_GENERATION
            return None
        return _E.UNKNOWN_MEMBER_ID  # only members can commit to a non-empty group

    def _store(self, group: ClassicGroup, req: OffsetCommitRequest) -> OffsetCommitResponse:
        now = self.clock.now_ms()
        expire = now + req.retention_time_ms if req.retention_time_ms >= 0 else None
        max_metadata = self.config.offset_metadata_max_bytes
        accepted: list[tuple[TopicPartition, OffsetAndMetadata]] = []
        codes: list[list[ErrorCode]] = []
        for topic in req.topics:
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
        write_error = _E.NONE
        if accepted:
            try:
                self.store.store_offsets(group.group_id, self.partition_for(group.group_id), accepted)
            except StoreWriteError as exc:
                write_error = offset_commit_write_error(exc.code)
                log.warning("offset commit of group %s failed: %s", group.group_id, exc)
            else:
                offsets = group.offsets
                for tp, value in accepted:
                    offsets[tp] = value
        response = OffsetCommitResponse()
        for topic, topic_codes in zip(req.topics, codes):
            response.topics.append(OffsetCommitResponseTopic(topic.name, [
                OffsetCommitResponsePartition(p.partition_index, write_error if code is _E.NONE else code)
                for p, code in zip(topic.partitions, topic_codes)]))
        return response

    # ================================================================= OffsetFetch

    def offset_fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        """§2.7 from step 2: offsets regardless of the group state; absent ones as offset -1."""
        group = self.groups.get(req.group_id)
        offsets = group.offsets if group is not None and group.state is not _S.DEAD else {}
        if req.topics is None:
            by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
            for tp, o in offsets.items():
                by_topic.setdefault(tp.topic, []).append(OffsetFetchResponsePartition(
                    tp.partition, o.committed_offset, o.leader_epoch, o.metadata, _E.NONE))
            return OffsetFetchResponse(_E.NONE, [OffsetFetchResponseTopic(t, ps) for t, ps in by_topic.items()])
        topics = []
        for topic in req.topics:
            parts = []
            for index in topic.partition_indexes:
                o = offsets.get(TopicPartition(topic.name, index))
                parts.append(OffsetFetchResponsePartition(index) if o is None else OffsetFetchResponsePartition(
                    index, o.committed_offset, o.leader_epoch, o.metadata, _E.NONE))
            topics.append(OffsetFetchResponseTopic(topic.name, parts))
        return OffsetFetchResponse(_E.NONE, topics)

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
        for tp, o in group.offsets.items():
            if tp.topic in subscribed:
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
        remove_group = group.state is _S.EMPTY and len(expired) == len(group.offsets)
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
            group.transition_to(_S.DEAD, self.clock.now_ms())
            if self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
        return len(expired), remove_group
