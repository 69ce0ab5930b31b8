"""Mixed groups (issue 23): classic members inside consumer groups, online upgrade and downgrade under
``group.consumer.migration.policy``, on a ManualClock.  Rules from Kafka's GroupMetadataManager
(classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
classicGroupLeaveToConsumerGroup, validateOnlineUpgrade/Downgrade, convertToConsumerGroup/ClassicGroup) and its
tests (testUpgradeFromClassicGroup*, testDowngrade*, testClassicGroupJoinToConsumerGroup*...).  Each test
drives clients as real ones behave (an eager member revokes everything before it rejoins, a cooperative one
reports what it owns) and asserts on what they observe; every step checks that no partition has two owners."""
from __future__ import annotations

import pytest

from kafkagroup.coordinator import (
    CoordinatorConfig,
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic, SyncGroupRequest,
)
from kafkagroup.messages.api import MemberIdentity
from kafkagroup.messages.consumer_api import MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER, ConsumerGroupDescribeRequest
from kafkagroup.messages.error_codes import ErrorCode as E
from kafkagroup.protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription,
)
from kafkagroup.structs import TopicPartition

from tests.coordinator.consumer_helpers import Member, coordinator, needs_server_assignors

pytestmark = needs_server_assignors


class Classic:
    """A classic consumer as the coordinator sees it: member id, generation, what it owns (topic, partition)."""

    def __init__(self, coord, group: str, name: str, topics: list[str], *, cooperative: bool = True,
                 version: int = 3, instance: str | None = None, session_ms: int = 10_000,
                 rebalance_ms: int = 30_000, protocol: str | None = None) -> None:
        self.coord, self.group, self.name, self.topics = coord, group, name, topics
        self.cooperative, self.version, self.instance = cooperative, version, instance
        self.session_ms, self.rebalance_ms = session_ms, rebalance_ms
        self.protocol = protocol or ("cooperative-sticky" if cooperative else "range")
        self.member_id, self.generation = "", -1
        self.owned: set[tuple[str, int]] = set()
        self.joined = None
        self.joined_only = False                       # joined, SyncGroup not sent yet (drive's two steps)
        self.assignment_version = None

    def metadata(self) -> bytes:
        owned = [TopicPartition(t, p) for t, p in sorted(self.owned)] if self.cooperative else []
        return encode_subscription(Subscription(self.topics, owned_partitions=owned, generation_id=self.generation),
                                   self.version)

    def join(self):
        """JoinGroup (a second one with the member id when asked for it); the Deferred."""
        if not self.cooperative:
            self.owned = set()                   # eager: revoke everything before joining
        def ask():
            return self.coord.join_group(JoinGroupRequest(
                self.group, member_id=self.member_id, group_instance_id=self.instance,
                protocols=[(self.protocol, self.metadata())], session_timeout_ms=self.session_ms,
                rebalance_timeout_ms=self.rebalance_ms, client_id=self.name))
        reply = ask()
        if reply.done() and reply.result().error_code == E.MEMBER_ID_REQUIRED:
            self.member_id = reply.result().member_id
            reply = ask()
        return reply

    def took(self, joined) -> None:
        assert joined.error_code == E.NONE, joined
        self.joined = joined
        self.member_id, self.generation = joined.member_id, joined.generation_id

    def sync(self, assignments=()):
        resp = self.coord.sync_group(SyncGroupRequest(self.group, self.generation, self.member_id,
                                                      group_instance_id=self.instance, protocol_type="consumer",
                                                      protocol_name=self.joined.protocol_name,
                                                      assignments=assignments))
        return resp

    def apply(self, synced) -> None:
        assert synced.error_code == E.NONE, synced
        self.assignment_version = int.from_bytes(synced.assignment[:2], "big")
        self.owned = {(tp.topic, tp.partition) for tp in decode_assignment(synced.assignment).partitions}

    def heartbeat(self) -> E:
        return self.coord.heartbeat(HeartbeatRequest(self.group, self.generation, self.member_id,
                                                     self.instance)).error_code

    def rejoin(self) -> E:
        """The whole cycle inside a consumer group (answered at once): join, sync, take the assignment."""
        reply = self.join()
        assert reply.done()
        joined = reply.result()
        if joined.error_code != E.NONE:
            return joined.error_code
        self.took(joined)
        assert joined.leader == "" and joined.members == []
        synced = self.sync().result()
        if synced.error_code == E.NONE:
            self.apply(synced)
        return synced.error_code

    def leave(self):
        return self.coord.leave_group(LeaveGroupRequest(self.group, [MemberIdentity(self.member_id,
                                                                                     self.instance)]))

    def partitions(self, topic: str = "t") -> set[int]:
        return {p for t, p in self.owned if t == topic}


