"""Harness for the coordinator scenarios of spec §7 (CFG-S, CFG-J and the fixtures of §7.2).

A plain module, not a conftest.py: several test folders of the repository would otherwise share the
module name ``conftest`` in rootdir import mode.  Test modules import the fixtures ``tie``, ``hs`` and
``hj`` from here explicitly.

Every scenario runs twice, with timers of equal deadlines fired first-in-first-out and last-in-first-out
(``ManualClock(tie_break=...)``): the spec's scripts must not depend on that order (§7.1).
"""
from __future__ import annotations

from typing import Any, Sequence

import pytest

from kafkagroup.coordinator import (
    ClassicGroup, Deferred, ErrorCode, GroupCoordinator, GroupState, HeartbeatRequest, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ManualClock, MemberIdentity, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafkagroup.structs import TopicPartition

E = ErrorCode
S = GroupState
RANGE = [("range", b"")]
RANGE_RR = [("range", b""), ("roundrobin", b"")]

CFG_S = {
    "group.initial.rebalance.delay.ms": 50,
    "group.min.session.timeout.ms": 10,
    "group.max.session.timeout.ms": 600_000,
    "group.max.size": 4,
    "offsets.topic.num.partitions": 2,
}
CFG_J = {
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 10,
    "group.max.session.timeout.ms": 600_000,
}


class Harness:
    """A coordinator on a manual clock plus request helpers with the §7.1 member defaults."""

    def __init__(self, cfg: str = "S", *, tie_break: str = "fifo", store: Any = ":memory:",
                 owned: Sequence[int] | None = None, clock: ManualClock | None = None, **overrides: Any) -> None:
        self.clock = clock or ManualClock(tie_break=tie_break)  # type: ignore[arg-type]
        if cfg == "S":
            config, self.group_id = dict(CFG_S), "groupId"
            owned = [0] if owned is None else owned
        else:
            config, self.group_id = dict(CFG_J), "group-id"
        config.update(overrides)
        self.coord = GroupCoordinator(config, clock=self.clock, store=store, owned_partitions=owned,
                                      enable_offset_expiration=False)

    # ------------------------------------------------------------ inspection
    @property
    def now(self) -> int:
        return self.clock.now_ms()

    @property
    def group(self) -> ClassicGroup:
        g = self.coord.group(self.group_id)
        assert g is not None, f"group {self.group_id} does not exist"
        return g

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    def advance_to(self, t: int) -> None:
        self.clock.advance_to(t)

    # -------------------------------------------------------------- requests
    def join(self, member_id: str = "", *, instance: str | None = None, protocols: Sequence[tuple[str, bytes]] = RANGE,
             session: int = 500, rebalance: int = 500, version: int = 9, group: str | None = None,
             protocol_type: str = "consumer", client_id: str = "client") -> Deferred[JoinGroupResponse]:
        return self.coord.join_group(JoinGroupRequest(
            self.group_id if group is None else group, member_id, instance, protocol_type, list(protocols),
            session, rebalance, None, client_id, "/127.0.0.1", version))

    def join_v3(self, member_id: str = "", **kw: Any) -> Deferred[JoinGroupResponse]:
        return self.join(member_id, version=3, **kw)

    def two_step_join(self, **kw: Any) -> tuple[str, Deferred[JoinGroupResponse]]:
        first = self.join("", **kw).result()
        assert first.error_code == E.MEMBER_ID_REQUIRED, first
        return first.member_id, self.join(first.member_id, **kw)

    def sync(self, member_id: str, generation: int, assignments: Any = (), *, instance: str | None = None,
             protocol_type: str | None = None, protocol_name: str | None = None,
             group: str | None = None) -> Deferred[SyncGroupResponse]:
        return self.coord.sync_group(SyncGroupRequest(
            self.group_id if group is None else group, generation, member_id, instance, protocol_type,
            protocol_name, assignments))

    def heartbeat(self, member_id: str, generation: int, *, instance: str | None = None,
                  group: str | None = None) -> ErrorCode:
        return self.coord.heartbeat(HeartbeatRequest(
            self.group_id if group is None else group, generation, member_id, instance)).error_code

    def leave(self, *identities: MemberIdentity | str, group: str | None = None) -> LeaveGroupResponse:
        members = [MemberIdentity(i) if isinstance(i, str) else i for i in identities]
        return self.coord.leave_group(LeaveGroupRequest(self.group_id if group is None else group, members))

    def commit(self, offsets: dict, *, member_id: str = "", generation: int = -1, instance: str | None = None,
               group: str | None = None, retention_time_ms: int = -1) -> dict[TopicPartition, ErrorCode]:
        return self.commit_response(offsets, member_id=member_id, generation=generation, instance=instance,
                                    group=group, retention_time_ms=retention_time_ms).errors()

    def commit_response(self, offsets: dict, *, member_id: str = "", generation: int = -1,
                        instance: str | None = None, group: str | None = None,
                        retention_time_ms: int = -1) -> OffsetCommitResponse:
        return self.coord.offset_commit(OffsetCommitRequest.of(
            self.group_id if group is None else group, offsets, generation_id=generation, member_id=member_id,
            group_instance_id=instance, retention_time_ms=retention_time_ms,
            version=8 if retention_time_ms == -1 else 4))        # only v2-v4 carry a retention time

    def fetch(self, partitions: Sequence[tuple[str, int]] | None = None, *, group: str | None = None) -> OffsetFetchResponse:
        return self.coord.offset_fetch(OffsetFetchRequest.of(self.group_id if group is None else group, partitions))

    # -------------------------------------------------------------- fixtures
    def fx_single(self) -> str:
        """FX-single: A two-step joins at t=0, generation 1 at t=50, syncs -> Stable."""
        a, reply = self.two_step_join()
        self.advance(50)
        r = reply.result()
        assert (r.error_code, r.generation_id, r.leader) == (E.NONE, 1, a)
        s = self.sync(a, 1, [(a, b"A")]).result()
        assert s.error_code == E.NONE and self.group.state is S.STABLE
        return a

    def fx_two(self) -> tuple[str, str]:
        """FX-two: A leader, B follower, Stable at generation 2 (t=50)."""
        a = self.fx_single()
        b_reply = self.join_v3("")
        a_reply = self.join(a)
        ra, rb = a_reply.result(), b_reply.result()
        assert (ra.error_code, ra.generation_id, ra.leader) == (E.NONE, 2, a)
        assert (rb.error_code, rb.generation_id, rb.leader) == (E.NONE, 2, a)
        b = rb.member_id
        assert self.sync(a, 2, [(a, b"a"), (b, b"b")]).result().error_code == E.NONE
        assert self.group.state is S.STABLE
        sb = self.sync(b, 2).result()
        assert (sb.error_code, sb.assignment) == (E.NONE, b"b")
        return a, b

    def fx_follower_parked(self) -> tuple[str, str, Deferred[SyncGroupResponse]]:
        """FX-parked: A leader, B follower joined at generation 2 (CompletingRebalance); B's SyncGroup is
        parked until the leader's arrives. Returns (a, b, b's sync reply)."""
        a = self.fx_single()
        b_reply = self.join_v3("")
        assert self.join(a).result().generation_id == 2
        b = b_reply.result().member_id
        b_sync = self.sync(b, 2)
        assert not b_sync.done() and self.group.state is S.COMPLETING_REBALANCE
        return a, b, b_sync

    def fx_static(self, *, session: int = 500, rebalance: int = 500) -> tuple[str, str]:
        """FX-static: static leader L ("leader") and follower F ("follower"), Stable at generation 1."""
        lr = self.join("", instance="leader", protocols=RANGE_RR, session=session, rebalance=rebalance)
        fr = self.join("", instance="follower", protocols=RANGE_RR, session=session, rebalance=rebalance)
        delay = self.coord.config.group_initial_rebalance_delay_ms
        self.advance(delay)
        assert not lr.done() and not fr.done()  # extended: F was added during the initial delay
        self.advance(delay)
        l, f = lr.result(), fr.result()
        assert (l.error_code, l.generation_id, l.protocol_name, l.leader) == (E.NONE, 1, "range", l.member_id)
        assert {m.group_instance_id for m in l.members} == {"leader", "follower"}
        assert f.members == [] and f.leader == l.member_id
        assert l.member_id.startswith("leader-") and f.member_id.startswith("follower-")
        assert self.sync(l.member_id, 1, [(l.member_id, b"1"), (f.member_id, b"2")], instance="leader").result().error_code == E.NONE
        sf = self.sync(f.member_id, 1, instance="follower").result()
        assert (sf.error_code, sf.assignment, sf.protocol_type, sf.protocol_name) == (E.NONE, b"2", "consumer", "range")
        assert self.group.state is S.STABLE
        return l.member_id, f.member_id

    def fx_pending(self) -> tuple[str, str, str, Deferred, Deferred]:
        """FX-pending: A and B parked in PreparingRebalance, P pending (session 100)."""
        a, b = self.fx_two()
        a_reply = self.join(a)
        assert not a_reply.done() and self.group.state is S.PREPARING_REBALANCE
        first = self.join("", session=100).result()
        assert first.error_code == E.MEMBER_ID_REQUIRED
        p = first.member_id
        b_reply = self.join(b)
        assert not b_reply.done()
        g = self.group
        assert g.state is S.PREPARING_REBALANCE and len(g.members) == 2 and set(g.pending_members) == {p}
        return a, b, p, a_reply, b_reply

    def fx_join_n(self, n: int) -> list[tuple[str, JoinGroupResponse]]:
        """FX-joinN: n two-step joins at t=0; generation 1 completes at t=550; leader = first member."""
        joined = [self.two_step_join() for _ in range(n)]
        self.advance(50)
        assert not any(r.done() for _, r in joined)
        self.advance(500)
        out = []
        for member_id, reply in joined:
            r = reply.result()
            assert (r.error_code, r.generation_id, r.leader) == (E.NONE, 1, joined[0][0])
            out.append((member_id, r))
        assert self.now == 550
        return out


@pytest.fixture(params=["fifo", "lifo"])
def tie(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def hs(tie: str) -> Harness:
    """CFG-S harness."""
    return Harness("S", tie_break=tie)


@pytest.fixture
def hj(tie: str) -> Harness:
    """CFG-J harness."""
    return Harness("J", tie_break=tie)
