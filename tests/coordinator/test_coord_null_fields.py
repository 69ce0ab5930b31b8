"""``None`` where Kafka's schema has a non-nullable array or string (issue 10, defect 4).

Built with ``None`` for an array, a request type raises InvalidGroupError naming the class and field (it
used to be accepted and then raise a bare TypeError inside the coordinator).  A request whose field is set
to ``None`` afterwards reaches the coordinator, which answers INVALID_REQUEST (42) in the request's response
shape and touches nothing: the coordinator never raises for what a peer could send.  Nullable fields keep
their meaning (``OffsetFetchRequest.topics = None``: every committed offset).
"""
from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, Callable

import pytest

from coord_harness import Harness
from kafkagroup.coordinator import GroupState
from kafkagroup.errors import InvalidGroupError
from kafkagroup.messages import api
from kafkagroup.messages.api import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, MemberIdentity, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetDeleteRequest, OffsetDeleteRequestTopic, OffsetFetchRequest, OffsetFetchRequestTopic, SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kafkagroup.messages.error_codes import ErrorCode

E = ErrorCode
G = "groupId"

# ----------------------------------------------------------------------------------------- construction

ARRAYS = [
    (JoinGroupRequest, dict(group_id=G), "protocols"),
    (SyncGroupRequest, dict(group_id=G, generation_id=1, member_id="m"), "assignments"),
    (LeaveGroupRequest, dict(group_id=G), "members"),
    (OffsetCommitRequest, dict(group_id=G), "topics"),
    (OffsetCommitRequestTopic, dict(name="t"), "partitions"),
    (OffsetFetchRequestTopic, dict(name="t"), "partition_indexes"),
    (TxnOffsetCommitRequest, dict(transactional_id="x", group_id=G, producer_id=1, producer_epoch=0), "topics"),
    (OffsetDeleteRequest, dict(group_id=G), "topics"),
    (OffsetDeleteRequestTopic, dict(name="t"), "partition_indexes"),
    (DescribeGroupsRequest, {}, "groups"),
    (ListGroupsRequest, {}, "states_filter"),
    (DeleteGroupsRequest, {}, "groups_names"),
]


@pytest.mark.parametrize("cls, kwargs, field", ARRAYS, ids=lambda v: getattr(v, "__name__", None))
def test_a_null_array_is_refused_when_built(cls: type, kwargs: dict, field: str) -> None:
    with pytest.raises(InvalidGroupError, match=rf"^{cls.__name__}\.{field} is null, which Kafka's wire format"):
        cls(**kwargs, **{field: None})
    for wrong in ("text", b"raw", 5):
        with pytest.raises(InvalidGroupError, match=rf"^{cls.__name__}\.{field} must be a sequence, got"):
            cls(**kwargs, **{field: wrong})
    cls(**kwargs, **{field: []})                                # an empty array is fine
    cls(**kwargs, **{field: iter(())}) if field != "assignments" else None


def test_every_array_field_of_a_request_is_covered() -> None:
    """Any field typed as a Sequence is either checked or is the one nullable array Kafka has."""
    covered = {(cls.__name__, field) for cls, _, field in ARRAYS}
    found = set()
    for name in api.__all__:
        cls = getattr(api, name)
        if not dataclasses.is_dataclass(cls) or "Response" in name or name.endswith("Result"):
            continue
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if "Sequence" in str(hints[f.name]):
                found.add((name, f.name))
        assert set(getattr(cls, "NON_NULLABLE_SEQUENCES", ())) <= {f.name for f in dataclasses.fields(cls)}
    assert found == covered | {("OffsetFetchRequest", "topics")}


def test_offset_fetch_topics_stay_nullable() -> None:
    assert OffsetFetchRequest(G, None).topics is None
    with pytest.raises(InvalidGroupError, match=r"OffsetFetchRequest\.topics must be a sequence, got str"):
        OffsetFetchRequest(G, "t")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ reaching the coordinator


@pytest.fixture
def stable(tmp_path: Path) -> tuple[Harness, str]:
    h = Harness("S", store=str(tmp_path / "g.db"))
    member = h.fx_single()
    assert h.commit({("t", 0): 5}, member_id=member, generation=1) == {("t", 0): E.NONE}
    return h, member


def snapshot(h: Harness) -> tuple:
    g = h.group
    return (g.state, g.generation_id, sorted(g.members), dict(g.offsets), h.clock.pending(),
            h.coord.store.load_partition(h.coord.partition_for(G)))


def nulled(request: Any, path: str) -> Any:
    """``request`` with the field at ``path`` (``"topics"``, ``"topics.0.partitions"``) set to None."""
    *parents, last = path.split(".")
    target = request
    for step in parents:
        target = target[int(step)] if step.isdigit() else getattr(target, step)
    setattr(target, last, None)
    return request