def classic_group(coord, clock, members: list[Classic], partitions: int, topic: str = "t") -> None:
    """A Stable classic group: everyone joins, the first is leader and assigns round robin."""
    replies = [m.join() for m in members]
    clock.advance(10)
    for m, r in zip(members, replies):
        m.took(r.result())
    leader = next(m for m in members if m.joined.leader == m.member_id)
    plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    ids = sorted(plan)
    for p in range(partitions):
        plan[ids[p % len(ids)]].append(TopicPartition(topic, p))
    pending = {}
    for m in members:
        if m is leader:
            continue
        pending[m.name] = m.sync()
    done = leader.sync([(mid, encode_assignment(Assignment(tps))) for mid, tps in plan.items()])
    leader.apply(done.result())
    for m in members:
        if m is not leader:
            m.apply(pending[m.name].result())


def owners(classics: list[Classic], consumers: list[Member], topic: str = "t") -> dict[int, list[str]]:
    held: dict[int, list[str]] = {}
    for c in classics:
        for p in c.partitions(topic):
            held.setdefault(p, []).append(c.name)
    for m in consumers:
        for p in m.partitions(topic):
            held.setdefault(p, []).append(m.member_id)
    return held


def no_two_owners(classics, consumers, topic="t") -> dict[int, list[str]]:
    held = owners(classics, consumers, topic)
    assert all(len(v) == 1 for v in held.values()), held
    return held


def drive(classics: list[Classic], consumers: list[Member], rounds: int = 8) -> None:
    """Each round: every consumer-protocol member heartbeats, every classic member heartbeats and rejoins
    when told to; ownership is checked after every step."""
    for _ in range(rounds):
        for m in consumers:
            if m.heartbeat().error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH):   # fenced: all lost
                m.owned, m.epoch = {}, 0
            no_two_owners(classics, consumers)
        for c in classics:
            if c.joined_only:                          # the SyncGroup follows the JoinGroup a step later:
                c.joined_only = False                  # the others heartbeat in between, as on a network
                synced = c.sync().result()
                if synced.error_code == E.NONE:
                    c.apply(synced)
                no_two_owners(classics, consumers)
                continue
            error = c.heartbeat()
            if error == E.UNKNOWN_MEMBER_ID:                                     # fenced: all lost, join anew
                c.owned, c.member_id, c.generation = set(), "", -1
            if error in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):  # as clients do
                joined = c.join().result()
                if joined.error_code == E.NONE:
                    c.took(joined)
                    c.joined_only = True
            no_two_owners(classics, consumers)


def describe(coord, group="g"):
    return coord.consumer_group_describe(ConsumerGroupDescribeRequest([group])).groups[0]


def upgraded(partitions=6, **config):
    """A classic group of A and B (cooperative) upgraded by consumer-protocol member C, settled."""
    coord, clock, view = coordinator({"t": partitions}, group_initial_rebalance_delay_ms=0, **config)
    a, b = Classic(coord, "g", "A", ["t"]), Classic(coord, "g", "B", ["t"])
    classic_group(coord, clock, [a, b], partitions)
    c = Member(coord, "g", "C", topics=["t"])
    return coord, clock, a, b, c


# ============================================================================ upgrade


