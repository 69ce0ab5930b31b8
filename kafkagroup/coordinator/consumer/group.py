"""The consumer group (KIP-848) as bookkeeping: members, epochs, the target assignment, partition epochs.

Kafka's ``ConsumerGroup`` / ``ConsumerGroupMember``.  No request handling and no timers here (those live in
:mod:`~kafkagroup.coordinator.consumer.heartbeat`); every change goes through a method that keeps the
derived indexes right:

* ``group_epoch``: bumped by a change of membership, subscription or subscribed-topic metadata;
* ``assignment_epoch``: the epoch of ``target`` (the target assignment, member id -> partitions by topic id);
  below ``group_epoch`` means a new target is due (state Assigning);
* ``partition_epochs``: (topic id, partition) -> epoch of the member holding it (assigned or being revoked);
  absent = free.  A partition is never held by two members: :meth:`update_member` refuses it.

State (Kafka's ``ConsumerGroupState`` display names): Empty (no members), Assigning (target behind the group
epoch), Reconciling (some member not STABLE at the target epoch), Stable.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterator
from uuid import UUID

from kafkagroup.coordinator.consumer.reconcile import Assignment, MemberAssignment, MemberState
from kafkagroup.coordinator.errors import IllegalGroupStateError
from kafkagroup.coordinator.offset_state import GroupOffsets

__all__ = ["ConsumerGroup", "ConsumerGroupMember", "ClassicMemberMetadata", "LEAVE_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_STATIC_MEMBER_EPOCH"]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member on the classic protocol sent in its last JoinGroup (Kafka's ``ClassicMemberMetadata``): its
    session timeout and its protocols in its order of preference, (name, ConsumerProtocol subscription bytes)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol the member is told in JoinGroup and must name in SyncGroup: its first one."""
        return self.protocols[0][0]


