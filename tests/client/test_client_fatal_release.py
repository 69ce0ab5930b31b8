"""What a member that hit a fatal error reports, and when (spec §6.9, §6.10).

A fatal error stops the member, and it stops owning at once: its partitions are reported *lost* when the error
arrives, not when the application later closes it.  A fenced instance id (82) belongs to another process, which
may own the partitions already; after any other fatal error the member sends nothing more, so its session lapses
and the coordinator hands the partitions on.  Lost, not revoked: committing their offsets from a revocation
callback would be wrong.  Java leaves them owned until close() (onLeavePrepare reports them lost then, or revoked
after an OffsetCommit fenced in a stable generation); ``member.assignment`` and the callbacks agree throughout.
"""
from __future__ import annotations

import pytest

from client_support import MockAssignor, heartbeat, join_error, join_ok, sync_error, sync_ok, tp
from kafkagroup.client import MemberState, RebalanceProtocol
from kafkagroup.messages.api import OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic
from kafkagroup.messages.error_codes import ErrorCode as E

T1P = tp("test1", 0)


def _cooperative(scripted):
    """A COOPERATIVE static member: it keeps its partitions through the JoinGroup/SyncGroup of a rebalance."""
    return scripted(group_instance_id="i-1", strategy=[MockAssignor([RebalanceProtocol.COOPERATIVE])])


def _stable(member, transport, generation=1):
    member.poll()
    transport.answer("join_group", join_ok(generation, "m", "other-leader", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.state is MemberState.STABLE and member.assignment == {T1P}


def _closed_after_fatal(member, rec, code):
    """Checks the partitions were reported lost when the error arrived, then closes (which reports nothing more)."""
    assert member.fatal_error is not None and member.fatal_error.code is code
    assert member.assignment == frozenset() and (rec.revoked, rec.lost) == ([], [frozenset({T1P})])
    member.close()
    return rec.revoked, rec.lost


def test_heartbeat_fenced_instance_reports_lost_at_once(scripted, clock):
    """The static instance was replaced by another process holding the same group.instance.id: the
    partitions are the new instance's now."""
    member, transport, rec = _cooperative(scripted)
    _stable(member, transport)
    clock.advance(5_000)
    transport.answer("heartbeat", heartbeat(E.FENCED_INSTANCE_ID))
    assert member.generation.generation_id == -1 and member.state is MemberState.UNJOINED
    revoked, lost = _closed_after_fatal(member, rec, E.FENCED_INSTANCE_ID)
    assert (revoked, lost) == ([], [frozenset({T1P})])
    assert member.assignment == frozenset()


@pytest.mark.parametrize("code", [E.FENCED_INSTANCE_ID, E.GROUP_AUTHORIZATION_FAILED])
def test_fatal_sync_error_reports_lost_at_once(scripted, clock, code):
    member, transport, rec = _cooperative(scripted)
    _stable(member, transport)
    member.request_rejoin()
    clock.advance(0)
    transport.answer("join_group", join_ok(2, "m", "other-leader", "mock"))
    transport.answer("sync_group", sync_error(code))
    assert member.state is MemberState.COMPLETING_REBALANCE     # the rebalance never completed
    revoked, lost = _closed_after_fatal(member, rec, code)
    assert (revoked, lost) == ([], [frozenset({T1P})])


@pytest.mark.parametrize("code", [E.FENCED_INSTANCE_ID, E.INCONSISTENT_GROUP_PROTOCOL, E.GROUP_MAX_SIZE_REACHED])
def test_fatal_join_error_reports_lost_at_once(scripted, clock, code):
    member, transport, rec = _cooperative(scripted)
    _stable(member, transport)
    member.request_rejoin()
    clock.advance(0)
    transport.answer("join_group", join_error(code))
    assert member.state is MemberState.PREPARING_REBALANCE
    revoked, lost = _closed_after_fatal(member, rec, code)
    assert (revoked, lost) == ([], [frozenset({T1P})])


def test_commit_fenced_in_a_stable_generation_reports_lost_at_once(scripted, clock):
    """OffsetCommitResponseHandler raises FENCED_INSTANCE_ID without touching state or generation, and Java's
    onLeavePrepare would later revoke; here the partitions are lost at once, as for every fatal error: the
    instance id is another process's now."""
    member, transport, rec = _cooperative(scripted)
    _stable(member, transport)
    outcome = []
    member.commit_offsets({T1P: 5}, outcome.append)
    transport.answer("offset_commit", OffsetCommitResponse(
        [OffsetCommitResponseTopic(T1P.topic, [OffsetCommitResponsePartition(T1P.partition, E.FENCED_INSTANCE_ID)])]))
    assert outcome and outcome[0] is member.fatal_error
    assert member.state is MemberState.STABLE and member.generation.generation_id == 1
    revoked, lost = _closed_after_fatal(member, rec, E.FENCED_INSTANCE_ID)
    assert (revoked, lost) == ([], [frozenset({T1P})])
