"""Consumer groups (KIP-848) in the coordinator, on a ManualClock: join, reconcile (revoke before assign),
leave, session and rebalance timeouts, static membership, regex and metadata changes, the member checks of
offset commits, and one group-id namespace with classic groups.  Rules from Kafka's
GroupMetadataManagerTest (consumerGroupHeartbeat*) and KIP-848; each test asserts on what a client sees
(error codes, epochs, assignments) or what ConsumerGroupDescribe / ListGroups answer."""
from __future__ import annotations

import pytest

from kafkagroup.coordinator import (
    JoinGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetFetchRequest,
)
from kafkagroup.messages.consumer_api import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from kafkagroup.messages.error_codes import ErrorCode as E
from kafkagroup.messages.topics import topic_id_for

from tests.coordinator.consumer_helpers import Member, coordinator, needs_server_assignors, settle

T = topic_id_for


def owners(*members: Member, topic: str = "t") -> dict[int, list[str]]:
    held: dict[int, list[str]] = {}
    for m in members:
        for p in m.partitions(topic):
            held.setdefault(p, []).append(m.member_id)
    return held


def describe(coord, group="g"):
    return coord.consumer_group_describe(ConsumerGroupDescribeRequest([group])).groups[0]


@needs_server_assignors
def test_first_member_gets_every_partition_and_the_group_is_stable():
    coord, clock, _ = coordinator({"t": 4})
    a = Member(coord, "g", "A", topics=["t"])
    resp = a.heartbeat()
    assert resp.error_code == E.NONE and resp.member_epoch == 2 and resp.heartbeat_interval_ms == 5000
    assert a.partitions("t") == {0, 1, 2, 3}
    d = describe(coord)
    assert (d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == ("Stable", 2, 2, "uniform")
    assert [(tp.topic_name, tp.partitions) for tp in d.members[0].assignment] == [("t", [0, 1, 2, 3])]


@needs_server_assignors
def test_second_member_waits_for_the_revocation_and_no_partition_has_two_owners():
    coord, clock, _ = coordinator({"t": 4})
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    a.heartbeat()
    b.heartbeat()
    assert b.epoch == 3 and b.partitions("t") == set()           # everything still held by A: unreleased
    assert describe(coord).group_state == "Reconciling"
    a.heartbeat()                                                # told to revoke, keeps epoch 2
    assert a.epoch == 2 and len(a.partitions("t")) == 2
    assert all(len(v) == 1 for v in owners(a, b).values())
    a.heartbeat()                                                # acknowledges (owned shrank): epoch 3
    assert a.epoch == 3
    b.heartbeat()
    assert sorted(owners(a, b)) == [0, 1, 2, 3] and all(len(v) == 1 for v in owners(a, b).values())
    assert len(b.partitions("t")) == 2 and describe(coord).group_state == "Stable"


@needs_server_assignors
def test_leave_gives_the_partitions_to_the_others():
    coord, clock, _ = coordinator({"t": 3})
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    resp = b.leave()
    assert (resp.error_code, resp.member_epoch, resp.member_id) == (E.NONE, -1, "B")
    settle(a)
    assert a.partitions("t") == {0, 1, 2} and a.epoch == 4
    assert b.heartbeat(epoch=3).error_code == E.UNKNOWN_MEMBER_ID


@needs_server_assignors
def test_session_timeout_fences_a_silent_member():
    coord, clock, _ = coordinator({"t": 2}, group_consumer_session_timeout_ms=10_000,
                                    group_consumer_min_session_timeout_ms=10_000)
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    for _ in range(3):
        clock.advance(4_000)
        a.heartbeat()
    assert [m.member_id for m in describe(coord).members] == ["A"]
    settle(a)
    assert a.partitions("t") == {0, 1}
    assert b.heartbeat().error_code == E.UNKNOWN_MEMBER_ID


@needs_server_assignors
def test_rebalance_timeout_fences_a_member_that_never_revokes():
    coord, clock, _ = coordinator({"t": 2})
    a = Member(coord, "g", "A", topics=["t"], rebalance_timeout_ms=7_000)
    b = Member(coord, "g", "B", topics=["t"])
    a.heartbeat()
    b.heartbeat()
    a.heartbeat(owned={T("t"): {0, 1}})                          # told to revoke one partition
    for _ in range(4):
        clock.advance(2_000)
        a.heartbeat(owned={T("t"): {0, 1}})                      # ...but keeps reporting both
        b.heartbeat()
    assert a.last.error_code == E.UNKNOWN_MEMBER_ID              # fenced at 7 s
    settle(b)
    assert b.partitions("t") == {0, 1}


@needs_server_assignors
def test_epochs_from_the_future_and_the_past_are_fenced_but_a_lost_response_retry_is_not():
    coord, clock, _ = coordinator({"t": 2})
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    assert a.epoch == 3
    assert a.heartbeat(epoch=9).error_code == E.FENCED_MEMBER_EPOCH
    assert a.heartbeat(epoch=2, owned={T("t"): {0, 1}}).error_code == E.FENCED_MEMBER_EPOCH
    # the previous epoch with owned partitions within the assignment: the response was lost, answer again
    retry = a.heartbeat(epoch=2, owned={T("t"): a.partitions("t")}, full=True)
    assert (retry.error_code, retry.member_epoch) == (E.NONE, 3) and retry.assignment is not None


@needs_server_assignors
def test_static_member_restarts_under_a_new_member_id_and_keeps_its_partitions():
    coord, clock, _ = coordinator({"t": 4})
    a = Member(coord, "g", "A", topics=["t"], instance="i-a")
    b = Member(coord, "g", "B", topics=["t"], instance="i-b")
    settle(a, b)
    kept, epoch = a.partitions("t"), describe(coord).group_epoch
    assert a.leave(-2).member_epoch == -2
    assert [m.member_epoch for m in describe(coord).members if m.instance_id == "i-a"] == [-2]
    a2 = Member(coord, "g", "A2", topics=["t"], instance="i-a")
    a2.heartbeat()
    assert a2.partitions("t") == kept and describe(coord).group_epoch == epoch      # no rebalance
    assert {m.member_id for m in describe(coord).members} == {"A2", "B"}
    # the instance is held by a live member now: a third process with it is refused
    dup = Member(coord, "g", "A3", topics=["t"], instance="i-a").heartbeat()
    assert dup.error_code == E.UNRELEASED_INSTANCE_ID
    # the old member id is fenced by the new one
    assert a.heartbeat(epoch=a2.epoch).error_code == E.FENCED_INSTANCE_ID


@needs_server_assignors
def test_static_member_gone_beyond_the_session_is_removed():
    coord, clock, _ = coordinator({"t": 2}, group_consumer_session_timeout_ms=10_000,
                                    group_consumer_min_session_timeout_ms=10_000)
    a = Member(coord, "g", "A", topics=["t"], instance="i-a")
    b = Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    a.leave(-2)
    for _ in range(4):
        clock.advance(4_000)
        b.heartbeat()
    settle(b)
    assert b.partitions("t") == {0, 1} and [m.member_id for m in describe(coord).members] == ["B"]


@needs_server_assignors
def test_static_leave_for_an_unknown_instance_or_another_member_id():
    coord, clock, _ = coordinator({"t": 2})
    a = Member(coord, "g", "A", topics=["t"], instance="i-a")
    settle(a)
    unknown = coord.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest("g", "X", -2, instance_id="nope"))
    assert unknown.error_code == E.UNKNOWN_MEMBER_ID
    other = coord.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest("g", "X", -2, instance_id="i-a"))
    assert other.error_code == E.FENCED_INSTANCE_ID
    assert describe(coord).members[0].member_epoch == 2          # nothing changed


