"""A consumer group to and from its stored rows (the store's ``consumer_groups`` / ``consumer_members``).

Kafka writes a consumer group to ``__consumer_offsets`` as records (``GroupCoordinatorRecordHelpers``) and
replays them when the partition is loaded (``GroupMetadataManager.replay``); this is the same content in
rows: the group epoch, the target's epoch and the subscribed topics' (id, partition count); per member its
identity, subscription, assignor, rebalance timeout, classic metadata, state, epochs, assigned partitions,
partitions pending revocation and target.  Partitions by topic id, names and classic protocols are JSON text.

:func:`changes` gives the rows of what changed since the last write (the group tracks the member ids it
touched: ``ConsumerGroup.changed`` / ``removed``); :func:`group_from_record` rebuilds a group at load.  Not
stored, rebuilt at load as Kafka does: timers (the caller restarts sessions), regex matches (resolved again at
the next heartbeat: ``metadata_version`` is -1), when the last target was computed.
"""
from __future__ import annotations

import base64
import json
from typing import Iterable
from uuid import UUID

from kafkagroup.coordinator.consumer.group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from kafkagroup.coordinator.consumer.reconcile import Assignment, MemberAssignment, MemberState
from kafkagroup.coordinator.offset_state import GroupOffsets
from kafkagroup.coordinator.store import ConsumerGroupRecord, ConsumerMemberRecord

__all__ = ["group_record", "changes", "group_from_record"]


def _partitions(assignment: Assignment) -> str:
    return json.dumps({str(t): sorted(ps) for t, ps in assignment.items()}, sort_keys=True)


def _read_partitions(text: str, where: str) -> dict[UUID, frozenset[int]]:
    try:
        return {UUID(t): frozenset(int(p) for p in ps) for t, ps in json.loads(text).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: unreadable partitions {text[:80]!r}: {exc}") from exc


def member_record(group: ConsumerGroup, member: ConsumerGroupMember) -> ConsumerMemberRecord:
    a = member.assignment
    classic = member.classic
    target = group.target.get(member.member_id)
    names = member.subscribed_topic_names
    # the JSON columns are encoded again only when the member holds other (immutable) objects: a heartbeat that
    # changes nothing costs a tuple comparison, not an encoding
    held = member.encoded
    if held is None or held[0] is not a or held[1] is not target or held[2] is not names or held[3] is not classic:
        held = member.encoded = (
            a, target, names, classic, json.dumps(list(names)), _partitions(a.assigned),
            _partitions(a.pending_revocation), None if target is None else _partitions(target),
            None if classic is None else json.dumps([[n, base64.b64encode(b).decode()] for n, b in classic.protocols]))
    return ConsumerMemberRecord(
        member.member_id, member.instance_id, member.rack_id, member.client_id, member.client_host,
        member.rebalance_timeout_ms, held[4], member.subscribed_topic_regex,
        member.server_assignor, None if classic is None else classic.session_timeout_ms, held[8],
        a.state.value, a.member_epoch, a.previous_member_epoch, held[5], held[6], held[7])


def _metadata_text(group: ConsumerGroup) -> str:
    """The subscribed topics' metadata as JSON, encoded again only when the group replaced it."""
    metadata = group.subscription_metadata
    cached = group.stored_metadata
    if cached is not None and cached[0] is metadata:
        return cached[1]
    text = json.dumps({name: [str(t), n] for name, (t, n) in metadata.items()}, sort_keys=True)
    group.stored_metadata = (metadata, text)
    return text


def group_record(group: ConsumerGroup, partition: int, members: Iterable[ConsumerGroupMember]) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(group.group_id, partition, group.group_epoch, group.assignment_epoch,
                               _metadata_text(group), [member_record(group, m) for m in members])


def changes(group: ConsumerGroup, partition: int, *, complete: bool) -> tuple[ConsumerGroupRecord, list[str]]:
    """(record of the group with the members that may have changed -- all when ``complete`` --, removed member
    ids); the group's change tracking is reset."""
    if complete:
        members = list(group.members.values())
    else:
        members = [group.members[m] for m in group.changed if m in group.members]
    removed = [m for m in group.removed if m not in group.members]
    group.changed = set()
    group.removed = set()
    return group_record(group, partition, members), removed


def group_from_record(record: ConsumerGroupRecord, offsets: GroupOffsets) -> ConsumerGroup:
    """The group as stored (no timers: the caller arms them); ValueError naming the group and member for a row
    this release cannot read."""
    group = ConsumerGroup(record.group_id, offsets)
    group.group_epoch = record.group_epoch
    where = f"consumer group {record.group_id}"
    try:
        group.subscription_metadata = {name: (UUID(t), int(n))
                                       for name, (t, n) in json.loads(record.subscription_metadata).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: unreadable subscription metadata: {exc}") from exc
    target: dict[str, Assignment] = {}
    for m in record.members:
        at = f"{where}, member {m.member_id}"
        try:
            state = MemberState(m.state)
            names = tuple(str(n) for n in json.loads(m.subscribed_topic_names))
            classic = None
            if m.classic_protocols is not None:
                classic = ClassicMemberMetadata(int(m.classic_session_timeout_ms or 0), tuple(
                    (str(n), base64.b64decode(b)) for n, b in json.loads(m.classic_protocols)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{at}: unreadable row: {exc}") from exc
        member = ConsumerGroupMember(
            m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms, subscribed_topic_names=names,
            subscribed_topic_regex=m.subscribed_topic_regex, server_assignor=m.server_assignor,
            assignment=MemberAssignment(state, m.member_epoch, m.previous_member_epoch,
                                        _read_partitions(m.assigned, at), _read_partitions(m.pending_revocation, at)),
            classic=classic)
        group.add_member(member)
        if m.target is not None:
            target[m.member_id] = _read_partitions(m.target, at)
    group.set_target(record.assignment_epoch, target)
    group.changed = set()
    group.removed = set()
    return group