@dataclass(slots=True)
class ConsumerGroupMember:
    """One consumer-protocol member: what it sent (identity, subscription, timeouts) and its reconciliation."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assignment: MemberAssignment = field(default_factory=MemberAssignment.joining)
    # set for a member on the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside this consumer group
    classic: ClassicMemberMetadata | None = None
    # timers (owned by the heartbeat handler): session expiry, and the revocation deadline; a classic member's
    # join (rejoin asked for) and sync (JoinGroup answered) deadlines
    session_timer: Any = None
    rebalance_timer: Any = None
    join_timer: Any = None
    sync_timer: Any = None
    # the store's encoding of what it last encoded (consumer/records.py): reused while the same objects are held
    encoded: Any = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    @property
    def member_epoch(self) -> int:
        return self.assignment.member_epoch

    @property
    def state(self) -> MemberState:
        return self.assignment.state

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        return self.subscribed_topic_names, self.subscribed_topic_regex


class ConsumerGroup:
    """One consumer group; see the module docstring.  ``offset_state`` holds the group id's offsets (shared with
    whatever group held the id before: a conversion hands them over, never copies them)."""


    group_type = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id: str, offsets: GroupOffsets) -> None:
        self.group_id = group_id
        self.offset_state = offsets
        # Kafka 4.4's ModernGroup constructor starts a new group at epoch 1 (assignment epoch 0), so the first
        # member's join bumps it to 2 and that member gets epoch 2 (observed on the broker; conformance test)
        self.group_epoch = 1
        self.assignment_epoch = 0
        # members that have not reached the target (kept by every change below, recounted when the target
        # moves): the group's state in O(1), asked at every heartbeat
        self.unsettled = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}            # instance id -> member id
        self.target: dict[str, Assignment] = {}             # member id -> its target partitions
        self.partition_epochs: dict[tuple[UUID, int], int] = {}
        # subscribed topic name -> (topic id, partition count) as of the last group-epoch computation
        self.subscription_metadata: dict[str, tuple[UUID, int]] = {}
        self.metadata_version = -1                          # TopicsView version it was computed at
        self.regex_topics: dict[str, frozenset[str]] = {}   # resolved regex -> matching topic names
        # how many members subscribe to each name / regex: a join or a leave is O(its own subscription)
        self._name_counts: Counter[str] = Counter()
        self._regex_counts: Counter[str] = Counter()
        self.target_computed_at: int | None = None          # clock time of the last target computation
        self.computing_epoch: int | None = None             # group epoch of an offloaded computation running
        self.dead = False
        # classic members: how many, and how many list each protocol name (JoinGroup's protocol check is O(1))
        self.num_classic_members = 0
        self.classic_protocol_counts: Counter[str] = Counter()
        # what changed since the group was last written to the store (consumer/records.py): member ids whose
        # row may differ, member ids removed; the subscription metadata last encoded (object, its JSON)
        self.changed: set[str] = set()
        self.removed: set[str] = set()
        self.stored_metadata: tuple[dict, str] | None = None

    # ------------------------------------------------------------------ reading

    def __repr__(self) -> str:
        return f"ConsumerGroup({self.group_id!r}, epoch={self.group_epoch}, members={len(self.members)})"

    @property
    def state_name(self) -> str:
        if self.dead:
            return "Dead"
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        return "Reconciling" if self.unsettled else "Stable"

    def _unsettled(self, member: ConsumerGroupMember) -> int:
        """1 when ``member`` has yet to reach the target (not STABLE, or STABLE at an older epoch), else 0."""
        a = member.assignment
        return 0 if a.state is MemberState.STABLE and a.member_epoch == self.assignment_epoch else 1

    def is_empty(self) -> bool:
        return not self.members

    def member_ids(self) -> Iterator[str]:
        return iter(self.members)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members[member_id]

    def partition_epoch(self, topic: UUID, partition: int) -> int:
        return self.partition_epochs.get((topic, partition), -1)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Kafka's ``waitingOnUnreleasedPartition``: the member (UNRELEASED_PARTITIONS) still waits for a target
        partition another member holds; False once every one it lacks is free (it may rejoin to get them)."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        assigned = member.assignment.assigned
        for topic, partitions in self.target.get(member.member_id, {}).items():
            held = assigned.get(topic, frozenset())
            for p in partitions:
                if p not in held and self.partition_epochs.get((topic, p), -1) != -1:
                    return True
        return False

    def subscribed_topics(self, member: ConsumerGroupMember) -> set[str]:
        """The topic names ``member`` subscribes to: its names plus its regex's current matches."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names |= self.regex_topics.get(member.subscribed_topic_regex, frozenset())
        return names

    def all_subscribed_topics(self) -> set[str]:
        """Every topic name some member subscribes to (by name or through its regex's matches);
        O(distinct names + regex matches), not O(members)."""
        topics = set(self._name_counts)
        for regex in self._regex_counts:
            topics |= self.regex_topics.get(regex, frozenset())
        return topics

    def regexes(self) -> set[str]:
        return set(self._regex_counts)

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Kafka's ``supportsClassicProtocols``: a classic member may join if its protocol type is ``consumer``
        and (the group being non-empty) it lists a protocol every classic member already in the group lists."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        return any(self.classic_protocol_counts.get(n, 0) == self.num_classic_members for n in names)

    def all_members_use_classic_except(self, member_ids: set[str]) -> bool:
        """Whether every member but ``member_ids`` (members of the group, each on the consumer protocol) is on
        the classic protocol: the downgrade condition."""
        leaving = [self.members[m] for m in member_ids if m in self.members]
        if any(m.uses_classic_protocol for m in leaving) or len(leaving) != len(member_ids):
            return False
        return self.num_classic_members == len(self.members) - len(leaving)

    def set_classic(self, member: ConsumerGroupMember, classic: ClassicMemberMetadata | None) -> None:
        """Change a member's classic metadata, keeping the classic counts right."""
        counted = self.members.get(member.member_id) is member
        if counted:
            self._count_classic(member, -1)
        self.changed.add(member.member_id)
        member.classic = classic
        if counted:
            self._count_classic(member, +1)

    def _count_classic(self, member: ConsumerGroupMember, delta: int) -> None:
        if member.classic is None:
            return
        self.num_classic_members += delta
        for name in {n for n, _ in member.classic.protocols}:
            self.classic_protocol_counts[name] += delta
            if self.classic_protocol_counts[name] <= 0:
                del self.classic_protocol_counts[name]

    def set_subscription(self, member: ConsumerGroupMember, names: tuple[str, ...] | None,
                         regex: str | None) -> None:
        """Change a member's subscription (None: unchanged; regex "" clears it), keeping the counts right."""
        counted = member.member_id in self.members and self.members[member.member_id] is member
        if counted:
            self._count(member, -1)
        self.changed.add(member.member_id)
        if names is not None:
            member.subscribed_topic_names = names
        if regex is not None:
            member.subscribed_topic_regex = regex or None
        if counted:
            self._count(member, +1)

    def _count(self, member: ConsumerGroupMember, delta: int) -> None:
        for name in member.subscribed_topic_names:
            self._name_counts[name] += delta
            if self._name_counts[name] <= 0:
                del self._name_counts[name]
        regex = member.subscribed_topic_regex
        if regex:
            self._regex_counts[regex] += delta
            if self._regex_counts[regex] <= 0:
                del self._regex_counts[regex]

    # ------------------------------------------------------------------ changes

    def add_member(self, member: ConsumerGroupMember) -> None:
        if member.member_id in self.members:
            raise IllegalGroupStateError(f"group {self.group_id}: member {member.member_id} already exists")
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._count(member, +1)
        self._count_classic(member, +1)
        self._hold(member.assignment, member.member_id)
        self.unsettled += self._unsettled(member)
        self.changed.add(member.member_id)

    def remove_member(self, member_id: str) -> ConsumerGroupMember:
        """Drop the member, its partitions' epochs and its target (the group epoch is the caller's)."""
        member = self.members.pop(member_id)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self._count(member, -1)
        self._count_classic(member, -1)
        self._release(member.assignment)
        self.target.pop(member_id, None)
        self.unsettled -= self._unsettled(member)
        self.changed.discard(member_id)
        self.removed.add(member_id)
        return member

    def replace_static_member(self, old: ConsumerGroupMember, new: ConsumerGroupMember) -> None:
        """A static member rejoining under a new member id takes over the old one's assignment and target."""
        self.members.pop(old.member_id)
        self._count(old, -1)
        self._count_classic(old, -1)
        self.unsettled -= self._unsettled(old)
        self.members[new.member_id] = new
        self._count(new, +1)
        self._count_classic(new, +1)
        self.unsettled += self._unsettled(new)
        assert new.instance_id is not None
        self.static_members[new.instance_id] = new.member_id
        if old.member_id in self.target:
            self.target[new.member_id] = self.target.pop(old.member_id)
        self.changed.discard(old.member_id)
        self.removed.add(old.member_id)
        self.changed.add(new.member_id)
        # same partitions, same epochs: the partition epochs stay as they are

    def update_assignment(self, member: ConsumerGroupMember, assignment: MemberAssignment) -> None:
        """Move ``member`` to ``assignment``, keeping the partition epochs exact."""
        self._release(member.assignment)
        try:
            self._hold(assignment, member.member_id)
        except IllegalGroupStateError:
            self._hold(member.assignment, member.member_id)
            raise
        self.unsettled -= self._unsettled(member)
        member.assignment = assignment
        self.unsettled += self._unsettled(member)
        self.changed.add(member.member_id)

    def bump_epoch(self) -> int:
        self.group_epoch += 1
        return self.group_epoch

    def set_target(self, epoch: int, target: dict[str, Assignment]) -> None:
        previous = self.target
        self.changed.update(m for m in self.members if previous.get(m) != target.get(m))
        self.target = target
        self.assignment_epoch = epoch
        self.unsettled = sum(self._unsettled(m) for m in self.members.values())

    def _hold(self, assignment: MemberAssignment, member_id: str) -> None:
        epochs = self.partition_epochs
        epoch = assignment.member_epoch
        taken = []
        for part in (assignment.assigned, assignment.pending_revocation):
            for topic, partitions in part.items():
                for p in partitions:
                    key = (topic, p)
                    if key in epochs:
                        for k in taken:
                            del epochs[k]
                        raise IllegalGroupStateError(
                            f"group {self.group_id}: partition {p} of topic {topic} given to member {member_id} "
                            f"while held at epoch {epochs[key]}")
                    epochs[key] = epoch
                    taken.append(key)

    def _release(self, assignment: MemberAssignment) -> None:
        epochs = self.partition_epochs
        for part in (assignment.assigned, assignment.pending_revocation):
            for topic, partitions in part.items():
                for p in partitions:
                    epochs.pop((topic, p), None)


def with_epoch_only(assignment: MemberAssignment, epoch: int) -> MemberAssignment:
    """The same partitions under another epoch (a static member's temporary leave: epoch -2)."""
    return replace(assignment, member_epoch=epoch, previous_member_epoch=assignment.member_epoch)
