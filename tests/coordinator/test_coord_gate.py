"""Coordinator lookup and the gate of §2.1 (C01, C02), partition_for (§5)."""
from __future__ import annotations

from coord_harness import E, Harness
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkagroup.coordinator import (
    DeleteGroupsRequest, DescribeGroupsRequest, JoinGroupRequest, ListGroupsRequest, OffsetFetchRequest,
)
from kafkagroup.coordinator.partitioning import kafka_abs, partition_for
from kafkagroup.java_order import java_string_hash


def test_C01_requests_for_a_group_on_a_partition_not_owned_get_not_coordinator() -> None:
    h = Harness("S")
    assert h.coord.partition_for("otherGroup") == 1 and h.coord.owned_partitions == {0}
    assert h.join("", group="otherGroup").result().error_code == E.NOT_COORDINATOR
    assert h.join("", group="otherGroup", instance="groupInstanceId").result().error_code == E.NOT_COORDINATOR
    assert h.heartbeat("memberId", -1, group="otherGroup") == E.NOT_COORDINATOR
    assert h.sync("memberId", 1, group="otherGroup").result().error_code == E.NOT_COORDINATOR
    leave = h.leave("", group="otherGroup")
    assert (leave.error_code, leave.members) == (E.NOT_COORDINATOR, [])
    fetch = h.fetch([("topic", 0)], group="otherGroup")
    assert (fetch.error_code, fetch.topics) == (E.NOT_COORDINATOR, [])
    assert h.coord.group("otherGroup") is None


def test_C02_requests_while_the_partition_is_loading() -> None:
    h = Harness("S")
    h.coord.load_partition(1, defer=True)
    assert h.coord.loading_partitions == {1}
    assert h.join("", group="otherGroup").result().error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.join("", group="otherGroup", instance="groupInstanceId").result().error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.sync("memberId", 1, group="otherGroup").result().error_code == E.REBALANCE_IN_PROGRESS
    assert h.commit({("foo", 0): 15}, member_id="memberId", generation=1, group="otherGroup") == {
        ("foo", 0): E.COORDINATOR_LOAD_IN_PROGRESS}
    assert h.heartbeat("memberId", 1, group="otherGroup") == E.NONE
    described = h.coord.describe_groups(DescribeGroupsRequest(["otherGroup"])).groups[0]
    assert described.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coord.list_groups(ListGroupsRequest()).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    deleted = h.coord.delete_groups(DeleteGroupsRequest(["otherGroup"])).results[0]
    assert deleted.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    h.coord.complete_loading(1)
    assert h.join("", group="otherGroup").result().error_code == E.MEMBER_ID_REQUIRED
    assert h.coord.list_groups().error_code == E.NONE


def test_gate_invalid_group_id_precedes_everything() -> None:
    h = Harness("S")
    assert h.join("", group="").result().error_code == E.INVALID_GROUP_ID
    assert h.sync("m", 1, group="").result().error_code == E.INVALID_GROUP_ID
    assert h.heartbeat("m", 1, group="") == E.INVALID_GROUP_ID
    assert h.leave("m", group="").error_code == E.INVALID_GROUP_ID
    # the empty id is valid for OffsetCommit/OffsetFetch/Describe/Delete (partition 0 is owned)
    assert h.fetch([("t", 0)], group="").error_code == E.NONE
    # None is never valid, even for an offsets request
    assert h.coord.offset_fetch(OffsetFetchRequest(None, None)).error_code == E.INVALID_GROUP_ID  # type: ignore[arg-type]


def test_gate_session_timeout_bounds_are_inclusive_and_checked_after_the_partition() -> None:
    h = Harness("S")
    assert h.join("", session=9).result().error_code == E.INVALID_SESSION_TIMEOUT
    assert h.join("", session=600_001).result().error_code == E.INVALID_SESSION_TIMEOUT
    r = h.join("m", session=9).result()
    assert (r.error_code, r.member_id) == (E.INVALID_SESSION_TIMEOUT, "m")  # member id echoed
    assert h.join("", session=10).result().error_code == E.MEMBER_ID_REQUIRED
    assert h.join("", session=600_000).result().error_code == E.MEMBER_ID_REQUIRED
    # Scala order: 16 before 26
    assert h.join("", group="otherGroup", session=1).result().error_code == E.NOT_COORDINATOR


def test_gate_after_shutdown_answers_coordinator_not_available() -> None:
    h = Harness("S")
    h.fx_single()
    h.coord.shutdown()
    assert h.join("").result().error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.heartbeat("m", 1) == E.COORDINATOR_NOT_AVAILABLE
    assert h.coord.list_groups().error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.join("", group="").result().error_code == E.INVALID_GROUP_ID  # 24 before 15 (Scala)


