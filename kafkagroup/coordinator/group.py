"""The classic group model: five states, members, the protocol vote and leader rules (spec §1, §4).

This module is pure bookkeeping (Kafka's ``GroupMetadata`` / ``ClassicGroup`` and ``MemberMetadata``); the
timers and request handling live in :mod:`~kafkagroup.coordinator.rebalance` and
:mod:`~kafkagroup.coordinator.membership`.  Every operation a request performs per member is O(1):
awaiting-join members are counted (not scanned), protocol support is a name -> count map, the static
``group.instance.id`` map and the pending sets are dicts.  Only whole-group events (join completion, the
vote, ``rebalance_timeout_ms``) walk the members.

Example (C79)::

    >>> g = ClassicGroup("g", now_ms=0)
    >>> g.add(ClassicGroupMember("m1", protocols=[("range", b""), ("roundrobin", b"")]))
    >>> g.add(ClassicGroupMember("m2", protocols=[("roundrobin", b""), ("blah", b"")]))
    >>> g.select_protocol(), g.leader_id
    ('roundrobin', 'm1')
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from kafkagroup.coordinator.errors import IllegalGroupStateError
from kafkagroup.coordinator.offset_state import GroupOffsets, OffsetAndMetadata
from kafkagroup.messages.api import JoinGroupResponseMember
from kafkagroup.coordinator.subscriptions import group_subscribed_topics
from kafkagroup.java_order import hashmap_spread, java_hashmap_order
from kafkagroup.structs import TopicPartition

if TYPE_CHECKING:  # pragma: no cover
    from kafkagroup.messages.deferred import Deferred
    from kafkagroup.messages.api import JoinGroupResponse, SyncGroupResponse

__all__ = ["GroupState", "ClassicGroupMember", "ClassicGroup", "OffsetAndMetadata"]


class GroupState(Enum):
    """The five states; ``value`` is Kafka's display name (DescribeGroups / ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


_S = GroupState
# target state -> states it may be entered from (GroupMetadata.scala, ClassicGroupState.java; spec §1.3)
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
}