@pytest.mark.parametrize("request_, code, message", [
    (ConsumerGroupHeartbeatRequest("g", "", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"],
                                   topic_partitions=[]), E.INVALID_REQUEST, "MemberId can't be empty."),
    (ConsumerGroupHeartbeatRequest("g", "m", 0, subscribed_topic_names=["t"], topic_partitions=[]),
     E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."),
    (ConsumerGroupHeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, topic_partitions=[]),
     E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (ConsumerGroupHeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"]),
     E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."),
    (ConsumerGroupHeartbeatRequest("g", "m", -3), E.INVALID_REQUEST, "MemberEpoch is invalid."),
    (ConsumerGroupHeartbeatRequest("g", "m", -2), E.INVALID_REQUEST, "InstanceId can't be null."),
    (ConsumerGroupHeartbeatRequest("g", "m", 0, instance_id=" ", rebalance_timeout_ms=1,
                                   subscribed_topic_names=["t"], topic_partitions=[]),
     E.INVALID_REQUEST, "InstanceId can't be empty."),
    (ConsumerGroupHeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"],
                                   server_assignor="sticky", topic_partitions=[]),
     E.UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
    (ConsumerGroupHeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, subscribed_topic_regex="t(",
                                   topic_partitions=[]), E.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `t(`"),
    (ConsumerGroupHeartbeatRequest("g", "m", 3), E.GROUP_ID_NOT_FOUND, "Consumer group g not found."),
])
def test_bad_requests_get_kafkas_codes_and_leave_the_group_alone(request_, code, message):
    coord, clock, _ = coordinator({"t": 2})
    resp = coord.consumer_group_heartbeat(request_)
    assert resp.error_code == code and resp.error_message.startswith(message)
    assert coord.consumer_group("g") is None                     # no group created by a refused request


@needs_server_assignors
def test_unknown_member_and_empty_subscription():
    coord, clock, _ = coordinator({"t": 2})
    a = Member(coord, "g", "A", topics=["t"])
    settle(a)
    assert Member(coord, "g", "Z").heartbeat(epoch=1).error_code == E.UNKNOWN_MEMBER_ID
    empty = Member(coord, "g", "B", topics=[])
    assert empty.heartbeat().error_code == E.NONE and empty.partitions("t") == set()
    settle(a, empty)
    assert a.partitions("t") == {0, 1}


@needs_server_assignors
def test_regex_subscription_picks_up_a_topic_created_later_with_full_match():
    coord, clock, topics = coordinator({"orders-eu": 2, "xorders-us": 1})
    a = Member(coord, "g", "A", regex="orders-.*")
    settle(a)
    assert a.partitions("orders-eu") == {0, 1} and a.partitions("xorders-us") == set()   # full match only
    epoch = describe(coord).group_epoch
    topics.set("orders-us", 3)
    settle(a)
    assert a.partitions("orders-us") == {0, 1, 2} and describe(coord).group_epoch == epoch + 1


@needs_server_assignors
def test_partitions_added_and_topic_deleted_bump_the_group_epoch():
    coord, clock, topics = coordinator({"t": 2, "u": 1})
    a, b = Member(coord, "g", "A", topics=["t", "u"]), Member(coord, "g", "B", topics=["t", "u"])
    settle(a, b)
    epoch = describe(coord).group_epoch
    topics.set("t", 4)
    settle(a, b)
    assert sorted(owners(a, b)) == [0, 1, 2, 3] and describe(coord).group_epoch == epoch + 1
    topics.delete("u")
    settle(a, b)
    assert a.partitions("u") == b.partitions("u") == set() and describe(coord).group_epoch == epoch + 2


@needs_server_assignors
def test_subscription_change_moves_partitions():
    coord, clock, _ = coordinator({"t": 2, "u": 2})
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    b.topics = ["u"]
    b.heartbeat(full=True)
    settle(a, b)
    assert a.partitions("t") == {0, 1} and b.partitions("u") == {0, 1} and b.partitions("t") == set()


@needs_server_assignors
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_remote_assignor_is_the_members_choice(assignor):
    coord, clock, _ = coordinator({"t": 4, "u": 4})
    ms = [Member(coord, "g", f"M{i}", topics=["t", "u"], assignor=assignor) for i in range(2)]
    settle(*ms)
    assert describe(coord).assignor_name == assignor
    assert sorted(owners(*ms)) == [0, 1, 2, 3] and sorted(owners(*ms, topic="u")) == [0, 1, 2, 3]
    if assignor == "range":       # co-partitioned: the same partition numbers of t and u go together
        assert all(m.partitions("t") == m.partitions("u") for m in ms)


def _commit(group, member_id, epoch, version=9):
    return OffsetCommitRequest(group, epoch, member_id, topics=[OffsetCommitRequestTopic(
        "t", [OffsetCommitRequestPartition(0, 42)])], version=version)


@needs_server_assignors
def test_offset_commit_and_fetch_check_member_and_epoch():
    coord, clock, _ = coordinator({"t": 2})
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    code = lambda r: r.topics[0].partitions[0].error_code  # noqa: E731
    assert code(coord.offset_commit(_commit("g", "A", a.epoch))) == E.NONE
    assert code(coord.offset_commit(_commit("g", "A", a.epoch - 1))) == E.STALE_MEMBER_EPOCH
    assert code(coord.offset_commit(_commit("g", "nobody", 1))) == E.UNKNOWN_MEMBER_ID
    assert code(coord.offset_commit(_commit("g", "", -1))) == E.UNKNOWN_MEMBER_ID     # admin, non-empty group
    assert code(coord.offset_commit(_commit("g", "A", a.epoch, version=8))) == E.UNSUPPORTED_VERSION
    fetch = coord.offset_fetch(OffsetFetchRequest("g", None, member_id="A", member_epoch=a.epoch))
    assert fetch.error_code == E.NONE and fetch.topics[0].partitions[0].committed_offset == 42
    stale = coord.offset_fetch(OffsetFetchRequest("g", None, member_id="A", member_epoch=a.epoch + 5))
    assert stale.error_code == E.STALE_MEMBER_EPOCH
    assert coord.offset_fetch(OffsetFetchRequest("g", None)).error_code == E.NONE     # admin
    a.leave()
    b.leave()
    assert code(coord.offset_commit(_commit("g", "", -1))) == E.NONE                  # admin, empty group


@needs_server_assignors
def test_one_namespace_a_classic_join_is_let_in_and_empty_groups_change_kind_with_their_offsets():
    coord, clock, _ = coordinator({"t": 2})
    a = Member(coord, "g", "A", topics=["t"])
    settle(a)
    coord.offset_commit(_commit("g", "A", a.epoch))
    # a classic member may join a non-empty consumer group (Kafka 4.4: MEMBER_ID_REQUIRED first, mixed groups);
    # it never completes its join here, so the group stays as it is
    join = coord.join_group(JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=10_000))
    assert join.result().error_code == E.MEMBER_ID_REQUIRED
    listed = coord.list_groups(ListGroupsRequest([])).groups
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == [
        ("g", "consumer", "Stable", "consumer")]
    a.leave()
    # empty consumer group -> a classic join takes the id over, the committed offset stays
    join = coord.join_group(JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=10_000))
    assert join.result().error_code == E.MEMBER_ID_REQUIRED
    assert coord.offset_fetch(OffsetFetchRequest("g", None)).topics[0].partitions[0].committed_offset == 42
    assert coord.consumer_group_describe(ConsumerGroupDescribeRequest(["g"])).groups[0].error_code \
        == E.GROUP_ID_NOT_FOUND