def test_a_consumer_protocol_join_upgrades_a_classic_group_and_everyone_ends_with_a_share():
    coord, clock, a, b, c = upgraded()
    generation = a.generation
    resp = c.heartbeat()
    assert resp.error_code == E.NONE and coord.group("g") is None and coord.consumer_group("g") is not None
    d = describe(coord)
    assert d.group_epoch == generation + 1
    types = {m.member_id: m.member_type for m in d.members}
    assert types == {a.member_id: MEMBER_TYPE_CLASSIC, b.member_id: MEMBER_TYPE_CLASSIC, "C": MEMBER_TYPE_CONSUMER}
    assert c.partitions("t") == set()                   # everything is still held by A and B: unreleased
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS     # the group epoch moved past theirs: rejoin
    drive([a, b], [c])
    held = no_two_owners([a, b], [c])
    assert sorted(held) == list(range(6))
    assert sorted(len(x.partitions()) for x in (a, b)) + [len(c.partitions("t"))] == [2, 2, 2]
    assert describe(coord).group_state == "Stable"
    assert a.heartbeat() == E.NONE and b.heartbeat() == E.NONE


def test_upgrade_answers_parked_joins_rebalance_in_progress():
    coord, clock, a, b, c = upgraded()
    parked = b.join()                                    # B rejoins: the classic group prepares a rebalance
    assert not parked.done()
    assert c.heartbeat().error_code == E.NONE
    assert parked.result().error_code == E.REBALANCE_IN_PROGRESS
    drive([a, b], [c])
    assert sorted(no_two_owners([a, b], [c])) == list(range(6))


def test_upgrade_keeps_the_classic_members_session_timeouts():
    coord, clock, a, b, c = upgraded()
    c.heartbeat()
    clock.advance(9_000)
    c.heartbeat()
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS     # A keeps its session; B says nothing
    clock.advance(1_500)                                 # B's 10 s session is over, A's is not
    ids = {m.member_id for m in describe(coord).members}
    assert ids == {a.member_id, "C"}


