"""OffsetCommit / OffsetFetch (C74-C77), offset retention (§3.9), describe/list/delete (§2.8)."""
from __future__ import annotations

import struct

from coord_harness import E, S, Harness, tie, hs  # noqa: F401 (fixtures)

from kafkagroup.coordinator import (
    DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)


def test_C74_offset_commits_without_group_management(hs: Harness) -> None:
    assert hs.commit({("topic", 0): 0}, member_id="memberId", generation=1) == {("topic", 0): E.ILLEGAL_GENERATION}
    assert hs.coord.group("groupId") is None
    fetched = hs.fetch(None)
    assert (fetched.error_code, fetched.topics) == (E.NONE, [])
    assert hs.commit({("topic", 0): 15, ("topic", 1): 16, ("other-topic", 0): 17}) == {
        ("topic", 0): E.NONE, ("topic", 1): E.NONE, ("other-topic", 0): E.NONE}
    g = hs.group
    assert g.state is S.EMPTY and g.protocol_type is None
    assert hs.commit({("topic", 0): 15}, instance="instance-id") == {("topic", 0): E.NONE}
    assert hs.commit({("topic", 0): 15}, member_id="unknown") == {("topic", 0): E.NONE}
    one = hs.fetch([("topic", 0)]).offsets()[("topic", 0)]
    assert (one.committed_offset, one.error_code) == (15, E.NONE)
    missing = hs.fetch([("topic", 9)]).offsets()[("topic", 9)]
    assert (missing.committed_offset, missing.metadata, missing.committed_leader_epoch, missing.error_code) == (
        -1, "", -1, E.NONE)
    everything = hs.fetch(None).offsets()
    assert {tp: p.committed_offset for tp, p in everything.items()} == {
        ("topic", 0): 15, ("topic", 1): 16, ("other-topic", 0): 17}


def test_offset_commit_member_validation_against_a_non_empty_group(hs: Harness) -> None:
    a = hs.fx_single()
    assert hs.commit({("t", 0): 1}) == {("t", 0): E.UNKNOWN_MEMBER_ID}               # only members commit
    assert hs.commit({("t", 0): 1}, member_id="x", generation=1) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert hs.commit({("t", 0): 1}, member_id=a, generation=7) == {("t", 0): E.ILLEGAL_GENERATION}
    assert hs.commit({("t", 0): 1}, member_id=a, generation=1) == {("t", 0): E.NONE}
    b_reply = hs.join_v3("")                                                          # PreparingRebalance
    assert hs.commit({("t", 0): 2}, member_id=a, generation=1) == {("t", 0): E.NONE}
    hs.join(a)                                                                        # -> CompletingRebalance
    assert b_reply.result().generation_id == 2
    assert hs.commit({("t", 0): 3}, member_id=a, generation=2) == {("t", 0): E.REBALANCE_IN_PROGRESS}
    assert hs.fetch([("t", 0)]).offsets()[("t", 0)].committed_offset == 2


def test_C76_offset_metadata_longer_than_the_limit(hs: Harness) -> None:
    big, ok = "s" * 4097, "ok"
    assert hs.commit({("foo", 0): (37, big), ("foo", 1): (38, ok)}) == {
        ("foo", 0): E.OFFSET_METADATA_TOO_LARGE, ("foo", 1): E.NONE}
    fetched = hs.fetch([("foo", 0), ("foo", 1)]).offsets()
    assert fetched[("foo", 0)].committed_offset == -1
    assert (fetched[("foo", 1)].committed_offset, fetched[("foo", 1)].metadata) == (38, "ok")
    assert hs.commit({("foo", 2): (39, "s" * 4096)}) == {("foo", 2): E.NONE}
    # Java counts UTF-16 code units: 2049 emoji are 4098 units
    assert hs.commit({("foo", 3): (40, "😀" * 2049)}) == {("foo", 3): E.OFFSET_METADATA_TOO_LARGE}
    assert hs.commit({("foo", 3): (40, "😀" * 2048)}) == {("foo", 3): E.NONE}


def test_null_metadata_is_stored_as_empty(hs: Harness) -> None:
    req = OffsetCommitRequest("groupId", topics=[OffsetCommitRequestTopic("t", [
        OffsetCommitRequestPartition(0, 5, 3, None)])])
    assert hs.coord.offset_commit(req).errors() == {("t", 0): E.NONE}
    got = hs.fetch([("t", 0)]).offsets()[("t", 0)]
    assert (got.committed_offset, got.committed_leader_epoch, got.metadata) == (5, 3, "")