def test_describe_unknown_group():
    coord, clock, _ = coordinator({"t": 2})
    d = describe(coord, "missing")
    assert (d.error_code, d.error_message) == (E.GROUP_ID_NOT_FOUND, "Group missing not found.")


@needs_server_assignors
def test_offsets_of_unsubscribed_topics_expire_and_an_empty_group_goes_with_its_last_offset():
    coord, clock, _ = coordinator({"t": 2, "u": 2}, offsets_retention_minutes=1)
    a = Member(coord, "g", "A", topics=["t"])
    settle(a)
    for topic in ("t", "u"):
        coord.offset_commit(OffsetCommitRequest("g", a.epoch, "A", topics=[OffsetCommitRequestTopic(
            topic, [OffsetCommitRequestPartition(0, 5)])], version=9))
    for _ in range(4):                                                   # a minute, A heartbeating
        clock.advance(15_000)
        a.heartbeat()
    assert coord.expire_offsets() == 1                                   # u: nobody subscribes to it
    fetched = coord.offset_fetch(OffsetFetchRequest("g", None)).topics
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in fetched] == [("t", [5])]
    a.leave()
    assert coord.expire_offsets() == 1 and coord.consumer_group("g") is None   # empty: t expires, group deleted
    assert coord.list_groups(ListGroupsRequest([])).groups == []