@pytest.mark.parametrize("policy", ["downgrade", "disabled", "DISABLED"])
def test_a_policy_without_upgrade_refuses_the_consumer_protocol_member(policy):
    coord, clock, a, b, c = upgraded(group_consumer_migration_policy=policy)
    resp = c.heartbeat()
    assert (resp.error_code, resp.error_message) == (
        E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group because online upgrade is disabled.")
    assert coord.consumer_group("g") is None and str(coord.group("g").state) == "Stable"
    assert a.heartbeat() == E.NONE and b.heartbeat() == E.NONE
    later = c.heartbeat(epoch=3)                          # not a join: no conversion is even tried
    assert (later.error_code, later.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")


def test_upgrade_refused_when_the_classic_group_is_over_the_consumer_group_size():
    coord, clock, a, b, c = upgraded(group_consumer_max_size=1)
    resp = c.heartbeat()
    assert (resp.error_code, resp.error_message) == (
        E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group because the group size exceeds the "
                              "consumer group maximum size.")
    assert coord.group("g") is not None


def test_upgrade_refused_when_an_assignment_carries_a_custom_assignors_user_data():
    coord, clock, _ = coordinator({"t": 2}, group_initial_rebalance_delay_ms=0)
    x = Classic(coord, "g", "X", ["t"])
    reply = x.join()
    clock.advance(10)
    x.took(reply.result())
    x.sync([(x.member_id, encode_assignment(Assignment([TopicPartition("t", 0)], user_data=b"mine")))]).result()
    resp = Member(coord, "g", "C", topics=["t"]).heartbeat()
    assert resp.error_code == E.GROUP_ID_NOT_FOUND and "unsupported custom assignor" in resp.error_message


def test_a_member_without_an_assignment_yet_owns_nothing_after_the_upgrade():
    coord, clock, a, b, c = upgraded()
    late = Classic(coord, "g", "L", ["t"])
    parked = late.join()                                 # joins the classic group: a rebalance starts
    assert not parked.done()
    assert c.heartbeat().error_code == E.NONE           # upgraded with L owning nothing
    assert parked.result().error_code == E.REBALANCE_IN_PROGRESS
    drive([a, b, late], [c])
    assert sorted(no_two_owners([a, b, late], [c])) == list(range(6))


def test_upgrade_refused_when_a_member_metadata_is_not_consumer_protocol_bytes():
    coord, clock, _ = coordinator({"t": 2}, group_initial_rebalance_delay_ms=0)
    x = Classic(coord, "g", "X", ["t"])
    x.metadata = lambda: b"\x00\x03junk"                  # protocol type consumer, bytes that do not decode
    replies = [x.join()]
    clock.advance(10)
    x.took(replies[0].result())
    x.sync([(x.member_id, encode_assignment(Assignment([TopicPartition("t", 0)])))]).result()
    resp = Member(coord, "g", "C", topics=["t"]).heartbeat()
    assert resp.error_code == E.GROUP_ID_NOT_FOUND and "malformed" in resp.error_message
    assert str(coord.group("g").state) == "Stable"


# ================================================================ classic members inside


def test_classic_members_join_a_consumer_group_without_a_leader_and_get_the_coordinators_assignment():
    coord, clock, _ = coordinator({"t": 4})
    c = Member(coord, "g", "C", topics=["t"])
    c.heartbeat()
    eager = Classic(coord, "g", "E", ["t"], cooperative=False, version=0)
    first = eager.coord.join_group(JoinGroupRequest("g", protocols=[("range", eager.metadata())],
                                                    session_timeout_ms=10_000))
    assert first.result().error_code == E.MEMBER_ID_REQUIRED
    assert eager.rejoin() == E.NONE
    assert eager.joined.protocol_name == "range" and eager.joined.protocol_type == "consumer"
    assert eager.assignment_version == 0                 # the ConsumerProtocol version it advertised
    drive([eager], [c])
    assert sorted(no_two_owners([eager], [c])) == [0, 1, 2, 3]
    assert len(eager.partitions()) == 2 and len(c.partitions("t")) == 2
    v3 = Classic(coord, "g", "V", ["t"], cooperative=False, version=3)
    assert v3.rejoin() == E.NONE and v3.assignment_version == 3


def test_classic_member_checks_generation_member_kind_and_protocol():
    coord, clock, _ = coordinator({"t": 4})
    c = Member(coord, "g", "C", topics=["t"])
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"])
    k.rejoin()
    assert coord.heartbeat(HeartbeatRequest("g", k.generation + 1, k.member_id)).error_code == E.ILLEGAL_GENERATION
    assert coord.heartbeat(HeartbeatRequest("g", c.epoch, "C")).error_code == E.UNKNOWN_MEMBER_ID
    assert coord.heartbeat(HeartbeatRequest("g", 1, "nobody")).error_code == E.UNKNOWN_MEMBER_ID
    wrong = coord.sync_group(SyncGroupRequest("g", k.generation, k.member_id, protocol_type="consumer",
                                              protocol_name="range")).result()
    assert wrong.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    other = coord.join_group(JoinGroupRequest("g", member_id="", protocols=[("range", k.metadata())],
                                              session_timeout_ms=10_000, version=3)).result()
    assert other.error_code == E.INCONSISTENT_GROUP_PROTOCOL        # shares no protocol with K
    # Kafka 4.4: LeaveGroup may name any member (an admin's removal); the others are fenced together and,
    # the last consumer-protocol member gone, the group is classic again
    left = coord.leave_group(LeaveGroupRequest("g", [MemberIdentity("nobody"), MemberIdentity("C")]))
    assert [(m.member_id, m.error_code) for m in left.members] == [("nobody", E.UNKNOWN_MEMBER_ID), ("C", E.NONE)]
    assert coord.consumer_group("g") is None and set(coord.group("g").members) == {k.member_id}


def test_group_size_limit_applies_to_classic_joins_but_not_to_a_known_instance():
    coord, clock, _ = coordinator({"t": 4}, group_consumer_max_size=1)
    c = Member(coord, "g", "C", topics=["t"], instance="i1")
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"])
    assert k.join().result().error_code == E.GROUP_MAX_SIZE_REACHED
    s = Classic(coord, "g", "S", ["t"], instance="i1")     # the instance restarts on the classic protocol
    assert s.join().result().error_code == E.NONE


def test_a_classic_member_that_does_not_rejoin_or_sync_in_time_is_fenced():
    coord, clock, _ = coordinator({"t": 4})
    c = Member(coord, "g", "C", topics=["t"], rebalance_timeout_ms=60_000)
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"], session_ms=50_000, rebalance_ms=20_000)
    k.rejoin()
    Member(coord, "g", "D", topics=["t"]).heartbeat()    # epoch moves: K is told to rejoin
    c.heartbeat()
    assert k.heartbeat() == E.REBALANCE_IN_PROGRESS
    clock.advance(15_000)
    c.heartbeat()
    assert k.heartbeat() == E.REBALANCE_IN_PROGRESS      # the join deadline is not pushed back
    clock.advance(6_000)
    assert k.member_id not in {m.member_id for m in describe(coord).members}
    # a member that joins but never syncs: fenced after its rebalance timeout
    s = Classic(coord, "g", "S", ["t"], session_ms=50_000, rebalance_ms=20_000)
    reply = s.join()
    s.took(reply.result())
    clock.advance(20_001)
    assert s.member_id not in {m.member_id for m in describe(coord).members}


def test_offset_commits_are_checked_per_member_kind():
    coord, clock, _ = coordinator({"t": 4})
    c = Member(coord, "g", "C", topics=["t"])
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"])
    k.rejoin()

    def commit(member_id, generation, version):
        return coord.offset_commit(OffsetCommitRequest(
            "g", generation, member_id, topics=[OffsetCommitRequestTopic("t", [OffsetCommitRequestPartition(0, 5)])],
            version=version)).topics[0].partitions[0].error_code

    assert commit(k.member_id, k.generation, 8) == E.NONE               # classic: any version
    assert commit(k.member_id, k.generation + 1, 8) == E.ILLEGAL_GENERATION
    assert commit("C", c.epoch, 8) == E.UNSUPPORTED_VERSION              # consumer protocol: v9+
    assert commit("C", c.epoch + 1, 9) == E.STALE_MEMBER_EPOCH


# ============================================================================ downgrade


def test_the_last_consumer_protocol_member_leaving_downgrades_and_the_classic_members_take_everything():
    coord, clock, a, b, c = upgraded()
    c.heartbeat()
    drive([a, b], [c])
    epoch = describe(coord).group_epoch
    c.leave()
    c.owned = {}
    group = coord.group("g")
    assert coord.consumer_group("g") is None and group is not None
    assert str(group.state) == "PreparingRebalance" and group.generation_id == epoch
    assert group.protocol_name == "cooperative-sticky" and group.protocol_type == "consumer"
    # the classic members find the rebalance and join the classic group: the leader assigns as before
    assert a.heartbeat() in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION)
    replies = [a.join(), b.join()]
    clock.advance(10)
    for m, r in zip((a, b), replies):
        m.took(r.result())
    leader = a if a.joined.leader == a.member_id else b
    assert {m.member_id for m in leader.joined.members} == {a.member_id, b.member_id}
    # the leader's members' metadata carries what each owns: nothing is held by two
    no_two_owners([a, b], [])
    plan = {a.member_id: [TopicPartition("t", p) for p in range(3)],
            b.member_id: [TopicPartition("t", p) for p in range(3, 6)]}
    follower = b if leader is a else a
    pending = follower.sync()
    leader.apply(leader.sync([(m, encode_assignment(Assignment(tps))) for m, tps in plan.items()]).result())
    follower.apply(pending.result())
    assert sorted(no_two_owners([a, b], [])) == list(range(6))


def test_fencing_the_last_consumer_protocol_member_downgrades():
    coord, clock, a, b, c = upgraded()
    c.heartbeat()
    drive([a, b], [c])
    waited = 0
    while coord.consumer_group("g") is not None:           # A and B stay alive, C goes silent
        assert a.heartbeat() == E.NONE and b.heartbeat() == E.NONE
        clock.advance(9_000)
        waited += 9_000
    assert waited == 45_000                                # group.consumer.session.timeout.ms
    assert str(coord.group("g").state) == "PreparingRebalance"
    assert set(coord.group("g").members) == {a.member_id, b.member_id}
    assert a.heartbeat() in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION)