def commit_request(member: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(G, 1, member, topics=[OffsetCommitRequestTopic("t", [OffsetCommitRequestPartition(0, 9)])])


CASES: list[tuple[str, Callable[[str], Any], str, Callable[[Any, Any], list[int]]]] = [
    ("join", lambda m: JoinGroupRequest(G, m, protocols=[("range", b"")], session_timeout_ms=500), "protocols",
     lambda c, r: [c.join_group(r).result().error_code]),
    ("join", lambda m: JoinGroupRequest(G, m, protocols=[("range", b"")], session_timeout_ms=500), "member_id",
     lambda c, r: [c.join_group(r).result().error_code]),
    ("join", lambda m: JoinGroupRequest(G, m, protocols=[("range", b"")], session_timeout_ms=500), "protocol_type",
     lambda c, r: [c.join_group(r).result().error_code]),
    ("sync", lambda m: SyncGroupRequest(G, 1, m, assignments=[(m, b"x")]), "assignments",
     lambda c, r: [c.sync_group(r).result().error_code]),
    ("heartbeat", lambda m: HeartbeatRequest(G, 1, m), "member_id", lambda c, r: [c.heartbeat(r).error_code]),
    ("leave", lambda m: LeaveGroupRequest(G, [MemberIdentity(m)]), "members",
     lambda c, r: [c.leave_group(r).error_code]),
    ("leave", lambda m: LeaveGroupRequest(G, [MemberIdentity(m)]), "members.0.member_id",
     lambda c, r: [c.leave_group(r).error_code]),
    ("commit", commit_request, "topics", lambda c, r: [c.offset_commit(r).topics == [] and 42]),
    ("commit", commit_request, "topics.0.partitions",
     lambda c, r: [c.offset_commit(r).topics[0].partitions == [] and 42]),
    ("commit", commit_request, "topics.0.name", lambda c, r: list(c.offset_commit(r).errors().values())),
    ("commit", commit_request, "member_id", lambda c, r: list(c.offset_commit(r).errors().values())),
    ("txn", lambda m: TxnOffsetCommitRequest.of("tx", G, 7, 0, {("t", 0): 9}), "topics",
     lambda c, r: [c.txn_offset_commit(r).topics == [] and 42]),
    ("txn", lambda m: TxnOffsetCommitRequest.of("tx", G, 7, 0, {("t", 0): 9}), "transactional_id",
     lambda c, r: list(c.txn_offset_commit(r).errors().values())),
    ("fetch", lambda m: OffsetFetchRequest.of(G, [("t", 0)]), "topics.0.partition_indexes",
     lambda c, r: [c.offset_fetch(r).error_code]),
    ("delete", lambda m: OffsetDeleteRequest.of(G, [("t", 0)]), "topics", lambda c, r: [c.offset_delete(r).error_code]),
    ("delete", lambda m: OffsetDeleteRequest.of(G, [("t", 0)]), "topics.0.partition_indexes",
     lambda c, r: [c.offset_delete(r).error_code]),
    ("describe", lambda m: DescribeGroupsRequest([G]), "groups",
     lambda c, r: [c.describe_groups(r).groups == [] and 42]),
    ("list", lambda m: ListGroupsRequest(["Stable"]), "states_filter", lambda c, r: [c.list_groups(r).error_code]),
    ("delete_groups", lambda m: DeleteGroupsRequest([G]), "groups_names",
     lambda c, r: [c.delete_groups(r).results == [] and 42]),
]


@pytest.mark.parametrize("kind, build, path, answer", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_null_reaching_the_coordinator_is_answered_42(stable, kind, build, path, answer) -> None:
    h, member = stable
    before = snapshot(h)
    request = nulled(build(member), path)
    assert answer(h.coord, request) == [E.INVALID_REQUEST] * len(answer(h.coord, request)) != []
    assert snapshot(h) == before
    assert h.group.state is GroupState.STABLE and h.heartbeat(member, 1) == E.NONE


def test_a_null_entry_is_a_caller_bug_naming_the_field() -> None:
    h = Harness("S")
    with pytest.raises(InvalidGroupError, match=r"OffsetCommit of group 'groupId': topics\[1\] must be a "
                                                r"OffsetCommitRequestTopic, got None"):
        h.coord.offset_commit(OffsetCommitRequest(G, topics=[OffsetCommitRequestTopic("t", []), None]))
    with pytest.raises(InvalidGroupError, match=r"partitions\[0\] must be a OffsetCommitRequestPartition, got None"):
        h.coord.offset_commit(OffsetCommitRequest(G, topics=[OffsetCommitRequestTopic("t", [None])]))
    with pytest.raises(InvalidGroupError, match=r"LeaveGroup of group 'groupId': members\[0\] must be a "
                                                r"MemberIdentity, got None"):
        h.coord.leave_group(LeaveGroupRequest(G, [None]))
    with pytest.raises(InvalidGroupError, match=r"OffsetFetch of group 'groupId': topics\[0\] must be a "
                                                r"OffsetFetchRequestTopic or OffsetDeleteRequestTopic, got None"):
        h.coord.offset_fetch(OffsetFetchRequest(G, [None]))
    assert h.coord.groups == {}


def test_fetch_all_topics_still_means_every_offset(stable) -> None:
    h, member = stable
    answer = h.coord.offset_fetch(OffsetFetchRequest(G, None))
    assert answer.error_code == E.NONE and answer.offsets()[("t", 0)].committed_offset == 5
