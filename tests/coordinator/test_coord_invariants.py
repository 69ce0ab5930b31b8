"""Random request sequences against one group: the coordinator's invariants hold after every step.

Invariants (spec §1): the O(1) counters equal a recount; Empty has no members; no member is parked in
JoinGroup outside PreparingRebalance nor in SyncGroup outside CompletingRebalance; pending-sync members are
members; the leader is a member iff the group has members; the static map mirrors the members; a join
timer runs exactly while PreparingRebalance; no request ever ends in UNKNOWN_SERVER_ERROR (the sequences
here are all legal client behaviour).  Durability (DESIGN §10): the coordinator runs on a file store and is
restarted at random; what OffsetFetch returns is exactly the commits it acknowledged, before and after every
restart.  Plus config parsing.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from coord_harness import RANGE, RANGE_RR, Harness

from kafkagroup.coordinator import CoordinatorConfig, ErrorCode, GroupState, MemberIdentity
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.structs import TopicPartition

E = ErrorCode
S = GroupState
PROTOCOLS = [RANGE, RANGE_RR, [("roundrobin", b""), ("range", b"")]]


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # a RAM-backed directory when there is one: the store is reopened hundreds of times per run
        shm = Path("/dev/shm")
        self.dir = tempfile.mkdtemp(prefix="coord-invariants-", dir=shm if shm.is_dir() else None)
        self.store_path = str(Path(self.dir) / "groups.db")
        self.h = Harness("S", store=self._open_store(), **{"group.max.size": 5})
        self.known: list[str] = []          # member ids handed out (current or stale)
        self.replies: list = []
        self.acked: dict[TopicPartition, int] = {}   # the last acknowledged commit of every partition

    def _open_store(self) -> GroupStore:
        # synchronous=NORMAL: WAL commits survive the end of the process (what a restart tests) without an
        # fsync per commit, which would make this test disk-bound
        return GroupStore(self.store_path, synchronous="NORMAL")

    def _stop(self) -> None:
        self.h.coord.shutdown()
        self.h.coord.store.close()

    def teardown(self) -> None:
        self._stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _record(self, reply) -> None:
        self.replies.append(reply)
        if reply.done():
            r = reply.result()
            assert r.error_code != E.UNKNOWN_SERVER_ERROR, r
            if r.member_id:
                self.known.append(r.member_id)

    @rule(protocols=st.sampled_from(PROTOCOLS), version=st.sampled_from([3, 9]),
          session=st.sampled_from([100, 500, 2000]))
    def join_new(self, protocols, version, session) -> None:
        self._record(self.h.join("", protocols=protocols, version=version, session=session, rebalance=300))

    @rule(instance=st.sampled_from(["i0", "i1", "i2"]), protocols=st.sampled_from(PROTOCOLS))
    def join_static_unknown_id(self, instance, protocols) -> None:
        self._record(self.h.join("", instance=instance, protocols=protocols, session=1000, rebalance=300))

    @rule(data=st.data(), protocols=st.sampled_from(PROTOCOLS))
    def rejoin(self, data, protocols) -> None:
        if not self.known:
            return
        member_id = data.draw(st.sampled_from(self.known))
        g = self.h.coord.group("groupId")
        member = g.members.get(member_id) if g else None
        instance = member.group_instance_id if member else None
        self._record(self.h.join(member_id, instance=instance, protocols=protocols, session=1000, rebalance=300))

    @rule(data=st.data(), with_assignment=st.booleans())
    def sync(self, data, with_assignment) -> None:
        g = self.h.coord.group("groupId")
        if not self.known or g is None:
            return
        member_id = data.draw(st.sampled_from(self.known))
        member = g.members.get(member_id)
        assignments = [(m, m.encode()) for m in g.members] if with_assignment else []
        reply = self.h.sync(member_id, g.generation_id, assignments,
                            instance=member.group_instance_id if member else None)
        if reply.done():
            assert reply.result().error_code != E.UNKNOWN_SERVER_ERROR

    @rule(data=st.data())
    def heartbeat(self, data) -> None:
        g = self.h.coord.group("groupId")
        if not self.known or g is None:
            return
        member_id = data.draw(st.sampled_from(self.known))
        assert self.h.heartbeat(member_id, g.generation_id) != E.UNKNOWN_SERVER_ERROR

    @rule(data=st.data())
    def leave(self, data) -> None:
        if not self.known:
            return
        member_id = data.draw(st.sampled_from(self.known))
        r = self.h.leave(MemberIdentity(member_id))
        assert r.error_code == E.NONE or r.error_code == E.COORDINATOR_NOT_AVAILABLE

    @rule(ms=st.sampled_from([1, 49, 50, 100, 300, 501, 1000, 2500]))
    def advance(self, ms) -> None:
        self.h.advance(ms)

    @rule(data=st.data(), as_member=st.booleans(), partition=st.integers(0, 2), offset=st.integers(0, 1000))
    def commit(self, data, as_member, partition, offset) -> None:
        g = self.h.coord.group("groupId")
        member_id = data.draw(st.sampled_from(self.known)) if self.known and as_member else ""
        generation = g.generation_id if (g is not None and member_id) else -1
        codes = self.h.commit({("t", partition): offset}, member_id=member_id, generation=generation)
        assert E.UNKNOWN_SERVER_ERROR not in codes.values()
        for tp, code in codes.items():
            if code == E.NONE:
                self.acked[tp] = offset

    @rule()
    def restart(self) -> None:
        """The process stops and a new coordinator opens the same file (the clock keeps running)."""
        self._stop()
        self.h = Harness("S", store=self._open_store(), clock=self.h.clock, **{"group.max.size": 5})

    @invariant()
    def offsets_are_exactly_the_acknowledged_commits(self) -> None:
        fetched = self.h.fetch(None).offsets()
        assert {tp: p.committed_offset for tp, p in fetched.items()} == self.acked

    @invariant()
    def group_invariants(self) -> None:
        g = self.h.coord.group("groupId")
        if g is None:
            return
        members = g.members.values()
        assert g.num_members_awaiting_join == sum(m.awaiting_join is not None for m in members)
        counts: dict[str, int] = {}
        for m in members:
            for name, _ in m.protocols:
                counts[name] = counts.get(name, 0) + 1
        assert g.supported_protocols == counts
        assert g.static_members == {m.group_instance_id: m.member_id for m in members if m.is_static}
        assert all(m.member_id == mid for mid, m in g.members.items())
        assert (g.leader_id in g.members) if g.members else g.leader_id is None
        assert g.pending_sync_members <= set(g.members)
        assert not (set(g.pending_members) & set(g.members))
        if g.state is S.EMPTY:
            assert not g.members
        if g.state is not S.PREPARING_REBALANCE:
            assert g.num_members_awaiting_join == 0
            assert g.join_timer is None
        else:
            assert g.join_timer is not None
        if g.state is not S.COMPLETING_REBALANCE:
            assert all(m.awaiting_sync is None for m in members)
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE):
            assert g.protocol_name is not None and all(
                g.protocol_name in m.protocol_names() for m in members)
        for reply in self.replies:
            assert not (reply.done() and reply.superseded())


GroupMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestGroupMachine = GroupMachine.TestCase


def test_config_keys_and_underscore_kwargs() -> None:
    c = CoordinatorConfig.from_mapping({"group.max.size": 4, "offsets.retention.minutes": 10},
                                       group_initial_rebalance_delay_ms=0)
    assert (c.group_max_size, c.offsets_retention_ms, c.group_initial_rebalance_delay_ms) == (4, 600_000, 0)
    assert CoordinatorConfig().offsets_retention_ms == 10_080 * 60 * 1000
    with pytest.raises(ValueError, match="unknown coordinator config 'group.max.sise'"):
        CoordinatorConfig.from_mapping({"group.max.sise": 4})
    with pytest.raises(ValueError, match="group.max.size must be at least 1"):
        CoordinatorConfig(group_max_size=0)
    with pytest.raises(ValueError, match="must be an integer"):
        CoordinatorConfig.from_mapping({"group.max.size": "4"})