def test_policy_disabled_refuses_classic_members_in_a_consumer_group():
    coord, clock, _ = coordinator({"t": 4}, group_consumer_migration_policy="disabled")
    Member(coord, "g", "C", topics=["t"]).heartbeat()
    resp = Classic(coord, "g", "K", ["t"]).join().result()
    assert (resp.error_code, resp.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


def test_a_policy_without_downgrade_keeps_a_consumer_group_of_classic_members():
    coord, clock, _ = coordinator({"t": 4}, group_consumer_migration_policy="upgrade")
    c = Member(coord, "g", "C", topics=["t"])
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"])
    k.rejoin()
    drive([k], [c])
    c.leave()
    c.owned = {}
    assert coord.group("g") is None and coord.consumer_group("g") is not None
    # Kafka 4.4: a classic heartbeat compares the member's epoch with the target's and computes no target, so
    # the group stays Assigning and K keeps its share (C's partitions stay unowned) until a member joins
    share = set(k.partitions())
    drive([k], [])
    assert k.partitions() == share and len(share) == 2
    d = describe(coord)
    assert d.group_state == "Assigning" and [m.member_type for m in d.members] == [MEMBER_TYPE_CLASSIC]
    j = Classic(coord, "g", "J", ["t"])
    j.rejoin()
    drive([k, j], [])
    assert sorted(no_two_owners([k, j], [])) == [0, 1, 2, 3] and describe(coord).group_state == "Stable"


def test_downgrade_refused_above_the_classic_group_size():
    coord, clock, _ = coordinator({"t": 4}, group_max_size=1)
    c = Member(coord, "g", "C", topics=["t"])
    c.heartbeat()
    k1, k2 = Classic(coord, "g", "K1", ["t"]), Classic(coord, "g", "K2", ["t"])
    k1.rejoin()
    k2.rejoin()
    c.leave()
    assert coord.consumer_group("g") is not None


def test_a_classic_static_member_replacing_the_last_consumer_protocol_member_downgrades_without_rebalance():
    coord, clock, _ = coordinator({"t": 4})
    c = Member(coord, "g", "C", topics=["t"], instance="i1")
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"])
    k.rejoin()
    drive([k], [c])
    held_by_c = c.partitions("t")
    assert len(held_by_c) == 2
    # the instance restarts on the classic protocol (C's process is gone: nothing owned)
    s = Classic(coord, "g", "S", ["t"], instance="i1")
    joined = s.join().result()
    assert joined.error_code == E.NONE
    s.took(joined)
    group = coord.group("g")
    assert coord.consumer_group("g") is None and str(group.state) == "Stable"
    s.apply(s.sync().result())
    assert s.partitions() == held_by_c
    assert k.heartbeat() == E.NONE


def test_the_migration_policy_is_checked_and_case_insensitive():
    assert CoordinatorConfig.from_mapping({"group.consumer.migration.policy": "Upgrade"}) \
        .group_consumer_migration_policy == "upgrade"
    assert CoordinatorConfig().group_consumer_migration_policy == "bidirectional"          # Kafka's default
    with pytest.raises(ValueError, match="group.consumer.migration.policy must be one of bidirectional, upgrade, "
                                         "downgrade, disabled, got 'sideways'"):
        CoordinatorConfig.from_mapping({"group.consumer.migration.policy": "sideways"})


def test_a_downgraded_group_is_written_and_a_restarted_coordinator_brings_it_back(tmp_path):
    from kafkagroup.coordinator import GroupCoordinator, ManualClock
    from kafkagroup.messages.topics import StaticTopics

    path = str(tmp_path / "groups.db")
    clock = ManualClock()
    coord = GroupCoordinator({"group_consumer_assignment_interval_ms": 0}, clock=clock, store=path,
                             topics=StaticTopics({"t": 4}), enable_offset_expiration=False)
    c = Member(coord, "g", "C", topics=["t"], instance="i1")
    c.heartbeat()
    k = Classic(coord, "g", "K", ["t"])
    k.rejoin()
    drive([k], [c])
    s = Classic(coord, "g", "S", ["t"], instance="i1")
    s.took(s.join().result())                           # replaces C: the group is classic, Stable, no rebalance
    assert str(coord.group("g").state) == "Stable"
    coord.shutdown()
    again = GroupCoordinator({}, clock=clock, store=path, enable_offset_expiration=False)
    group = again.group("g")
    assert group is not None and set(group.members) == {k.member_id, s.member_id}
    assert group.protocol_name == "cooperative-sticky"
    again.shutdown()


@pytest.mark.parametrize("seed", range(6))
def test_seeded_churn_of_classic_and_consumer_protocol_members_never_gives_a_partition_two_owners(seed):
    """Members of both protocols join, leave and crash at random (policy ``upgrade``: the group stays a
    consumer group); after every step no live member holds a partition another live member holds, and once
    the churn stops every partition ends with exactly one owner."""
    import random

    rng = random.Random(seed)
    coord, clock, _ = coordinator({"t": 8}, group_consumer_migration_policy="upgrade")
    classics: list[Classic] = []
    consumers: list[Member] = [Member(coord, "g", "C0", topics=["t"])]
    consumers[0].heartbeat()
    names = iter(range(1, 1000))
    for _ in range(40):
        op = rng.random()
        if op < 0.25 and len(classics) + len(consumers) < 6:
            n = next(names)
            if rng.random() < 0.5:
                classics.append(Classic(coord, "g", f"K{n}", ["t"], cooperative=rng.random() < 0.5,
                                        protocol="range"))
            else:
                consumers.append(Member(coord, "g", f"C{n}", topics=["t"]))
        elif op < 0.4 and classics:
            k = classics.pop(rng.randrange(len(classics)))
            if k.member_id:
                k.leave()
        elif op < 0.5 and len(consumers) > 1:
            c = consumers.pop(rng.randrange(len(consumers)))
            c.leave()
        elif op < 0.55 and classics:                   # a crash: it holds nothing from now on, says nothing
            classics.pop(rng.randrange(len(classics)))
        drive(classics, consumers, rounds=1)
        clock.advance(rng.choice([100, 1_000, 5_000]))
        no_two_owners(classics, consumers)
    for _ in range(60):                                # crashed members' sessions run out; the others beat
        clock.advance(1_000)
        drive(classics, consumers, rounds=1)
    held = no_two_owners(classics, consumers)
    assert sorted(held) == list(range(8)), (held, describe(coord))


def test_an_upgraded_group_is_written_without_members_so_a_restart_does_not_bring_back_the_classic_group(tmp_path):
    from kafkagroup.coordinator import GroupCoordinator, ManualClock
    from kafkagroup.messages.topics import StaticTopics

    path = str(tmp_path / "groups.db")
    clock = ManualClock()
    coord = GroupCoordinator({"group_consumer_assignment_interval_ms": 0, "group_initial_rebalance_delay_ms": 0},
                             clock=clock, store=path, topics=StaticTopics({"t": 4}), enable_offset_expiration=False)
    k = Classic(coord, "g", "K", ["t"])
    classic_group(coord, clock, [k], 4)
    assert str(coord.group("g").state) == "Stable"
    c = Member(coord, "g", "C", topics=["t"])
    assert c.heartbeat().error_code == E.NONE           # the upgrade
    assert coord.consumer_group("g") is not None
    coord.shutdown()
    again = GroupCoordinator({}, clock=clock, store=path, topics=StaticTopics({"t": 4}),
                             enable_offset_expiration=False)
    group = again.group("g")
    assert group is None or not group.members            # not K's classic group of before the upgrade
    fresh = Member(again, "g", "C2", topics=["t"])
    assert fresh.heartbeat().error_code == E.NONE        # an empty group changes kind under any policy
    assert again.consumer_group("g") is not None


def test_a_classic_member_joining_a_consumer_group_gets_its_id_from_the_coordinators_factory():
    """A simulation passes a deterministic member-id factory; classic members that join a consumer group took
    random UUIDs instead, so which member got which range changed from run to run."""
    from kafkagroup.coordinator import GroupCoordinator, ManualClock
    from kafkagroup.messages.topics import StaticTopics

    ids = iter(range(1, 100))
    coord = GroupCoordinator({"group_consumer_assignment_interval_ms": 0}, clock=ManualClock(), store=":memory:",
                             topics=StaticTopics({"t": 4}), enable_offset_expiration=False,
                             member_id_factory=lambda prefix: f"{prefix}-{next(ids):03d}")
    assert Member(coord, "g", "C", topics=["t"]).heartbeat().error_code == E.NONE
    k = Classic(coord, "g", "K", ["t"])
    assert k.rejoin() == E.NONE
    assert k.member_id == "member-001"