@needs_server_assignors
def test_target_assignments_are_batched_per_assignment_interval():
    coord, clock, _ = coordinator({"t": 4}, group_consumer_assignment_interval_ms=1_000)
    a, b, c = (Member(coord, "g", n, topics=["t"]) for n in "ABC")
    a.heartbeat()                                   # a new group: computed at once
    assert a.partitions("t") == {0, 1, 2, 3} and describe(coord).assignment_epoch == 2
    b.heartbeat()
    c.heartbeat()
    d = describe(coord)
    assert (d.group_state, d.group_epoch, d.assignment_epoch) == ("Assigning", 4, 2)
    assert b.epoch == c.epoch == 2 and b.partitions("t") == set()      # at the old target's epoch, nothing yet
    clock.advance(1_000)
    settle(a, b, c)
    d = describe(coord)
    assert (d.group_state, d.assignment_epoch) == ("Stable", 4)         # one computation for both joins
    assert sorted(len(m.partitions("t")) for m in (a, b, c)) == [1, 1, 2]


class Offload:
    """A target_offload that runs jobs when the test says (a worker thread, deterministically)."""

    def __init__(self) -> None:
        self.jobs: list = []

    def __call__(self, job, done) -> None:
        self.jobs.append((job, done))

    def finish(self) -> None:
        jobs, self.jobs = self.jobs, []
        for job, done in jobs:
            try:
                result = job()
            except Exception as exc:  # handed back as the worker thread would
                result = exc
            done(result)


