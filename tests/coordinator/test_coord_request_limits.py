"""Requests carrying values Kafka's wire format cannot carry (kafkagroup.coordinator.request_limits).

In Kafka such a request cannot be serialized by a client, and bytes that do not parse never reach the
coordinator (``RequestContext.parseRequest`` -> ``InvalidRequestException``).  The coordinator answers them
INVALID_REQUEST (42) in the request's response shape, never raises, never creates a group, and leaves the
store exactly as it was -- earlier acknowledged commits included, after a restart.
"""
from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from coord_harness import E, S, Harness

from kafkagroup.coordinator import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, MemberIdentity, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest, TransactionResult, TxnOffsetCommitRequest,
)
from kafkagroup.coordinator.request_limits import MAX_STRING_BYTES
from kafkagroup.errors import InvalidGroupError
from kafkagroup.structs import TopicPartition

G = "groupId"                       # offsets-topic partition 0 of the harness's 2
LONE = "\ud800"                     # a lone high surrogate: not encodable as UTF-8
I32_MAX, I64_MAX, I16_MAX = 2**31 - 1, 2**63 - 1, 2**15 - 1
I32_MIN, I64_MIN, I16_MIN = -(2**31), -(2**63), -(2**15)


def store_rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, read with a separate connection (what a restart would see)."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}


@pytest.fixture
def durable(tmp_path: Path) -> tuple[Harness, Path]:
    """A harness on a file store holding one acknowledged commit (t-0 = 5, t-1 = 6) of the Empty group G."""
    path = tmp_path / "groups.sqlite"
    h = Harness("S", store=str(path))
    assert h.commit({("t", 0): 5, ("t", 1): (6, "meta")}) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    return h, path


def restarted(h: Harness, path: Path) -> Harness:
    h.coord.shutdown()
    return Harness("S", store=str(path), clock=h.clock)


def assert_intact(h: Harness, path: Path, before: dict[str, list[tuple]]) -> None:
    """Nothing was written, and a restarted coordinator answers the earlier commit."""
    assert store_rows(path) == before
    again = restarted(h, path)
    got = {tp: (p.committed_offset, p.metadata, p.error_code) for tp, p in again.fetch().offsets().items()}
    assert got == {TopicPartition("t", 0): (5, "", E.NONE), TopicPartition("t", 1): (6, "meta", E.NONE)}
    again.coord.shutdown()


def commit(h: Harness, partitions: list[tuple[str, int, int, str | None]], *, group: str = G,
           generation: int = -1, member_id: str = "", instance: str | None = None,
           retention: int = -1) -> dict[TopicPartition, E]:
    """OffsetCommit of (topic, partition, offset, metadata) rows, built field by field (no ``of`` helper, so
    any value reaches the coordinator as given)."""
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for topic, index, offset, metadata in partitions:
        topics.setdefault(topic, []).append(OffsetCommitRequestPartition(index, offset, -1, metadata))
    req = OffsetCommitRequest(group, generation, member_id, instance, retention,
                              [OffsetCommitRequestTopic(t, ps) for t, ps in topics.items()],
                              version=8 if retention == -1 else 4)   # only v2-v4 carry a retention time
    return h.coord.offset_commit(req).errors()


# ------------------------------------------------------------------------------ OffsetCommit cases


@pytest.mark.parametrize("label, rows", [
    ("offset 2**63", [("t", 0, 2**63, "")]),
    ("offset 2**64 + 7", [("t", 0, 2**64 + 7, "")]),
    ("offset below int64 (negative overflow)", [("t", 0, I64_MIN - 1, "")]),
    ("partition 2**31", [("t", 2**31, 1, "")]),
    ("partition 2**40", [("t", 2**40, 1, "")]),
    ("partition below int32", [("t", I32_MIN - 1, 1, "")]),
    ("lone surrogate in topic", [("t" + LONE, 0, 1, "")]),
    ("lone surrogate in metadata", [("t", 0, 1, "m" + LONE)]),
    ("low surrogate alone in metadata", [("t", 0, 1, "\udc00")]),
    ("metadata over 32767 UTF-8 bytes", [("t", 0, 1, "é" * 16_384)]),
    ("topic over 32767 bytes", [("x" * (MAX_STRING_BYTES + 1), 0, 1, "")]),
])
def test_offset_commit_out_of_range_is_42_for_every_partition_and_writes_nothing(
        durable: tuple[Harness, Path], label: str, rows: list) -> None:
    h, path = durable
    before = store_rows(path)
    # good partitions before and after the bad one: the whole request is refused, none of them is written
    request_rows = [("t", 0, 100, "new"), *rows, ("u", 3, 300, "")]
    got = commit(h, request_rows)
    assert set(got.values()) == {E.INVALID_REQUEST}, label
    assert len(got) == len({(r[0], r[1]) for r in request_rows})
    assert {tp: o.committed_offset for tp, o in h.group.offsets.items()} == {
        TopicPartition("t", 0): 5, TopicPartition("t", 1): 6}
    assert_intact(h, path, before)