def test_C77_empty_group_id_is_accepted_for_offsets(hs: Harness) -> None:
    assert hs.coord.partition_for("") == 0
    assert hs.commit({("topic", 0): 0}, group="") == {("topic", 0): E.NONE}
    got = hs.fetch([("topic", 0)], group="").offsets()[("topic", 0)]
    assert (got.error_code, got.committed_offset) == (E.NONE, 0)
    described = hs.coord.describe_groups(DescribeGroupsRequest([""])).groups[0]
    assert (described.error_code, described.group_state) == (E.NONE, "Empty")
    deleted = hs.coord.delete_groups(DeleteGroupsRequest([""])).results[0]
    assert (deleted.group_id, deleted.error_code) == ("", E.NONE)
    assert hs.fetch([("topic", 0)], group="").offsets()[("topic", 0)].committed_offset == -1
    assert hs.join("", group="").result().error_code == E.INVALID_GROUP_ID


def test_offset_write_failure_leaves_nothing_behind(hs: Harness) -> None:
    assert hs.commit({("t", 0): 1, ("t", 1): 1}) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    cases = {E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE, E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
             E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE, E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
             E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR, E.MESSAGE_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
             E.RECORD_LIST_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE, E.INVALID_FETCH_SIZE: E.INVALID_COMMIT_OFFSET_SIZE,
             E.NETWORK_EXCEPTION: E.COORDINATOR_LOAD_IN_PROGRESS, E.REQUEST_TIMED_OUT: E.REQUEST_TIMED_OUT}
    for append_error, response_error in cases.items():
        hs.coord.store.inject_failure(append_error, kind="offsets")
        got = hs.commit({("t", 0): 99, ("t", 1): (99, "s" * 5000), ("t", 2): 99})
        assert got == {("t", 0): response_error, ("t", 1): E.OFFSET_METADATA_TOO_LARGE, ("t", 2): response_error}
        fetched = hs.fetch(None).offsets()
        assert {tp: p.committed_offset for tp, p in fetched.items()} == {("t", 0): 1, ("t", 1): 1}
        stored = hs.coord.store.load_partition(0).offsets["groupId"]
        assert {tp: o.committed_offset for tp, o in stored.items()} == {("t", 0): 1, ("t", 1): 1}


# ------------------------------------------------------------------------------------------ retention §3.9

