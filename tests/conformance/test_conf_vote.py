"""The vote on a common protocol, through raw JoinGroup requests (kio): which protocol a group settles on
when members list different ones, in different orders, and INCONSISTENT_GROUP_PROTOCOL for a member that
shares none with the group or brings another protocol type -- every answer as both servers give it.

Spec correction (../shared/spec/coordinator.md §2.8: "other states -> protocol "", member metadata/assignment
empty"): Kafka 4 describes a group outside Stable without protocol metadata but with each member's current
assignment (the previous generation's during a rebalance); `serve` answered empty assignments until this
scenario compared it with the broker (DescribeGroups after the third join, in CompletingRebalance)."""
from __future__ import annotations

from conformance_support import (HEARTBEAT, JOIN, SYNC, describe_group, heartbeat_body, wait_group, join_answer, join_body,
                                 sync_body)

V = 5          # JoinGroup v5 (two-step join for dynamic members, group.instance.id), SyncGroup v3, Heartbeat v3


def two_step_join(wire, group, protocols, **kw):
    """MEMBER_ID_REQUIRED, then the join with that id (dynamic member); both answers."""
    first = wire.request(JOIN, V, join_body(V, group, protocols=protocols, **kw))
    second = None
    if first.error_code.value == 79:
        second = wire.request(JOIN, V, join_body(V, group, member_id=first.member_id, protocols=protocols, **kw))
    return first, second


def test_vote_and_inconsistent_group_protocol(conformance):
    def scenario(run):
        group = run.group()
        seen = {}
        a, b, c, d, e = (run.wire() for _ in range(5))
        # A alone: range preferred over roundrobin; it leads generation 1.
        first, joined_a = two_step_join(a, group, (("range", b"A"), ("roundrobin", b"A")))
        seen["a.first"] = join_answer(first)
        seen["a.join"] = join_answer(joined_a)
        ma, gen = joined_a.member_id, joined_a.generation_id
        seen["a.sync"] = a.request(SYNC, 3, sync_body(3, group, gen, ma, assignments=((ma, b"all"),)))
        # B shares no protocol with A; B2 brings another protocol type.
        first, second = two_step_join(b, group, (("sticky", b"B"),))
        seen["b"] = [join_answer(first), second and join_answer(second)]
        first, second = two_step_join(b, group, (("range", b"B2"),), protocol_type="connect")
        seen["b2"] = [join_answer(first), second and join_answer(second)]
        seen["after_refusals"] = describe_group(a, group)
        # C prefers roundrobin, then range: a rebalance; A learns of it by heartbeat and rejoins. One vote
        # each for range and roundrobin (a tie).
        first = c.request(JOIN, V, join_body(V, group, protocols=(("roundrobin", b"C"), ("range", b"C"))))
        seen["c.first"] = join_answer(first)
        mc = first.member_id
        c.send(JOIN, V, join_body(V, group, member_id=mc, protocols=(("roundrobin", b"C"), ("range", b"C"))))
        wait_group(b, group, "PreparingRebalance", assigned=False)   # C's join arrived (another connection)
        seen["a.heartbeat"] = a.request(HEARTBEAT, 3, heartbeat_body(3, group, gen, ma))
        a.send(JOIN, V, join_body(V, group, member_id=ma, protocols=(("range", b"A"), ("roundrobin", b"A"))))
        joined_a, joined_c = a.receive(), c.receive()
        seen["tie"] = [join_answer(joined_a), join_answer(joined_c)]
        gen = joined_a.generation_id
        leader = a if joined_a.leader == ma else c
        others = [w for w in (a, c) if w is not leader]
        leader_id = ma if leader is a else mc
        other_id = mc if leader is a else ma
        leader.send(SYNC, 3, sync_body(3, group, gen, leader_id, protocol_name=joined_a.protocol_name,
                                       assignments=((ma, b"pa"), (mc, b"pc"))))
        others[0].send(SYNC, 3, sync_body(3, group, gen, other_id, protocol_name=joined_a.protocol_name))
        seen["tie.sync"] = sorted([leader.receive(), others[0].receive()], key=lambda s: bytes(s.assignment))
        # D lists roundrobin only: the only protocol every member supports, so everyone's vote goes there.
        first = d.request(JOIN, V, join_body(V, group, protocols=(("roundrobin", b"D"),)))
        md = first.member_id
        d.send(JOIN, V, join_body(V, group, member_id=md, protocols=(("roundrobin", b"D"),)))
        wait_group(b, group, "PreparingRebalance", assigned=False)
        seen["a.heartbeat2"] = a.request(HEARTBEAT, 3, heartbeat_body(3, group, gen, ma))
        seen["c.heartbeat2"] = c.request(HEARTBEAT, 3, heartbeat_body(3, group, gen, mc))
        a.send(JOIN, V, join_body(V, group, member_id=ma, protocols=(("range", b"A"), ("roundrobin", b"A"))))
        c.send(JOIN, V, join_body(V, group, member_id=mc, protocols=(("roundrobin", b"C"), ("range", b"C"))))
        answers = [a.receive(), c.receive(), d.receive()]
        seen["unanimous"] = [join_answer(x) for x in answers]
        # E lists range only: D does not support it.
        first, second = two_step_join(e, group, (("range", b"E"),))
        seen["e"] = [join_answer(first), second and join_answer(second)]
        seen["described"] = describe_group(a, group)
        return seen

    conformance(scenario)