class ClassicGroupMember:
    """One member (``MemberMetadata``): identity, timeouts, ordered protocols, assignment, parked responses."""

    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "session_timeout_ms", "protocol_type", "protocols", "assignment", "awaiting_join",
                 "awaiting_sync", "is_new", "session_deadline", "session_timer", "session_timer_deadline")

    def __init__(
        self,
        member_id: str,
        *,
        group_instance_id: str | None = None,
        client_id: str = "",
        client_host: str = "",
        rebalance_timeout_ms: int = 300_000,
        session_timeout_ms: int = 45_000,
        protocol_type: str = "consumer",
        protocols: Sequence[tuple[str, bytes]] = (),
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols: list[tuple[str, bytes]] = [(name, bytes(meta)) for name, meta in protocols]
        self.assignment = assignment
        self.awaiting_join: Deferred[JoinGroupResponse] | None = None
        self.awaiting_sync: Deferred[SyncGroupResponse] | None = None
        self.is_new = False
        # session timer (see rebalance.SessionTimers): the deadline, and the clock timer that checks it
        self.session_deadline: int | None = None
        self.session_timer: Any = None
        self.session_timer_deadline: int | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        """This member's metadata for ``protocol`` (IllegalGroupStateError if it does not list it)."""
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise IllegalGroupStateError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """Same protocol names in the same order with byte-identical metadata (``MemberMetadata.matches``)."""
        mine = self.protocols
        if len(protocols) != len(mine):
            return False
        return all(a[0] == b[0] and bytes(a[1]) == b[1] for a, b in zip(protocols, mine))

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalGroupStateError(f"member {self.member_id} does not support any of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session expiry spares this member: not new and parked in JoinGroup or SyncGroup (§1.2)."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None

    def __repr__(self) -> str:
        inst = f", instance={self.group_instance_id}" if self.group_instance_id is not None else ""
        return f"ClassicGroupMember({self.member_id}{inst})"


class ClassicGroup:
    """A classic group's state (``GroupMetadata``); mutate it only through these methods."""

    group_type = "classic"

    def __init__(self, group_id: str, *, now_ms: int, state: GroupState = GroupState.EMPTY,
                 offsets: GroupOffsets | None = None) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state: GroupState | None = None
        self.state_timestamp: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}            # group.instance.id -> member id
        self.pending_members: dict[str, Any] = {}            # member id -> its expiry timer handle
        self.pending_sync_members: set[str] = set()
        self.num_members_awaiting_join = 0
        self.supported_protocols: dict[str, int] = {}        # protocol name -> members listing it
        self._insertion_seq: dict[str, int] = {}             # member id -> insertion number (Java map order)
        self._insertions = 0
        self._java_capacity = 16                             # bucket count Java's members HashMap would have
        self.new_member_added = False
        self.join_timer: Any = None                          # the (initial) delayed join of the rebalance
        self.join_timer_initial = False                      # True while the initial delayed join runs
        self.sync_timer: Any = None                          # the pending-sync expiry
        # the group id's offsets (offset_state.GroupOffsets): held by reference, handed over on conversion
        self.offset_state = GroupOffsets() if offsets is None else offsets
        # consumer groups: the members' topics as of the last generation (or load), parsed on first use
        self._subscription_snapshot: tuple[str | None, str | None, list[bytes], bool] | None = None
        self._subscribed_topics: set[str] | None = None

    # ------------------------------------------------------------------ state

    @property
    def state_name(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return not self.members

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            allowed = ",".join(sorted(s.value for s in VALID_PREVIOUS_STATES[target]))
            raise IllegalGroupStateError(
                f"group {self.group_id} should be in one of the states {allowed} before moving to {target}; "
                f"it is in {self.state}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp = now_ms

    # ------------------------------------------------ offsets (the group id's, see offset_state)

    @property
    def offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.offset_state.committed

    @offsets.setter
    def offsets(self, value: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self.offset_state.committed = value

    @property
    def pending_txn_offsets(self) -> dict[int, dict[TopicPartition, OffsetAndMetadata]]:
        return self.offset_state.pending_txn_offsets

    @property
    def pending_txn_partitions(self) -> dict[TopicPartition, set[int]]:
        return self.offset_state.pending_txn_partitions

    def has_offsets(self) -> bool:
        """Committed or pending transactional offsets exist (``GroupMetadata.hasOffsets``)."""
        return self.offset_state.has_offsets()

    def add_pending_txn_offsets(self, producer_id: int,
                                offsets: Iterable[tuple[TopicPartition, OffsetAndMetadata]]) -> None:
        self.offset_state.add_pending_txn_offsets(producer_id, offsets)

    def take_pending_txn_offsets(self, producer_id: int) -> dict[TopicPartition, OffsetAndMetadata]:
        """Remove and return the producer's pending offsets (empty if none)."""
        return self.offset_state.take_pending_txn_offsets(producer_id)

    def drop_pending_txn_partition(self, tp: TopicPartition) -> None:
        """Forget every producer's pending offset of ``tp`` (an offset tombstone clears them, as in Kafka)."""
        self.offset_state.drop_pending_txn_partition(tp)

    # ---------------------------------------------------------------- members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: ClassicGroupMember, awaiting_join: "Deferred[JoinGroupResponse] | None" = None) -> None:
        """Add a member (``GroupMetadata.add``): the first member sets the protocol type, the first member of
        a leaderless group becomes leader."""
        if member.member_id in self.members:
            raise IllegalGroupStateError(f"member {member.member_id} is already in group {self.group_id}")
        instance = member.group_instance_id
        if instance is not None:
            if instance in self.static_members:
                raise IllegalGroupStateError(
                    f"static member with group.instance.id {instance} cannot be added to group {self.group_id} "
                    "since it is already a member")
            self.static_members[instance] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._note_insertion(member.member_id)
        self._count_protocols(member, +1)
        member.awaiting_join = awaiting_join
        if awaiting_join is not None:
            self.num_members_awaiting_join += 1
        timer = self.pending_members.pop(member.member_id, None)
        if timer is not None:
            timer.cancel()

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        """Remove a member, pending member or pending-sync entry (``GroupMetadata.remove``).

        A removed leader is replaced by the first remaining member in the Java ``HashMap`` iteration order
        of the members map (see :meth:`first_in_java_order`).  Returns the removed member; the caller
        handles its timers and responses.  A removed pending member's timer handle is cancelled here.
        """
        member = self.members.pop(member_id, None)
        if member is not None:
            del self._insertion_seq[member_id]
            self._count_protocols(member, -1)
            if member.awaiting_join is not None:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = self.first_in_java_order(self.members)
        timer = self.pending_members.pop(member_id, None)
        if timer is not None:
            timer.cancel()
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: ClassicGroupMember, protocols: Sequence[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      awaiting_join: "Deferred[JoinGroupResponse] | None") -> None:
        """Replace protocols and timeouts and park ``awaiting_join`` (a previously parked JoinGroup of the
        member is superseded: it is never answered, as in Kafka)."""
        self._count_protocols(member, -1)
        member.protocols = [(name, bytes(meta)) for name, meta in protocols]
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        previous = member.awaiting_join
        if awaiting_join is not None and previous is None:
            self.num_members_awaiting_join += 1
        elif awaiting_join is None and previous is not None:
            self.num_members_awaiting_join -= 1
        if previous is not None and previous is not awaiting_join:
            previous.mark_superseded()
        member.awaiting_join = awaiting_join

    def detach_join(self, member: ClassicGroupMember) -> "Deferred[JoinGroupResponse] | None":
        """Take the member's parked JoinGroup out of the group without answering it."""
        pending = member.awaiting_join
        if pending is not None:
            member.awaiting_join = None
            self.num_members_awaiting_join -= 1
        return pending

    def complete_join(self, member: ClassicGroupMember, response: "JoinGroupResponse") -> bool:
        """Answer the member's parked JoinGroup, if any (``maybeInvokeJoinCallback``)."""
        pending = self.detach_join(member)
        if pending is None:
            return False
        pending.set_result(response)
        return True

    def complete_sync(self, member: ClassicGroupMember, response: "SyncGroupResponse") -> bool:
        """Answer the member's parked SyncGroup, if any; True if one was answered."""
        pending = member.awaiting_sync
        if pending is None:
            return False
        member.awaiting_sync = None
        pending.set_result(response)
        return True

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str,
                              fence: "tuple[JoinGroupResponse, SyncGroupResponse] | None") -> ClassicGroupMember:
        """Give a static member a new member id, keeping everything else (``replaceStaticMember``).

        ``fence``: responses for the old id's parked JoinGroup / SyncGroup (FENCED_INSTANCE_ID), or None
        when reverting a replacement (nothing is parked on the new id then but its own JoinGroup, which the
        caller has already answered or will answer).
        """
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise IllegalGroupStateError(f"cannot replace non-existing member id {old_member_id}")
        if fence is not None:
            self.complete_join(member, fence[0])
            self.complete_sync(member, fence[1])
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self._insertion_seq.pop(old_member_id, None)
        self._note_insertion(new_member_id)
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:  # the new id owes the SyncGroup the old one owed
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id
        return member

    def _note_insertion(self, member_id: str) -> None:
        """Java ``HashMap.put``: a new key goes to its bucket's tail; the table doubles past 3/4 full."""
        self._insertions += 1
        self._insertion_seq[member_id] = self._insertions
        while len(self.members) > self._java_capacity * 3 // 4:
            self._java_capacity *= 2

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else elect the first member awaiting join; False if the group has
        no leader or nobody rejoined (``maybeElectNewJoinedLeader``)."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        joined = self.first_in_java_order(m for m, member in self.members.items() if member.awaiting_join is not None)
        if joined is None:
            return False
        self.leader_id = joined
        return True

    def first_in_java_order(self, member_ids: Iterable[str]) -> str | None:
        """The first of ``member_ids`` in the iteration order Java's ``HashMap`` of members would have.

        Kafka picks "the first member" of its members map when a leader must be replaced (spec §4.2: any
        choice is valid; the Java coordinator's is this one).  That order is a pure function of the map's
        history: ``put`` appends to bucket ``spread(hashCode) & (capacity - 1)``, the table starts at 16
        buckets and doubles when the size exceeds 3/4 of it, never shrinks, and a resize keeps the relative
        order inside a bucket -- so the order is (bucket, insertion sequence).  O(len(member_ids)), used
        only when a leader changes.  Limit: Java turns a bucket of 8+ keys in a 64+ table into a tree with
        a different order; member ids (UUID suffixes) do not collide like that.
        """
        mask = self._java_capacity - 1
        seq = self._insertion_seq
        best: tuple[int, int] | None = None
        chosen = None
        for member_id in member_ids:
            key = (hashmap_spread(member_id) & mask, seq[member_id])
            if best is None or key < best:
                best, chosen = key, member_id
        return chosen

    def rebalance_timeout_ms(self) -> int:
        """Max of the members' rebalance timeouts, 0 without members."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -------------------------------------------------------------- protocols

    def _count_protocols(self, member: ClassicGroupMember, delta: int) -> None:
        """Count each protocol *name* a member lists once, however often it lists it.

        A JoinGroup may name one protocol twice: Kafka's decoder keeps both entries (JoinGroupRequestData's
        protocols are an ``ImplicitLinkedHashMultiCollection``, which admits equal keys), and the member reads
        the first of them (``ClassicGroupMember.metadata`` / ``vote`` in Kafka's group-coordinator module
        iterate in request order), so ``metadata``, ``vote`` and ``matches`` here keep the list as sent.
        Kafka's ``ClassicGroup.incrementSupportedProtocols`` counts list entries, though: a name listed twice
        by a lone member counts 2 != 1 member, so no protocol is a candidate and the vote throws inside the
        join-completion timer (the Java runtime logs it and drops the timer: the group is wedged).  Counting
        names, as the "members listing it" meaning of the map requires, is where this deliberately differs.
        """
        counts = self.supported_protocols
        for name in dict.fromkeys(name for name, _ in member.protocols):
            n = counts.get(name, 0) + delta
            if n:
                counts[name] = n
            else:
                del counts[name]

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """The vote of spec §4.1: each member votes for its first protocol supported by all; most votes wins.

        Ties are unspecified by Kafka's tests; the Java coordinator returns the first maximal entry of its
        ``HashMap`` of votes, and so does this (range beats roundrobin and cooperative-sticky, sticky beats
        range, as a JDK does).  Limit: votes are merged in member insertion order, not in the Java order of
        the members map, which only matters when two tied protocol names share a hash bucket.
        """
        if not self.members:
            raise IllegalGroupStateError(f"cannot select protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        if len(votes) == 1:
            return next(iter(votes))
        most = max(votes.values())
        return next(name for name in java_hashmap_order(votes) if votes[name] == most)

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a joining member with this protocol type and protocol names is compatible (§2.2)."""
        names = list(names)
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        counts = self.supported_protocols
        return self.protocol_type == protocol_type and any(counts.get(name, 0) == n for name in names)

    def current_member_metadata(self) -> list[JoinGroupResponseMember]:
        """The leader's JoinGroup member list: (member id, group.instance.id, metadata for the selected
        protocol) of every member, in member-map order."""
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise IllegalGroupStateError(f"cannot obtain member metadata for group {self.group_id} in state {self.state}")
        protocol = self.protocol_name
        if protocol is None:
            raise IllegalGroupStateError(f"group {self.group_id} has no selected protocol")
        return [JoinGroupResponseMember(m.member_id, m.group_instance_id, m.metadata(protocol))
                for m in self.members.values()]

    def snapshot_subscriptions(self) -> None:
        """Record the members' metadata for the selected protocol (Kafka computes the subscribed topics at
        each new generation and at load).  Only references are kept here; the bytes are parsed the first
        time :attr:`subscribed_topics` is read (the retention task), keeping join completion O(members)."""
        protocol = self.protocol_name
        metadatas = [m.metadata(protocol) for m in self.members.values()] if protocol is not None else []
        self._subscription_snapshot = (self.protocol_type, protocol, metadatas, bool(self.members))
        self._subscribed_topics = None

    @property
    def subscribed_topics(self) -> set[str] | None:
        """Union of the members' subscribed topics (consumer groups; None when unknown, spec §3.9)."""
        snapshot = self._subscription_snapshot
        if snapshot is not None:
            self._subscribed_topics = group_subscribed_topics(*snapshot)
            self._subscription_snapshot = None
        return self._subscribed_topics

    def __repr__(self) -> str:
        return (f"ClassicGroup({self.group_id!r}, {self.state}, generation={self.generation_id}, "
                f"members={len(self.members)}, leader={self.leader_id})")
