"""Spec §6.9 error reactions of the member beyond the K scenarios: unexpected JoinGroup/SyncGroup errors,
exceptions from assignor plug-ins, OffsetCommit error classes, and a commit failure racing an in-flight round.

The member talks to a ScriptedTransport (client_support) and each test answers its requests as Kafka's
``MockClient`` does in ``ConsumerCoordinatorTest``.
"""
from __future__ import annotations

import pytest

from client_support import MockAssignor, join_error, join_ok, subscription_bytes, sync_error, sync_ok, tp
from kafkagroup.client import MemberState, RebalanceProtocol, UnexpectedCoordinatorError
from kafkagroup.coordinator.errors import ErrorCode as E

T1P = tp("test1", 0)
BACKOFF = 100   # retry.backoff.ms default


# ------------------------------------------------------------- unexpected JoinGroup / SyncGroup errors
@pytest.mark.parametrize("code", [E.UNKNOWN_SERVER_ERROR, E.UNSUPPORTED_VERSION, E.KAFKA_STORAGE_ERROR])
def test_unexpected_join_error_surfaces_from_poll_and_the_member_rejoins(scripted, clock, code):
    member, transport, rec = scripted()
    member.poll()
    transport.answer("join_group", join_error(code))
    assert member.fatal_error is None and member.alive          # not fatal (only 82/23/26/24/30/81 are)
    assert member.rejoin_pending
    with pytest.raises(UnexpectedCoordinatorError, match="JoinGroup") as info:
        member.poll()                                            # "other -> KafkaException" from poll()
    assert info.value.code is code and info.value.api == "JoinGroup"
    member.poll()                                                # raised once only
    assert transport.pending("join_group") == []                 # still inside retry.backoff.ms
    clock.advance(BACKOFF - 1)
    assert transport.pending("join_group") == []
    clock.advance(1)
    assert len(transport.pending("join_group")) == 1             # the rejoin flag stayed set


def test_unexpected_sync_error_surfaces_from_poll_and_the_member_rejoins_with_its_id(scripted, clock):
    member, transport, rec = scripted()
    member.poll()
    transport.answer("join_group", join_ok(4, "m-1", "leader", "range"))
    transport.answer("sync_group", sync_error(E.UNKNOWN_SERVER_ERROR))
    assert member.fatal_error is None and member.alive
    with pytest.raises(UnexpectedCoordinatorError, match="SyncGroup") as info:
        member.poll()
    assert info.value.code is E.UNKNOWN_SERVER_ERROR
    clock.advance(BACKOFF)
    rejoin = transport.pending("join_group")
    assert len(rejoin) == 1 and rejoin[0].request.member_id == "m-1"   # generation and member id kept
    transport.answer("join_group", join_ok(5, "m-1", "leader", "range"))
    transport.answer("sync_group", sync_ok([T1P], "range"))
    assert member.state is MemberState.STABLE and member.assignment == {T1P}


def test_leader_sync_error_after_assignment_is_retried(scripted, clock):
    assignor = MockAssignor([RebalanceProtocol.EAGER])
    assignor.prepared = {"m": [T1P]}
    member, transport, rec = scripted(strategy=[assignor])
    member.poll()
    transport.answer("join_group", join_ok(1, "m", "m", "mock", [("m", None, subscription_bytes(["test1"]))]))
    transport.answer("sync_group", sync_error(E.UNKNOWN_SERVER_ERROR))
    assert member.fatal_error is None
    clock.advance(BACKOFF)
    transport.answer("join_group", join_ok(2, "m", "m", "mock", [("m", None, subscription_bytes(["test1"]))]))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.state is MemberState.STABLE and len(assignor.calls) == 2
    assert [type(e) for e in member.errors] == [UnexpectedCoordinatorError]


@pytest.mark.parametrize("code", [E.FENCED_INSTANCE_ID, E.INVALID_GROUP_ID, E.GROUP_MAX_SIZE_REACHED])
def test_listed_join_errors_stay_fatal(scripted, code):
    member, transport, rec = scripted(group_instance_id="i-1")
    member.poll()
    transport.answer("join_group", join_error(code))
    assert member.fatal_error is not None and member.fatal_error.code is code


