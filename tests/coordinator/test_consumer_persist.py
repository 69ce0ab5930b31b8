"""Consumer groups (KIP-848) survive a restart of a coordinator on a store file (issue 22): members, epochs,
targets and assignments are written as the group changes (Kafka's ConsumerGroup* records in
``__consumer_offsets``) and read back at load; a member heartbeating with its current epoch after the restart
is answered as before and nothing moves; sessions restart at load.  ManualClock, no sleeps."""
from __future__ import annotations

import sqlite3

import pytest

from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.coordinator.store import SCHEMA_VERSION, GroupStore
from kafkagroup.messages.consumer_api import ConsumerGroupDescribeRequest
from kafkagroup.messages.error_codes import ErrorCode as E
from kafkagroup.messages.topics import StaticTopics

from tests.coordinator.consumer_helpers import Member, needs_server_assignors, settle
from tests.coordinator.test_consumer_mixed import Classic, classic_group, drive, no_two_owners

pytestmark = needs_server_assignors


class Restartable:
    """A coordinator on a store file that can be stopped and started again on the same file and topics."""

    def __init__(self, path, topics: dict[str, int], **config) -> None:
        config.setdefault("group_consumer_assignment_interval_ms", 0)
        self.path, self.config, self.view = str(path), config, StaticTopics(topics)
        self.clock = ManualClock()
        self.coord = self._start()

    def _start(self) -> GroupCoordinator:
        return GroupCoordinator(self.config, clock=self.clock, store=self.path, topics=self.view,
                                enable_offset_expiration=False)

    def restart(self, *clients) -> GroupCoordinator:
        self.coord.shutdown()
        self.coord = self._start()
        for c in clients:
            c.coord = self.coord
        return self.coord

    def writes(self) -> list[str]:
        """The store's committed transactions from now on (one list element per COMMIT SQLite runs)."""
        seen: list[str] = []
        self.coord.store._db.set_trace_callback(lambda sql: seen.append(sql) if sql == "COMMIT" else None)
        return seen


def describe(coord, group="g"):
    return coord.consumer_group_describe(ConsumerGroupDescribeRequest([group])).groups[0]


def view_of(described):
    """What ConsumerGroupDescribe says of the group and each member (epochs, assignments, target)."""
    def parts(topics):
        return sorted((t.topic_name, tuple(t.partitions)) for t in topics)
    members = {m.member_id: (m.member_epoch, m.instance_id, m.rack_id, m.client_id, m.subscribed_topic_names,
                             m.subscribed_topic_regex, m.member_type, parts(m.assignment),
                             parts(m.target_assignment)) for m in described.members}
    return (described.group_state, described.group_epoch, described.assignment_epoch, described.assignor_name,
            members)


def test_a_consumer_group_survives_a_restart_with_its_epochs_and_assignments(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 6, "u": 3})
    a, b = Member(r.coord, "g", "A", topics=["t"]), Member(r.coord, "g", "B", topics=["t", "u"])
    c = Member(r.coord, "g", "C", topics=["u"], assignor="range")
    settle(a, b, c)
    before = view_of(describe(r.coord))
    assert before[0] == "Stable"
    owned = {m.member_id: (m.epoch, dict(m.owned)) for m in (a, b, c)}

    r.restart(a, b, c)
    assert view_of(describe(r.coord)) == before
    writes = r.writes()
    for m in (a, b, c):
        resp = m.heartbeat()
        assert resp.error_code == E.NONE, resp
        assert resp.member_epoch == owned[m.member_id][0]
        assert resp.assignment is None                     # nothing new to tell: nothing moved
    assert {m.member_id: (m.epoch, dict(m.owned)) for m in (a, b, c)} == owned
    assert view_of(describe(r.coord)) == before
    assert writes == []                                    # heartbeats that change nothing write nothing
    # membership is committed at synchronous=NORMAL; the store's own level (FULL: offsets) is back afterwards
    assert r.coord.store._db.execute("PRAGMA synchronous").fetchone() == (2,)

    # the group goes on from where it was: a member leaving bumps the epoch past the stored one
    assert a.leave().error_code == E.NONE
    assert len(writes) == 1                                # one transaction for the leave
    assert r.coord.store._db.execute("PRAGMA synchronous").fetchone() == (2,)
    settle(b, c)
    assert describe(r.coord).group_epoch == before[1] + 1
    assert sorted(b.partitions("t")) == list(range(6))


