"""SQLite store: restart restores groups and acknowledged offsets (§2.10); write failures are atomic."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coord_harness import E, RANGE_RR, S, Harness

from kafkagroup.coordinator import GroupStore, ManualClock
from kafkagroup.coordinator.errors import StoreWriteError
from kafkagroup.coordinator.group import OffsetAndMetadata
from kafkagroup.coordinator.store import GroupRecord, MemberRecord
from kafkagroup.structs import TopicPartition

REPO = Path(__file__).resolve().parents[2]


def _restart(h: Harness, path: str, **kw) -> Harness:
    h.coord.shutdown()
    h.advance(1000)
    return Harness("S", store=path, clock=h.clock, **kw)


def test_restart_restores_a_stable_group_and_its_offsets(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    a, b = h.fx_two()
    assert h.commit({("t", 0): 10, ("t", 1): (11, "meta")}, member_id=a, generation=2) == {
        ("t", 0): E.NONE, ("t", 1): E.NONE}
    h2 = _restart(h, path)
    g = h2.group
    assert (g.state, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id) == (
        S.STABLE, 2, "consumer", "range", a)
    assert list(g.members) == [a, b]
    assert {m: g.members[m].assignment for m in g.members} == {a: b"a", b: b"b"}
    assert all(m.session_timeout_ms == 500 and m.rebalance_timeout_ms == 500 for m in g.members.values())
    offsets = h2.fetch(None).offsets()
    assert {tp: (p.committed_offset, p.metadata) for tp, p in offsets.items()} == {
        ("t", 0): (10, ""), ("t", 1): (11, "meta")}
    # the loaded members carry on: heartbeats of generation 2, SyncGroup returns the stored assignment
    assert h2.heartbeat(a, 2) == E.NONE
    assert h2.sync(b, 2).result().assignment == b"b"
    # sessions restarted at load time (t=1050): B, silent, expires 500 ms later
    h2.advance(400)
    assert h2.heartbeat(a, 2) == E.NONE
    h2.advance(100)
    assert b not in h2.group.members and h2.group.state is S.PREPARING_REBALANCE


def test_restart_restores_what_was_last_written_not_an_unfinished_rebalance(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    a, b = h.fx_two()
    h.join(b, protocols=RANGE_RR)             # PreparingRebalance, nothing written
    h2 = _restart(h, path)
    g = h2.group
    assert g.state is S.STABLE and g.generation_id == 2 and set(g.members) == {a, b}
    assert g.members[b].protocols == [("range", b"")]   # only the selected protocol's metadata is stored


def test_restart_restores_an_empty_group(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    a = h.fx_single()
    h.commit({("t", 0): 3}, member_id=a, generation=1)
    assert h.leave(a).members[0].error_code == E.NONE
    assert h.group.state is S.EMPTY and h.group.generation_id == 2
    empty_since = h.group.state_timestamp
    h2 = _restart(h, path)
    g = h2.group
    assert (g.state, g.generation_id, g.protocol_type, g.state_timestamp) == (S.EMPTY, 2, "consumer", empty_since)
    assert not g.members and h2.fetch([("t", 0)]).offsets()[("t", 0)].committed_offset == 3
    # a new member starts generation 3 after the initial delay
    m, reply = h2.two_step_join()
    h2.advance(50)
    assert reply.result().generation_id == 3


def test_restart_restores_static_members_and_their_instance_ids(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    l, f = h.fx_static()
    h2 = _restart(h, path)
    g = h2.group
    assert g.static_members == {"leader": l, "follower": f} and g.leader_id == l
    assert h2.heartbeat("x", 1, instance="follower") == E.FENCED_INSTANCE_ID
    r = h2.join("", instance="leader", protocols=RANGE_RR).result()       # restarted leader: no rebalance
    assert (r.error_code, r.generation_id, r.skip_assignment) == (E.NONE, 1, True)
    h3 = _restart(h2, path)
    assert h3.group.static_members["leader"] == r.member_id               # the replacement was persisted


def test_restart_restores_simple_groups_with_offsets_only(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    assert h.commit({("t", 0): 1}, group="simple") == {("t", 0): E.NONE}
    h2 = _restart(h, path)
    g = h2.coord.group("simple")
    assert g is not None and g.state is S.EMPTY and g.protocol_type is None and g.state_timestamp is None
    assert h2.fetch([("t", 0)], group="simple").offsets()[("t", 0)].committed_offset == 1


def test_deleted_group_stays_deleted_after_restart(tmp_path: Path) -> None:
    from kafkagroup.coordinator import DeleteGroupsRequest
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    h.commit({("t", 0): 1})
    assert h.coord.delete_groups(DeleteGroupsRequest(["groupId"])).results[0].error_code == E.NONE
    h2 = _restart(h, path)
    assert h2.coord.group("groupId") is None


def test_unload_then_load_in_the_same_process(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    a, b = h.fx_two()
    h.coord.unload_partition(0)
    assert h.coord.group("groupId") is None and h.heartbeat(a, 2) == E.NOT_COORDINATOR
    h.coord.load_partition(0)
    assert h.group.state is S.STABLE and set(h.group.members) == {a, b}


def test_failed_writes_leave_nothing_half_written(tmp_path: Path) -> None:
    path = str(tmp_path / "coord.db")
    h = Harness("S", store=path)
    a, b = h.fx_two()
    before = h.coord.store.load_partition(0)
    h.coord.store.inject_failure(E.KAFKA_STORAGE_ERROR, kind="group")
    reply = h.join(a)                                    # leader rejoin: generation 3
    b_reply = h.join(b)
    assert reply.result().generation_id == 3 and b_reply.result().generation_id == 3
    assert h.sync(a, 3, [(a, b"new-a"), (b, b"new-b")]).result().error_code == E.NOT_COORDINATOR
    after = h.coord.store.load_partition(0)
    assert after.groups == before.groups                 # generation 2 with the old assignment, untouched
    h2 = _restart(h, path)
    assert h2.group.generation_id == 2 and h2.group.members[a].assignment == b"a"


def test_store_transaction_rolls_back_every_statement() -> None:
    store = GroupStore(":memory:")
    rec = GroupRecord("g", 0, "consumer", 1, "range", "m1", 5,
                      [MemberRecord("m1", None, "c", "h", 1, 1, b"s", b"a")])
    store.store_group(rec)
    store.inject_failure(E.MESSAGE_TOO_LARGE)
    bigger = GroupRecord("g", 0, "consumer", 2, "range", "m2", 6,
                         [MemberRecord(f"m{i}", None, "c", "h", 1, 1, b"s", b"a") for i in range(5)])
    with pytest.raises(StoreWriteError) as failed:
        store.store_group(bigger)
    assert failed.value.code == E.MESSAGE_TOO_LARGE
    assert store.load_partition(0).groups == {"g": rec}
    store.inject_failure(E.NOT_ENOUGH_REPLICAS, kind="offsets")
    tp = TopicPartition("t", 0)
    with pytest.raises(StoreWriteError) as failed:
        store.store_offsets("g", 0, [(tp, OffsetAndMetadata(1)), (TopicPartition("t", 1), OffsetAndMetadata(2))])
    assert failed.value.code == E.NOT_ENOUGH_REPLICAS
    assert store.load_partition(0).offsets == {}
    store.store_offsets("g", 0, [(tp, OffsetAndMetadata(1, commit_timestamp=3))])
    assert store.load_partition(0).offsets == {"g": {tp: OffsetAndMetadata(1, -1, "", 3, None)}}


def test_sqlite_errors_map_to_kafka_storage_error() -> None:
    h = Harness("S")
    h.commit({("t", 0): 1})
    h.coord.store.close()
    assert h.commit({("t", 0): 2}) == {("t", 0): E.NOT_COORDINATOR}   # KAFKA_STORAGE_ERROR -> 16 (§2.6)
    assert h.fetch([("t", 0)]).offsets()[("t", 0)].committed_offset == 1


def test_acknowledged_commits_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from kafkagroup.coordinator import GroupCoordinator, ManualClock, OffsetCommitRequest
        coord = GroupCoordinator(clock=ManualClock(), store={str(path)!r}, enable_offset_expiration=False)
        acked = 0
        for i in range(200):
            r = coord.offset_commit(OffsetCommitRequest.of("crash-group", {{("t", p): i for p in range(10)}}))
            assert all(code == 0 for code in r.errors().values())
            acked = i
        print(acked, flush=True)
        os._exit(0)   # no close, no checkpoint: like a crash right after the last acknowledgement
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    acked = int(out.stdout.strip())
    from kafkagroup.coordinator import GroupCoordinator, OffsetFetchRequest
    coord = GroupCoordinator(clock=ManualClock(), store=str(path), enable_offset_expiration=False)
    offsets = coord.offset_fetch(OffsetFetchRequest.of("crash-group", None)).offsets()
    assert {tp: p.committed_offset for tp, p in offsets.items()} == {("t", p): acked for p in range(10)}
    coord.shutdown()


def test_the_store_is_an_explicit_choice() -> None:
    """DESIGN §10: a coordinator without ``store=`` would silently keep acknowledged commits in memory only
    and lose them on restart; so there is no default -- ``":memory:"`` has to be asked for."""
    import pytest

    from kafkagroup.coordinator import GroupCoordinator

    with pytest.raises(TypeError, match="store"):
        GroupCoordinator(clock=ManualClock())
    with pytest.raises(TypeError, match="path"):
        GroupStore()   # type: ignore[call-arg]
    coord = GroupCoordinator(clock=ManualClock(), store=":memory:", enable_offset_expiration=False)
    assert coord.store.path == ":memory:"
    coord.shutdown()
