"""Static membership through raw requests (kio), where timing is ours: a static member restarting within its
session (new member id, no rebalance, same assignment), the old id fenced on every API that carries it, a
static restart with a changed subscription, LeaveGroup batches (by instance id, by member id, fenced, unknown,
duplicates), and JoinGroup at several versions (KIP-814's skip_assignment from v9) -- every answer as both
servers give it."""
from __future__ import annotations

import pytest

from conformance_support import (HEARTBEAT, JOIN, LEAVE, OFFSET_COMMIT, SYNC, describe_group, heartbeat_body,
                                 join_answer, join_body, leave_body, plain, sync_body, wait_group)
from server_wire import body, nested


def commit(wire, group, generation, member, instance=None, offset=1, version=8):
    p = nested(OFFSET_COMMIT, version, "OffsetCommitRequestPartition", partition_index=0, committed_offset=offset,
               committed_leader_epoch=-1, committed_metadata="", commit_timestamp=-1)
    t = nested(OFFSET_COMMIT, version, "OffsetCommitRequestTopic", name="c.one", partitions=(p,))
    answer = wire.request(OFFSET_COMMIT, version, body(
        OFFSET_COMMIT, version, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=instance, retention_time=-1, topics=(t,)))
    return plain(answer.topics[0].partitions[0].error_code)


def leave_answer(answer):
    return plain(answer)


@pytest.mark.parametrize("jv", [5, 7, 9])
def test_static_restart_fencing_and_leave_batches(conformance, jv):
    sv = min(jv - 2, 5)            # SyncGroup version paired with the JoinGroup version
    hv = 4

    def scenario(run):
        group = run.group()
        seen = {}
        a, b, a2 = run.wire(), run.wire(), run.wire()
        protos_a = (("range", b"A-meta"),)
        ja = a.request(JOIN, jv, join_body(jv, group, instance="a", protocols=protos_a))
        seen["a.join"] = join_answer(ja)
        gen, ma = ja.generation_id, ja.member_id
        seen["a.sync"] = a.request(SYNC, sv, sync_body(sv, group, gen, ma, "a", ((ma, b"asg-a"),)))
        # B joins (static): a rebalance; A rejoins after its heartbeat says so.
        b.send(JOIN, jv, join_body(jv, group, instance="b", protocols=(("range", b"B-meta"),)))
        wait_group(a2, group, "PreparingRebalance", assigned=False)
        seen["a.heartbeat"] = a.request(HEARTBEAT, hv, heartbeat_body(hv, group, gen, ma, "a"))
        a.send(JOIN, jv, join_body(jv, group, member_id=ma, instance="a", protocols=protos_a))
        ja, jb = a.receive(), b.receive()
        seen["ab.join"] = [join_answer(ja), join_answer(jb)]
        gen, mb = ja.generation_id, jb.member_id
        leader, follower = (a, b) if ja.leader == ma else (b, a)
        lid, lins, fid, fins = (ma, "a", mb, "b") if leader is a else (mb, "b", ma, "a")
        leader.send(SYNC, sv, sync_body(sv, group, gen, lid, lins, ((ma, b"asg-a"), (mb, b"asg-b"))))
        follower.send(SYNC, sv, sync_body(sv, group, gen, fid, fins))
        seen["ab.sync"] = sorted([plain(leader.receive()), plain(follower.receive())], key=lambda s: s["assignment"])
        seen["stable"] = describe_group(a2, group)

        # A restarts within its session: member id "" with instance "a", same protocols.
        ra = a2.request(JOIN, jv, join_body(jv, group, instance="a", protocols=protos_a))
        seen["a.restart"] = join_answer(ra)
        ma2 = ra.member_id
        seen["a.restart.sync"] = a2.request(SYNC, sv, sync_body(sv, group, ra.generation_id, ma2, "a"))
        seen["after_restart"] = describe_group(a2, group)
        # The old id is fenced everywhere it is presented with the instance id.
        seen["old.heartbeat"] = a.request(HEARTBEAT, hv, heartbeat_body(hv, group, gen, ma, "a"))
        seen["old.sync"] = a.request(SYNC, sv, sync_body(sv, group, gen, ma, "a"))
        seen["old.commit"] = commit(a, group, gen, ma, "a")
        seen["old.join"] = join_answer(a.request(JOIN, jv, join_body(jv, group, member_id=ma, instance="a",
                                                                    protocols=protos_a)))
        seen["new.commit"] = commit(a2, group, ra.generation_id, ma2, "a")
        seen["new.heartbeat"] = a2.request(HEARTBEAT, hv, heartbeat_body(hv, group, ra.generation_id, ma2, "a"))
        # Unknown instance with a member id; a known member id under another instance.
        seen["unknown_instance.heartbeat"] = a.request(HEARTBEAT, hv, heartbeat_body(hv, group, gen, mb, "zz"))
        seen["swapped.heartbeat"] = a.request(HEARTBEAT, hv, heartbeat_body(hv, group, gen, mb, "a"))

        # LeaveGroup v3+ batch: A by instance id with its old member id (fenced), B by instance id with the
        # right id, an unknown instance, an unknown member id, and B again (a duplicate).
        leave = a.request(LEAVE, 4, leave_body(4, group, [(ma, "a"), (mb, "b"), ("", "nobody"),
                                                         ("no-such-member", None), (mb, "b")]))
        seen["leave.batch"] = leave_answer(leave)
        seen["after_leave"] = describe_group(a2, group)
        # A (the new id) leaves by instance id alone.
        seen["leave.instance_only"] = leave_answer(a.request(LEAVE, 4, leave_body(4, group, [("", "a")])))
        seen["after_all_left"] = describe_group(a2, group)
        seen["leave.unknown_group"] = leave_answer(a.request(LEAVE, 4, leave_body(4, run.group("none"),
                                                                                [("x", None), ("", "i")])))
        seen["leave.v1.unknown"] = leave_answer(a.request(LEAVE, 1, leave_body(1, group, member_id="x")))
        return seen

    conformance(scenario, name=f"v{jv}")


def test_static_restart_with_changed_protocols(conformance):
    """A static member restarting while Stable with other metadata for the selected protocol is answered at
    once (current generation, no rebalance); restarting with only a protocol its own current incarnation did
    not list is INCONSISTENT_GROUP_PROTOCOL (the group's protocols are checked before the replacement) and the
    group stays as it was."""
    def scenario(run):
        group = run.group()
        seen = {}
        a, b, c = run.wire(), run.wire(), run.wire()
        ja = a.request(JOIN, 7, join_body(7, group, instance="a", protocols=(("range", b"v1"), ("roundrobin", b"v1"))))
        ma, gen = ja.member_id, ja.generation_id
        a.request(SYNC, 5, sync_body(5, group, gen, ma, "a", ((ma, b"x"),)))
        # Same protocol chosen, other metadata: no rebalance.
        ra = b.request(JOIN, 7, join_body(7, group, instance="a", protocols=(("range", b"v2"),)))
        seen["restart.same_protocol"] = join_answer(ra)
        seen["described.1"] = describe_group(c, group)
        # The restart lists roundrobin only.
        b.send(JOIN, 7, join_body(7, group, instance="a", protocols=(("roundrobin", b"v3"),)))
        seen["restart.other_protocol"] = join_answer(b.receive())
        seen["described.2"] = describe_group(c, group)
        return seen

    conformance(scenario)