# ------------------------------------------------------------- exceptions from assignor plug-ins (§6.5, §6.7)
class _FailingAssignor(MockAssignor):
    def __init__(self, protocols, *, fail_assign=False, fail_on_assignment=False):
        super().__init__(protocols)
        self.fail_assign, self.fail_on_assignment = fail_assign, fail_on_assignment

    def assign(self, cluster, members, **kw):
        if self.fail_assign:
            raise KeyError("bad member")
        return super().assign(cluster, members, **kw)

    def on_assignment(self, assignment, generation):
        super().on_assignment(assignment, generation)
        if self.fail_on_assignment:
            raise RuntimeError("onAssignment failed")


def test_on_assignment_exception_is_collected_and_rethrown_after_every_step(scripted, protocol):
    """§6.7 step 5 / K04: invokeOnAssignment keeps the exception; the assignment is still applied and
    onPartitionsAssigned still runs; the first error comes out of the next poll, wrapped."""
    from kafkagroup.client import RebalanceCallbackError

    assignor = _FailingAssignor([RebalanceProtocol[protocol]], fail_on_assignment=True)
    member, transport, rec = scripted(strategy=[assignor])
    member.poll()
    transport.answer("join_group", join_ok(1, "m", "other", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))          # must not raise into the transport
    assert member.state is MemberState.STABLE and member.assignment == {T1P}
    assert rec.assigned == [frozenset({T1P})] and assignor.on_assignment_calls == [((T1P,), 1)]
    with pytest.raises(RebalanceCallbackError, match="User rebalance callback throws an error") as info:
        member.poll()
    assert isinstance(info.value.__cause__, RuntimeError) and "onAssignment failed" in str(info.value.__cause__)


def test_revoke_callback_error_wins_over_a_later_on_assignment_error(scripted):
    from kafkagroup.client import RebalanceCallbackError

    assignor = _FailingAssignor([RebalanceProtocol.COOPERATIVE])
    member, transport, rec = scripted(topics=["test1", "test2"], strategy=[assignor])
    member.poll()
    transport.answer("join_group", join_ok(1, "m", "other", "mock"))
    transport.answer("sync_group", sync_ok([tp("test2", 0)], "mock"))
    member.request_rejoin()
    member.poll()
    rec.fail_on = {"revoked"}
    assignor.fail_on_assignment = True
    transport.answer("join_group", join_ok(2, "m", "other", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))          # revokes test2-0, then onAssignment raises
    assert member.assignment == {T1P} and rec.assigned[-1] == {T1P}
    with pytest.raises(RebalanceCallbackError) as info:
        member.poll()
    assert "revoke callback failed" in str(info.value.__cause__)


def test_plugin_assign_exception_fails_the_join_and_the_leader_rejoins(scripted, clock):
    """AbstractCoordinator.onJoinLeader: any RuntimeException of onLeaderElected fails the join future;
    joinGroupIfNeeded requests a rejoin and rethrows it from poll()."""
    assignor = _FailingAssignor([RebalanceProtocol.EAGER], fail_assign=True)
    member, transport, rec = scripted(strategy=[assignor])
    member.poll()
    members = [("m", None, subscription_bytes(["test1"]))]
    transport.answer("join_group", join_ok(1, "m", "m", "mock", members))   # must not raise into the transport
    assert transport.pending("sync_group") == []
    assert member.rejoin_pending and member.fatal_error is None
    with pytest.raises(KeyError, match="bad member"):
        member.poll()
    clock.advance(BACKOFF)
    assert len(transport.pending("join_group")) == 1                # the round was failed, not left stuck
    assignor.fail_assign, assignor.prepared = False, {"m": [T1P]}
    transport.answer("join_group", join_ok(1, "m", "m", "mock", members))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.state is MemberState.STABLE and member.assignment == {T1P}