def test_sessions_restart_at_load_and_a_silent_member_is_fenced_after_its_session(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 4})
    a, b = Member(r.coord, "g", "A", topics=["t"]), Member(r.coord, "g", "B", topics=["t"])
    settle(a, b)
    epoch = describe(r.coord).group_epoch
    r.clock.advance(40_000)                      # both sessions (45 s) nearly over before the restart
    r.restart(a, b)
    r.clock.advance(40_000)                      # within the session started at load
    assert a.heartbeat().error_code == E.NONE and b.heartbeat().error_code == E.NONE
    r.clock.advance(30_000)
    assert a.heartbeat().error_code == E.NONE
    r.clock.advance(20_000)                      # B silent for 50 s since its last heartbeat: fenced
    assert b.heartbeat().error_code == E.UNKNOWN_MEMBER_ID
    settle(a)
    assert describe(r.coord).group_epoch == epoch + 1 and sorted(a.partitions("t")) == [0, 1, 2, 3]
    r.restart(a)                                 # the fencing was written too
    assert [m.member_id for m in describe(r.coord).members] == ["A"]


def test_a_group_mid_reconciliation_survives_and_completes_without_double_ownership(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 6})
    a = Member(r.coord, "g", "A", topics=["t"])
    settle(a)
    b = Member(r.coord, "g", "B", topics=["t"])
    b.heartbeat()                                # B joins: A must revoke half, B waits for it
    a.heartbeat(owned=a.owned)                   # A told to revoke but has not acknowledged it yet
    assert describe(r.coord).group_state == "Reconciling"
    before = view_of(describe(r.coord))
    r.restart(a, b)
    assert view_of(describe(r.coord)) == before
    settle(a, b)
    assert not a.partitions("t") & b.partitions("t")
    assert sorted(a.partitions("t") | b.partitions("t")) == list(range(6)) and len(b.partitions("t")) == 3
    assert describe(r.coord).group_state == "Stable"


def test_a_static_member_stays_and_one_that_left_temporarily_comes_back_to_its_partitions(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 4})
    s = Member(r.coord, "g", "S1", topics=["t"], instance="i-1")
    d = Member(r.coord, "g", "D", topics=["t"])
    t = Member(r.coord, "g", "T1", topics=["t"], instance="i-2")
    settle(s, d, t)
    held = {m.member_id: m.partitions("t") for m in (s, d, t)}
    epoch = describe(r.coord).group_epoch
    assert t.leave(epoch=-2).error_code == E.NONE           # static leave: keeps its partitions at epoch -2
    r.restart(s, d, t)
    assert s.heartbeat().error_code == E.NONE and s.partitions("t") == held["S1"]
    back = Member(r.coord, "g", "T2", topics=["t"], instance="i-2")       # the instance returns, new member id
    resp = back.heartbeat()
    assert resp.error_code == E.NONE, resp
    assert back.partitions("t") == held["T1"]
    settle(s, d, back)
    assert describe(r.coord).group_epoch == epoch             # a static rejoin moves nothing
    assert {m.member_id: m.partitions("t") for m in (s, d)} == {"S1": held["S1"], "D": held["D"]}
    # the instance is still owned by T2 after another restart: a third member id is refused
    r.restart(s, d, back)
    other = Member(r.coord, "g", "T3", topics=["t"], instance="i-2")
    assert other.heartbeat().error_code == E.UNRELEASED_INSTANCE_ID