def _subscription(*topics: str) -> bytes:
    """ConsumerProtocol Subscription v0 bytes: version, topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)


def test_retention_of_a_simple_group_uses_the_commit_timestamp() -> None:
    h = Harness("S", **{"offsets.retention.minutes": 1})
    h.commit({("t", 0): 1})
    h.advance(30_000)
    h.commit({("t", 1): 1})
    h.advance(30_000 - 1)
    assert h.coord.expire_offsets() == 0
    h.advance(1)
    assert h.coord.expire_offsets() == 1
    assert set(h.fetch(None).offsets()) == {("t", 1)}
    h.advance(30_000)
    assert h.coord.expire_offsets() == 1
    assert h.coord.group("groupId") is None                  # Empty, no offsets: Dead and removed
    assert h.coord.store.load_partition(0).offsets == {}


def test_retention_of_an_empty_consumer_group_counts_from_when_it_became_empty() -> None:
    h = Harness("S", **{"offsets.retention.minutes": 1})
    a = h.fx_single()
    h.commit({("t", 0): 1}, member_id=a, generation=1)
    h.advance(1000)                                          # A's session expired: Empty since t=1050
    assert h.group.state is S.EMPTY and h.group.state_timestamp == 1050   # (timers see the advanced clock)
    h.advance(59_999)
    assert h.coord.expire_offsets() == 0
    h.advance(1)
    assert h.coord.expire_offsets() == 1
    assert h.coord.group("groupId") is None


def test_retention_empty_group_waits_for_the_retention_after_becoming_empty() -> None:
    h2 = Harness("S", **{"offsets.retention.minutes": 1})
    a = h2.fx_single()
    h2.commit({("t", 0): 1}, member_id=a, generation=1)
    for _ in range(4):                                       # stay Stable for 100 s with heartbeats
        h2.advance(400)
        assert h2.heartbeat(a, 1) == E.NONE
    assert h2.leave(a).members[0].error_code == E.NONE       # Empty from now on
    became_empty = h2.now
    h2.advance(59_999)
    assert h2.coord.expire_offsets() == 0
    h2.advance(1)
    assert h2.now - became_empty == 60_000 and h2.coord.expire_offsets() == 1


def test_retention_of_a_stable_consumer_group_spares_subscribed_topics() -> None:
    h = Harness("S", **{"offsets.retention.minutes": 1})
    sub = [("range", _subscription("t"))]
    a, reply = h.two_step_join(protocols=sub, session=100_000)
    h.advance(50)
    assert reply.result().generation_id == 1
    assert h.sync(a, 1, [(a, b"")]).result().error_code == E.NONE
    assert h.group.subscribed_topics == {"t"}
    h.commit({("t", 0): 1, ("old", 0): 1}, member_id=a, generation=1)
    h.advance(60_000)
    assert h.coord.expire_offsets() == 1
    assert set(h.fetch(None).offsets()) == {("t", 0)}
    # unparsable subscriptions: nothing expires in Stable
    h3 = Harness("S", **{"offsets.retention.minutes": 1})
    a3 = h3.fx_single()
    h3.commit({("old", 0): 1}, member_id=a3, generation=1)
    h3.advance(400)
    assert h3.heartbeat(a3, 1) == E.NONE
    assert h3.group.subscribed_topics is None


def test_retention_nothing_expires_while_rebalancing() -> None:
    h = Harness("S", **{"offsets.retention.minutes": 1})
    sub = [("range", _subscription("t"))]
    a, reply = h.two_step_join(protocols=sub, session=600_000, rebalance=600_000)
    h.advance(50)
    reply.result()
    h.commit({("old", 0): 1}, member_id=a, generation=1)
    assert h.group.state is S.COMPLETING_REBALANCE
    h.advance(60_000)
    assert h.coord.expire_offsets() == 0


def test_explicit_retention_time_expires_at_the_expire_timestamp() -> None:
    h = Harness("S", **{"offsets.retention.minutes": 100})
    h.commit({("t", 0): 1}, retention_time_ms=1000)
    h.advance(999)
    assert h.coord.expire_offsets() == 0
    h.advance(1)
    assert h.coord.expire_offsets() == 1


def test_periodic_retention_task_runs_on_the_clock() -> None:
    from kafkagroup.coordinator import GroupCoordinator, ManualClock
    clock = ManualClock()
    coord = GroupCoordinator({"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000},
                             clock=clock, store=":memory:")
    coord.offset_commit(OffsetCommitRequest.of("g", {("t", 0): 1}))
    for _ in range(59):
        clock.advance(1000)   # checks at t=1000 ... 59000
    assert coord.group("g") is not None
    clock.advance(1000)       # the check at t=60000 finds the offset 60000 ms old
    assert coord.group("g") is None


# ------------------------------------------------------------------------------- Describe / List / Delete

def test_describe_list_delete(hs: Harness) -> None:
    unknown = hs.coord.describe_groups(DescribeGroupsRequest(["nope"])).groups[0]
    assert (unknown.error_code, unknown.group_state, unknown.members) == (E.NONE, "Dead", [])
    a = hs.fx_single()
    d = hs.coord.describe_groups(DescribeGroupsRequest(["groupId"])).groups[0]
    assert (d.group_state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.member_assignment, m.client_id) for m in d.members] == [(a, b"A", "client")]
    assert hs.coord.delete_groups(DeleteGroupsRequest(["groupId"])).results[0].error_code == E.NON_EMPTY_GROUP
    hs.join_v3("")
    d = hs.coord.describe_groups(DescribeGroupsRequest(["groupId"])).groups[0]
    assert (d.group_state, d.protocol_data) == ("PreparingRebalance", "")
    # No metadata outside Stable, but the current assignment (Kafka 4 answers so; the spec said empty).
    assert all(m.member_metadata == b"" for m in d.members)
    assert {m.member_id: m.member_assignment for m in d.members}.get(a) == b"A"
    listed = hs.coord.list_groups(ListGroupsRequest(["preparingrebalance"]))
    assert [(g.group_id, g.group_state, g.protocol_type) for g in listed.groups] == [
        ("groupId", "PreparingRebalance", "consumer")]
    assert hs.coord.list_groups(ListGroupsRequest(["Stable"])).groups == []
    other = hs.coord.describe_groups(DescribeGroupsRequest(["otherGroup"])).groups[0]
    assert other.error_code == E.NOT_COORDINATOR
    results = hs.coord.delete_groups(DeleteGroupsRequest(["missing", "otherGroup"])).results
    assert [(r.group_id, r.error_code) for r in results] == [("missing", E.GROUP_ID_NOT_FOUND),
                                                            ("otherGroup", E.NOT_COORDINATOR)]


def test_delete_group_write_failure_keeps_the_group(hs: Harness) -> None:
    hs.commit({("t", 0): 1})
    hs.coord.store.inject_failure(E.NOT_LEADER_OR_FOLLOWER)
    assert hs.coord.delete_groups(DeleteGroupsRequest(["groupId"])).results[0].error_code == E.NOT_COORDINATOR
    assert hs.group.state is S.EMPTY and hs.fetch([("t", 0)]).offsets()[("t", 0)].committed_offset == 1
    assert hs.coord.delete_groups(DeleteGroupsRequest(["groupId"])).results[0].error_code == E.NONE
    assert hs.coord.store.load_partition(0).offsets == {}