@needs_server_assignors
def test_offloaded_target_applies_to_the_members_still_there_and_the_group_keeps_answering(monkeypatch):
    from kafkagroup.coordinator import GroupCoordinator, ManualClock
    from kafkagroup.coordinator.consumer import heartbeat
    from kafkagroup.messages.topics import StaticTopics
    monkeypatch.setattr(heartbeat, "INLINE_TARGET_COST", 0)     # as a group too large to assign on the loop
    offload, clock = Offload(), ManualClock()
    coord = GroupCoordinator({"group.consumer.assignment.interval.ms": 0}, clock=clock, store=":memory:",
                             topics=StaticTopics({"t": 4}), enable_offset_expiration=False, target_offload=offload)
    a, b, c = (Member(coord, "g", n, topics=["t"]) for n in "ABC")
    a.heartbeat()                                  # a new group's first target: computed at once
    assert a.partitions("t") == {0, 1, 2, 3} and not offload.jobs
    b.heartbeat()                                  # offloaded: B waits at the old target's epoch
    assert len(offload.jobs) == 1 and describe(coord).group_state == "Assigning" and b.partitions("t") == set()
    c.heartbeat()                                  # one computation at a time
    assert len(offload.jobs) == 1
    b.leave()                                      # leaves while its target is being computed
    offload.finish()
    d = describe(coord)
    assert d.assignment_epoch == 3 and "B" not in coord.consumer_group("g").target
    settle(a, c)                                   # the next heartbeat starts the computation for C's join
    offload.finish()
    settle(a, c)
    assert sorted(owners(a, c)) == [0, 1, 2, 3] and len(c.partitions("t")) == 2
    assert describe(coord).group_state == "Stable"