def test_unload_answers_parked_requests_with_not_coordinator() -> None:
    h = Harness("S")
    a = h.fx_single()
    b_reply = h.join_v3("")       # PreparingRebalance: B parked
    assert not b_reply.done()
    h.coord.unload_partition(0)
    r = b_reply.result()
    assert r.error_code == E.NOT_COORDINATOR and r.member_id != ""
    assert h.coord.group("groupId") is None
    assert h.heartbeat(a, 1) == E.NOT_COORDINATOR
    h.advance(10_000)             # no timer of the unloaded group may act
    assert h.coord.group("groupId") is None


# ------------------------------------------------------------------------------------- partition_for §5

SPEC_TABLE = [
    ("my-group", -1906497762, 12, 0), ("test-group", 627841412, 12, 0),
    ("console-consumer-12345", 158455506, 6, 0), ("groupId", 293428218, 18, 0), ("otherGroup", -204443313, 13, 1),
    ("group-id", 506313513, 13, 1), ("consumer-group-1", 147483020, 20, 0), ("", 0, 0, 0),
    ("polygenelubricants", -2147483648, 0, 0), ("grüppe-é", 243490992, 42, 0), ("😀emoji", -1233692477, 27, 1),
]


def test_partition_for_matches_the_spec_table() -> None:
    for group_id, hashcode, p50, p2 in SPEC_TABLE:
        assert java_string_hash(group_id) == hashcode, group_id
        assert partition_for(group_id) == p50, group_id
        assert partition_for(group_id, 2) == p2, group_id
    assert kafka_abs(-(2 ** 31)) == 0 and kafka_abs(-5) == 5


def _reference_hashcode(s: str) -> int:
    """The spec's reference: UTF-16-BE code units, 32-bit wrap-around."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


@settings(max_examples=500, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=1000))
def test_partition_for_equals_the_java_reference(group_id: str, n: int) -> None:
    h = _reference_hashcode(group_id)
    assert java_string_hash(group_id) == h
    expected = (0 if h == -(2 ** 31) else abs(h)) % n
    assert partition_for(group_id, n) == expected
    assert 0 <= partition_for(group_id, n) < n


def test_coordinator_routes_by_partition_for() -> None:
    h = Harness("J", **{"offsets.topic.num.partitions": 50}, owned=[12])
    assert h.coord.join_group(JoinGroupRequest("my-group", session_timeout_ms=500, protocols=[("range", b"")])).result() \
        .error_code == E.MEMBER_ID_REQUIRED
    assert h.coord.join_group(JoinGroupRequest("groupId", session_timeout_ms=500, protocols=[("range", b"")])).result() \
        .error_code == E.NOT_COORDINATOR


def test_coordinator_implements_the_published_api() -> None:
    from kafkagroup.coordinator import GroupCoordinatorAPI
    from kafkagroup.coordinator.aio import AsyncGroupCoordinator
    h = Harness("S")
    assert isinstance(h.coord, GroupCoordinatorAPI)
    for name in ("join_group", "sync_group", "heartbeat", "leave_group", "offset_commit", "offset_fetch",
                 "describe_groups", "list_groups", "delete_groups"):
        assert callable(getattr(AsyncGroupCoordinator, name))


def test_malformed_join_request_objects_fail_loudly() -> None:
    import pytest

    from kafkagroup.errors import InvalidGroupError
    h = Harness("S")
    with pytest.raises(InvalidGroupError, match=r"protocol #0 must be \(name: str, metadata: bytes\)"):
        h.coord.join_group(JoinGroupRequest("groupId", protocols=[("range", "not-bytes")], session_timeout_ms=500))
    with pytest.raises(InvalidGroupError, match="member 'm1'"):
        h.coord.join_group(JoinGroupRequest("groupId", "m1", protocols=["range"], session_timeout_ms=500))


def test_malformed_sync_assignments_fail_loudly() -> None:
    import pytest

    from kafkagroup.errors import InvalidGroupError
    h = Harness("S")
    with pytest.raises(InvalidGroupError, match=r"assignment #1 must be \(member_id: str, assignment: bytes\)"):
        h.sync("m", 1, [("a", b""), ("b", "text")])
    a, reply = h.two_step_join()
    h.advance(50)
    assert h.sync(a, 1, {a: bytearray(b"x")}).result().assignment == b"x"   # a Mapping is accepted