def test_a_mixed_group_survives_a_restart(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 6}, group_initial_rebalance_delay_ms=0)
    a, b = Classic(r.coord, "g", "A", ["t"]), Classic(r.coord, "g", "B", ["t"])
    classic_group(r.coord, r.clock, [a, b], 6)
    c = Member(r.coord, "g", "C", topics=["t"])
    c.heartbeat()                                            # upgrade: a consumer group with two classic members
    drive([a, b], [c])
    no_two_owners([a, b], [c])
    before = view_of(describe(r.coord))
    assert before[0] == "Stable"
    kinds = {m.member_id: m.member_type for m in describe(r.coord).members}
    owned = (set(a.owned), set(b.owned), dict(c.owned))
    r.restart(a, b, c)
    assert view_of(describe(r.coord)) == before
    assert {m.member_id: m.member_type for m in describe(r.coord).members} == kinds
    assert a.heartbeat() == E.NONE and b.heartbeat() == E.NONE       # same generation (= member epoch)
    assert c.heartbeat().error_code == E.NONE
    drive([a, b], [c])
    assert (set(a.owned), set(b.owned), dict(c.owned)) == owned
    # a classic member's session is its JoinGroup's (10 s), restarted at load
    r.restart(a, b, c)
    r.clock.advance(11_000)
    assert a.heartbeat() == E.UNKNOWN_MEMBER_ID


def test_upgrade_and_downgrade_leave_one_group_of_the_id_in_the_store(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 4}, group_initial_rebalance_delay_ms=0)
    a = Classic(r.coord, "g", "A", ["t"])
    classic_group(r.coord, r.clock, [a], 4)
    c = Member(r.coord, "g", "C", topics=["t"])
    c.heartbeat()
    drive([a], [c])
    r.restart(a, c)
    assert r.coord.consumer_group("g") is not None and r.coord.group("g") is None
    assert c.leave().error_code == E.NONE                   # the last consumer-protocol member: downgrade
    assert r.coord.consumer_group("g") is None and r.coord.group("g") is not None
    r.restart(a, c)
    assert r.coord.consumer_group("g") is None and r.coord.group("g") is not None
    with sqlite3.connect(r.path) as db:
        assert db.execute("SELECT count(*) FROM consumer_groups").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM consumer_members").fetchone() == (0,)


def test_an_emptied_group_keeps_its_epoch_and_offsets_and_a_deleted_one_is_gone(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 2})
    a = Member(r.coord, "g", "A", topics=["t"])
    settle(a)
    assert a.leave().error_code == E.NONE
    epoch = describe(r.coord).group_epoch
    r.restart(a)
    d = describe(r.coord)
    assert (d.group_state, d.group_epoch, d.members) == ("Empty", epoch, [])
    from kafkagroup.messages.api import DeleteGroupsRequest
    assert r.coord.delete_groups(DeleteGroupsRequest(["g"])).results[0].error_code == E.NONE
    r.restart(a)
    assert describe(r.coord).error_code == E.GROUP_ID_NOT_FOUND


def test_a_store_of_the_previous_schema_opens_and_then_keeps_consumer_groups(tmp_path):
    path = tmp_path / "v1.db"
    with GroupStore(str(path)):                            # made by this release, then turned into a v1 file
        pass
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE consumer_groups")
        db.execute("DROP TABLE consumer_members")
        db.execute("INSERT INTO offsets VALUES ('g', 't', 0, ?, 42, -1, '', 0, NULL, 1)",
                   (GroupCoordinator({}, clock=ManualClock(), store=":memory:").partition_for("g"),))
        db.execute("PRAGMA user_version = 1")
    r = Restartable(path, {"t": 2})
    assert r.coord.store.schema_version == SCHEMA_VERSION == 2
    a = Member(r.coord, "g", "A", topics=["t"])
    settle(a)
    epoch = a.epoch
    r.restart(a)
    assert a.heartbeat().error_code == E.NONE and a.epoch == epoch
    assert r.coord.consumer_group("g").offset_state.committed[("t", 0)].committed_offset == 42