@pytest.mark.parametrize("field, value", [
    ("group", "g" + LONE), ("group", "x" * (MAX_STRING_BYTES + 1)), ("member_id", LONE),
    ("instance", "i" + LONE), ("generation", 2**31), ("generation", I32_MIN - 1),
    ("retention", 2**63), ("retention", I64_MIN - 1),
])
def test_offset_commit_request_level_field_out_of_range(durable: tuple[Harness, Path], field: str,
                                                        value: Any) -> None:
    h, path = durable
    before = store_rows(path)
    kw: dict[str, Any] = {"group": G}
    kw.update({field: value})
    assert set(commit(h, [("t", 0, 100, "")], **kw).values()) == {E.INVALID_REQUEST}
    assert set(h.coord.groups) == {G}     # no group was created for a refused request
    assert_intact(h, path, before)


def test_offset_commit_limits_are_inclusive(tmp_path: Path) -> None:
    """The extreme values of each field are valid Kafka values: stored and read back after a restart."""
    path = tmp_path / "edge.sqlite"
    # offset.metadata.max.bytes raised so that the longest wire string gets past OFFSET_METADATA_TOO_LARGE
    h = Harness("S", store=str(path), **{"offset.metadata.max.bytes": 40_000})
    edge_metadata = "é" * (MAX_STRING_BYTES // 2) + "x"            # exactly 32767 UTF-8 bytes
    rows = [("t", I32_MAX, I64_MAX, ""), ("t", 0, I64_MIN, None), ("t", 1, 7, edge_metadata),
            ("😀" * (MAX_STRING_BYTES // 4), 2, 8, "")]
    assert set(commit(h, rows, retention=I64_MAX - 10**6).values()) == {E.NONE}
    h.coord.shutdown()
    again = Harness("S", store=str(path), clock=h.clock, **{"offset.metadata.max.bytes": 40_000})
    got = {tp: (p.committed_offset, p.metadata) for tp, p in again.fetch().offsets().items()}
    assert got == {TopicPartition("t", I32_MAX): (I64_MAX, ""), TopicPartition("t", 0): (I64_MIN, ""),
                   TopicPartition("t", 1): (7, edge_metadata),
                   TopicPartition("😀" * (MAX_STRING_BYTES // 4), 2): (8, "")}
    again.coord.shutdown()


def test_retention_near_int64_max_saturates_instead_of_overflowing(tmp_path: Path) -> None:
    """now + retention_time_ms can pass 2**63 - 1 although both are valid: the expiry saturates (Kafka's Java
    long wraps negative and expires the offset at the next retention run; SQLite would refuse the value)."""
    path = tmp_path / "r.sqlite"
    h = Harness("S", store=str(path))
    h.advance(1_000)
    assert commit(h, [("t", 0, 5, "")], retention=I64_MAX) == {TopicPartition("t", 0): E.NONE}
    assert h.group.offsets[TopicPartition("t", 0)].expire_timestamp == I64_MAX
    assert h.coord.expire_offsets() == 0
    again = restarted(h, path)
    assert again.group.offsets[TopicPartition("t", 0)].committed_offset == 5
    again.coord.shutdown()


def test_refusal_is_logged_naming_the_field(durable: tuple[Harness, Path],
                                            caplog: pytest.LogCaptureFixture) -> None:
    h, _ = durable
    with caplog.at_level(logging.WARNING, logger="kafkagroup.coordinator"):
        commit(h, [("t", 0, 1, ""), ("t", 9, 2**63, "")])
        commit(h, [("t" + LONE, 0, 1, "")])
    first, second = (r.getMessage() for r in caplog.records)
    assert "OffsetCommit of group 'groupId'" in first and "partitions[1].committed_offset=9223372036854775808" in first
    assert "outside int64" in first and "INVALID_REQUEST (42)" in first
    assert "topics[0].name='t\\ud800'" in second and "lone surrogate U+D800 at index 1" in second


def test_refusal_precedes_the_gate() -> None:
    """Kafka parses before the coordinator looks at the group: an unparsable request to a partition this
    coordinator does not own is still INVALID_REQUEST, not NOT_COORDINATOR."""
    h = Harness("S")
    other = "otherGroup"                                   # offsets-topic partition 1: not owned
    assert set(commit(h, [("t", 0, 1, "")], group=other).values()) == {E.NOT_COORDINATOR}
    assert set(commit(h, [("t", 0, 2**63, "")], group=other).values()) == {E.INVALID_REQUEST}
    h.coord.shutdown()
    assert set(commit(h, [("t", 0, 2**63, "")]).values()) == {E.INVALID_REQUEST}


# ------------------------------------------------------------------------- TxnOffsetCommit, markers


def txn_request(*, tid: str = "txn", group: str = G, pid: int = 1000, epoch: int = 2,
                rows: list[tuple[str, int, int, str | None]] = [("t", 0, 50, "")]) -> TxnOffsetCommitRequest:
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for topic, index, offset, metadata in rows:
        topics.setdefault(topic, []).append(OffsetCommitRequestPartition(index, offset, -1, metadata))
    return TxnOffsetCommitRequest(tid, group, pid, epoch,
                                  topics=[OffsetCommitRequestTopic(t, ps) for t, ps in topics.items()])


@pytest.mark.parametrize("kw", [
    {"epoch": 2**15}, {"epoch": I16_MIN - 1}, {"pid": 2**63}, {"pid": I64_MIN - 1}, {"tid": "t" + LONE},
    {"group": G + LONE}, {"rows": [("t", 0, 50, ""), ("t", 1, 2**63, "")]},
    {"rows": [("t", 0, 50, ""), ("t" + LONE, 1, 5, "")]}, {"rows": [("t", 2**31, 50, "")]},
])
def test_txn_offset_commit_out_of_range(durable: tuple[Harness, Path], kw: dict) -> None:
    h, path = durable
    before = store_rows(path)
    request = txn_request(**kw)
    got = h.coord.txn_offset_commit(request).errors()
    assert got and set(got.values()) == {E.INVALID_REQUEST}
    assert len(got) == sum(len(t.partitions) for t in request.topics)
    assert h.group.pending_txn_offsets == {}
    # a marker for the producer finds nothing pending
    assert h.coord.complete_transaction(1000, 2, [0], TransactionResult.COMMIT) == {0: E.NONE}
    assert {tp: o.committed_offset for tp, o in h.group.offsets.items()} == {
        TopicPartition("t", 0): 5, TopicPartition("t", 1): 6}
    before["producer_epochs"] = [(0, 1000, 2)]                     # the valid marker's own record
    assert_intact(h, path, before)


def test_producer_epoch_limits_are_inclusive(durable: tuple[Harness, Path]) -> None:
    h, _ = durable
    assert h.coord.txn_offset_commit(txn_request(pid=I64_MAX, epoch=I16_MAX)).errors() == {
        TopicPartition("t", 0): E.NONE}
    assert h.coord.complete_transaction(I64_MAX, I16_MAX, [0], TransactionResult.COMMIT) == {0: E.NONE}
    assert h.group.offsets[TopicPartition("t", 0)].committed_offset == 50


def test_transaction_marker_out_of_range_touches_nothing(durable: tuple[Harness, Path]) -> None:
    h, path = durable
    assert h.coord.txn_offset_commit(txn_request()).errors() == {TopicPartition("t", 0): E.NONE}
    before = store_rows(path)
    assert h.coord.complete_transaction(1000, 2**15, [0, 1], TransactionResult.COMMIT) == {
        0: E.INVALID_REQUEST, 1: E.INVALID_REQUEST}
    assert h.coord.complete_transaction(2**63, 2, (p for p in [0]), TransactionResult.ABORT) == {
        0: E.INVALID_REQUEST}
    assert h.coord.complete_transaction(1000, 2, [0, 2**31], TransactionResult.ABORT) == {
        0: E.INVALID_REQUEST, 2**31: E.INVALID_REQUEST}
    assert store_rows(path) == before
    assert set(h.group.pending_txn_offsets) == {1000}
    assert h.coord.complete_transaction(1000, 2, [0], TransactionResult.COMMIT) == {0: E.NONE}
    assert h.group.offsets[TopicPartition("t", 0)].committed_offset == 50


# ---------------------------------------------------------------- OffsetFetch, OffsetDelete


def test_offset_fetch_and_delete_out_of_range(durable: tuple[Harness, Path]) -> None:
    h, path = durable
    before = store_rows(path)
    for request in (OffsetFetchRequest.of(G, [("t", 0), ("t", 2**31)]), OffsetFetchRequest.of(G, [("t" + LONE, 0)]),
                    OffsetFetchRequest(G + LONE)):
        r = h.coord.offset_fetch(request)
        assert (r.error_code, r.topics) == (E.INVALID_REQUEST, [])       # v2+: request-level error only
    for request in (OffsetDeleteRequest.of(G, [("t", 0), ("t", -(2**31) - 1)]),
                    OffsetDeleteRequest.of(G, [("t" + LONE, 1)]), OffsetDeleteRequest.of(G + LONE, [("t", 0)])):
        r = h.coord.offset_delete(request)
        assert (r.error_code, r.topics) == (E.INVALID_REQUEST, [])
    assert_intact(h, path, before)


# ------------------------------------------------------------------------------------ membership


def join_request(**kw: Any) -> JoinGroupRequest:
    base: dict[str, Any] = dict(group_id=G, protocols=[("range", b"")], session_timeout_ms=500,
                                rebalance_timeout_ms=500, client_id="client", client_host="/127.0.0.1")
    base.update(kw)
    return JoinGroupRequest(**base)


@pytest.mark.parametrize("kw", [
    {"group_id": G + LONE}, {"member_id": LONE}, {"group_instance_id": "i" + LONE}, {"client_id": "c" + LONE},
    {"client_host": LONE}, {"protocol_type": "consumer" + LONE}, {"reason": LONE},
    {"protocols": [("range", b""), ("rr" + LONE, b"")]}, {"session_timeout_ms": 2**31},
    {"rebalance_timeout_ms": I32_MIN - 1}, {"client_id": "c" * (MAX_STRING_BYTES + 1)},
])
def test_join_group_out_of_range_creates_no_group(tmp_path: Path, kw: dict) -> None:
    path = tmp_path / "g.sqlite"
    h = Harness("S", store=str(path))
    before = store_rows(path)
    reply = h.coord.join_group(join_request(**kw))
    r = reply.result()                                     # answered at once, never parked
    assert (r.error_code, r.member_id, r.generation_id, r.leader, r.members) == (E.INVALID_REQUEST, "", -1, "", [])
    assert h.coord.groups == {}
    h.advance(10_000)
    assert h.coord.groups == {} and store_rows(path) == before


def test_membership_requests_out_of_range_leave_a_stable_group_alone(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite"
    h = Harness("S", store=str(path))
    a = h.fx_single()
    before, generation = store_rows(path), h.group.generation_id
    member = h.group.members[a]

    def unchanged() -> None:
        assert h.group.state is S.STABLE and h.group.generation_id == generation
        assert set(h.group.members) == {a} and h.group.members[a] is member
        assert store_rows(path) == before

    assert h.coord.join_group(join_request(member_id=a, session_timeout_ms=2**31)).result().error_code == \
        E.INVALID_REQUEST
    unchanged()
    for request in (SyncGroupRequest(G, 2**31, a), SyncGroupRequest(G, generation, a + LONE),
                    SyncGroupRequest(G, generation, a, protocol_name="range" + LONE),
                    SyncGroupRequest(G, generation, a, assignments=[(a, b"A"), (LONE, b"B")])):
        r = h.coord.sync_group(request).result()
        assert (r.error_code, r.assignment) == (E.INVALID_REQUEST, b"")
        unchanged()
    for hb in (HeartbeatRequest(G, 2**31, a), HeartbeatRequest(G, generation, a, "i" + LONE),
               HeartbeatRequest(G + LONE, generation, a)):
        assert h.coord.heartbeat(hb).error_code == E.INVALID_REQUEST
        unchanged()
    # a LeaveGroup batch with one unencodable identity leaves nobody, the valid member included
    r = h.coord.leave_group(LeaveGroupRequest(G, [MemberIdentity(a), MemberIdentity("x", reason="r" + LONE)]))
    assert (r.error_code, r.members) == (E.INVALID_REQUEST, [])
    unchanged()
    assert h.heartbeat(a, generation) == E.NONE            # the member is still in good standing


# --------------------------------------------------------------------------------- admin requests


def test_describe_list_delete_groups_out_of_range(durable: tuple[Harness, Path]) -> None:
    h, path = durable
    before = store_rows(path)
    described = h.coord.describe_groups(DescribeGroupsRequest([G, "x" + LONE]))
    assert [(g.group_id, g.error_code) for g in described.groups] == [(G, E.INVALID_REQUEST),
                                                                      ("x" + LONE, E.INVALID_REQUEST)]
    listed = h.coord.list_groups(ListGroupsRequest(["Empty", "St" + LONE]))
    assert (listed.error_code, listed.groups) == (E.INVALID_REQUEST, [])
    deleted = h.coord.delete_groups(DeleteGroupsRequest([G, G + LONE]))
    assert [(d.group_id, d.error_code) for d in deleted.results] == [(G, E.INVALID_REQUEST),
                                                                     (G + LONE, E.INVALID_REQUEST)]
    assert G in h.coord.groups
    assert_intact(h, path, before)


def test_a_none_group_id_is_still_the_gates_invalid_group_id() -> None:
    h = Harness("S")
    assert h.coord.heartbeat(HeartbeatRequest(None, 1, "m")).error_code == E.INVALID_GROUP_ID  # type: ignore[arg-type]
    described = h.coord.describe_groups(DescribeGroupsRequest([None]))  # type: ignore[list-item]
    assert described.groups[0].error_code == E.INVALID_GROUP_ID


# ------------------------------------------------------------------------- caller bugs still raise


@pytest.mark.parametrize("call, match", [
    (lambda c: c.offset_commit(OffsetCommitRequest(G, topics=[OffsetCommitRequestTopic(
        "t", [OffsetCommitRequestPartition(0, "5")])])),                        # type: ignore[arg-type]
     r"partitions\[0\]\.committed_offset must be an int, got '5'"),
    (lambda c: c.offset_commit(OffsetCommitRequest.of(G, {("t", True): 5})),
     r"partitions\[0\]\.partition_index must be an int, got True"),
    (lambda c: c.offset_commit(OffsetCommitRequest.of(G, {("t", 0): (5, b"m")})),  # type: ignore[dict-item]
     r"committed_metadata must be a str, got b'm'"),
    (lambda c: c.heartbeat(HeartbeatRequest(G, 1.0, "m")),                    # type: ignore[arg-type]
     r"Heartbeat of group 'groupId': generation_id must be an int, got 1\.0"),
    (lambda c: c.offset_fetch(OffsetFetchRequest.of(G, [(b"t", 0)])),           # type: ignore[list-item]
     r"topics\[0\]\.name must be a str, got b't'"),
])
def test_wrong_python_types_are_caller_bugs(call: Callable, match: str) -> None:
    h = Harness("S")
    with pytest.raises(InvalidGroupError, match=match):
        call(h.coord)
    assert h.coord.groups == {}


# --------------------------------------------------------------------------------------- property


_INT = st.one_of(st.integers(min_value=-(2**64), max_value=2**64),
                 st.sampled_from([I32_MIN - 1, I32_MIN, I32_MAX, I32_MAX + 1, I64_MIN - 1, I64_MIN,
                                  I64_MAX, I64_MAX + 1]))
_NAME = st.lists(st.sampled_from(["a", "é", "😀", LONE, "\udfff"]), min_size=1, max_size=4).map("".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_NAME, _INT, _INT), min_size=1, max_size=5))
def test_commit_is_refused_exactly_when_a_value_is_unrepresentable(rows: list[tuple[str, int, int]]) -> None:
    h = Harness("S")
    got = commit(h, [(t, p, o, "") for t, p, o in rows])
    representable = all(I32_MIN <= p <= I32_MAX and I64_MIN <= o <= I64_MAX
                        and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in t) for t, p, o in rows)
    assert set(got.values()) == ({E.NONE} if representable else {E.INVALID_REQUEST})
    stored = {} if h.coord.group(G) is None else h.group.offsets
    if representable:
        last = {TopicPartition(t, p): o for t, p, o in rows}
        assert {tp: v.committed_offset for tp, v in stored.items()} == last
    else:
        assert stored == {} and h.coord.groups == {}