@pytest.mark.parametrize("kind", ["heartbeat", "timer"])
def test_a_failed_write_is_repaired_by_the_next_one(tmp_path, kind):
    r = Restartable(tmp_path / "groups.db", {"t": 4})
    a, b = Member(r.coord, "g", "A", topics=["t"]), Member(r.coord, "g", "B", topics=["t"])
    settle(a)
    r.coord.store.inject_failure(E.KAFKA_STORAGE_ERROR)
    b.heartbeat()                                           # B's join: the write fails (logged)
    settle(a, b)                                            # later changes: the group written whole
    before = view_of(describe(r.coord))
    if kind == "timer":
        r.coord.store.inject_failure(E.KAFKA_STORAGE_ERROR)
        r.clock.advance(46_000)                             # both fenced by their sessions; first write fails
        c = Member(r.coord, "g", "C", topics=["t"])
        settle(c)
        before = view_of(describe(r.coord))
    r.restart(a, b)
    assert view_of(describe(r.coord)) == before


def test_a_member_revoking_at_the_restart_gets_its_rebalance_timeout_again(tmp_path):
    r = Restartable(tmp_path / "groups.db", {"t": 4})
    a = Member(r.coord, "g", "A", topics=["t"], rebalance_timeout_ms=20_000)
    settle(a)
    b = Member(r.coord, "g", "B", topics=["t"])
    everything = {t: set(ps) for t, ps in a.owned.items()}
    b.heartbeat()
    a.heartbeat(owned=everything)                  # told to revoke two partitions; never acknowledges it
    assert describe(r.coord).group_state == "Reconciling"
    r.clock.advance(15_000)
    r.restart(a, b)
    r.clock.advance(15_000)                        # 30 s since the revocation, 15 s since the load: A stays
    assert a.heartbeat(owned=everything).error_code == E.NONE and b.heartbeat().error_code == E.NONE
    r.clock.advance(6_000)                         # the rebalance timeout, restarted at load, expires
    assert a.heartbeat(owned=everything).error_code == E.UNKNOWN_MEMBER_ID
    settle(b)
    assert sorted(b.partitions("t")) == [0, 1, 2, 3]


def test_a_target_computed_on_a_worker_thread_is_written_when_it_is_applied(tmp_path, monkeypatch):
    import kafkagroup.coordinator.consumer.heartbeat as heartbeat
    monkeypatch.setattr(heartbeat, "INLINE_TARGET_COST", 0)     # every target after the first is offloaded
    jobs = []
    r = Restartable(tmp_path / "groups.db", {"t": 4})
    r.coord.shutdown()
    r.coord = GroupCoordinator(r.config, clock=r.clock, store=r.path, topics=r.view, enable_offset_expiration=False,
                               target_offload=lambda job, done: jobs.append((job, done)))
    a = Member(r.coord, "g", "A", topics=["t"])
    settle(a)
    b = Member(r.coord, "g", "B", topics=["t"])
    b.heartbeat()
    assert len(jobs) == 1
    job, done = jobs.pop()
    done(job())                                    # back on the coordinator's thread, outside any request
    target_epoch = describe(r.coord).assignment_epoch
    r._start = lambda: GroupCoordinator(r.config, clock=r.clock, store=r.path, topics=r.view,  # type: ignore
                                        enable_offset_expiration=False)
    r.restart(a, b)
    assert describe(r.coord).assignment_epoch == target_epoch == describe(r.coord).group_epoch


def test_an_unreadable_row_is_refused_naming_the_file_group_and_member(tmp_path):
    from kafkagroup.coordinator.errors import StoreError
    r = Restartable(tmp_path / "groups.db", {"t": 2})
    a = Member(r.coord, "g", "A", topics=["t"])
    settle(a)
    r.coord.shutdown()
    with sqlite3.connect(r.path) as db:
        db.execute("UPDATE consumer_members SET assigned = '{\"not-a-uuid\": [0]}'")
    with pytest.raises(StoreError, match=r"groups\.db.*consumer group g, member A.*not-a-uuid"):
        r._start()
