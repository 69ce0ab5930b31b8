"""Spec §6.9 error reactions of the member beyond the K scenarios: unexpected JoinGroup/SyncGroup errors,
exceptions from assignor plug-ins, OffsetCommit error classes, and a commit failure racing an in-flight round.

The member talks to a ScriptedTransport (client_support) and each test answers its requests as Kafka's
``MockClient`` does in ``ConsumerCoordinatorTest``.
"""
from __future__ import annotations

import pytest

from client_support import MockAssignor, join_error, join_ok, subscription_bytes, sync_error, sync_ok, tp
from kafkagroup.client import MemberState, RebalanceProtocol, UnexpectedCoordinatorError
from kafkagroup.messages.error_codes import ErrorCode as E

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


# ------------------------------------------------------------- OffsetCommit error classes (§6.9)
def _commit_response(code, partitions=(T1P,)):
    from kafkagroup.messages.api import (
        OffsetCommitResponse,
        OffsetCommitResponsePartition,
        OffsetCommitResponseTopic,
    )

    return OffsetCommitResponse([OffsetCommitResponseTopic(p.topic, [OffsetCommitResponsePartition(p.partition, code)])
                                 for p in partitions])


def _stable_member(scripted, **kw):
    member, transport, rec = scripted(**kw)
    member.poll()
    transport.answer("join_group", join_ok(3, "m", "other", "range"))
    transport.answer("sync_group", sync_ok([T1P], "range"))
    assert member.state is MemberState.STABLE
    return member, transport, rec


@pytest.mark.parametrize("code", [E.COORDINATOR_LOAD_IN_PROGRESS, E.UNKNOWN_TOPIC_OR_PARTITION,
                                  E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.REQUEST_TIMED_OUT])
def test_retriable_commit_errors_are_retried_after_backoff(scripted, clock, code):
    member, transport, rec = _stable_member(scripted)
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append)
    transport.answer("offset_commit", _commit_response(code))
    assert outcome == []                                          # not reported: retried
    clock.advance(BACKOFF - 1)
    assert transport.pending("offset_commit") == []
    clock.advance(1)
    retry = transport.pending("offset_commit")
    assert len(retry) == 1 and retry[0].request.generation_id == 3
    transport.answer("offset_commit", _commit_response(E.NONE))
    assert outcome == [None]
    assert member.generation.generation_id == 3 and not member.rejoin_pending   # nothing else happened


@pytest.mark.parametrize("via", ["argument", "config"])
def test_retriable_commit_error_gives_up_at_the_timeout(scripted, clock, via):
    from kafkagroup.client import CommitFailedError, OffsetCommitError

    if via == "config":
        member, transport, rec = _stable_member(scripted, default_api_timeout_ms=350)
        kw = {}
    else:
        member, transport, rec = _stable_member(scripted)
        kw = {"timeout_ms": 350}
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append, **kw)
    for _ in range(4):                                            # t = 0, 100, 200, 300
        transport.answer("offset_commit", _commit_response(E.COORDINATOR_LOAD_IN_PROGRESS))
        clock.advance(BACKOFF)
    assert transport.pending("offset_commit") == [] and len(transport.requests("offset_commit")) == 4
    assert len(outcome) == 1 and isinstance(outcome[0], OffsetCommitError)
    assert not isinstance(outcome[0], CommitFailedError)
    assert outcome[0].retriable and outcome[0].code is E.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize("code", [E.OFFSET_METADATA_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE,
                                  E.GROUP_AUTHORIZATION_FAILED, E.TOPIC_AUTHORIZATION_FAILED,
                                  E.UNKNOWN_SERVER_ERROR])
def test_non_retriable_commit_errors_are_surfaced_as_they_are(scripted, clock, code):
    """12/28 'raise the error to the user'; 29/30 authorization; anything else 'Unexpected error in commit'.
    None of them is a CommitFailedException, none is retried, the generation is kept."""
    from kafkagroup.client import CommitFailedError, OffsetCommitError

    member, transport, rec = _stable_member(scripted)
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append)
    transport.answer("offset_commit", _commit_response(code))
    assert len(outcome) == 1 and isinstance(outcome[0], OffsetCommitError)
    assert not isinstance(outcome[0], CommitFailedError)
    assert outcome[0].code is code and not outcome[0].retriable
    clock.advance(10 * BACKOFF)
    assert transport.pending("offset_commit") == []
    assert member.generation.generation_id == 3 and member.state is MemberState.STABLE


def test_retriable_error_on_one_partition_retries_the_whole_commit(scripted, clock):
    member, transport, rec = _stable_member(scripted, topics=["test1", "test2"])
    t2p = tp("test2", 0)
    outcome = []
    member.commit_offsets({T1P: 1, t2p: 2}, outcome.append)
    from kafkagroup.messages.api import (
        OffsetCommitResponse,
        OffsetCommitResponsePartition,
        OffsetCommitResponseTopic,
    )
    transport.answer("offset_commit", OffsetCommitResponse([
        OffsetCommitResponseTopic("test1", [OffsetCommitResponsePartition(0, E.NONE)]),
        OffsetCommitResponseTopic("test2", [OffsetCommitResponsePartition(0, E.NOT_COORDINATOR)]),
    ]))
    clock.advance(BACKOFF)
    retry = transport.pending("offset_commit")[0].request
    assert {(t.name, p.partition_index, p.committed_offset) for t in retry.topics for p in t.partitions} == {
        ("test1", 0, 1), ("test2", 0, 2)}


def test_illegal_generation_commit_keeps_member_id_and_fails_the_commit(scripted):
    from kafkagroup.client import CommitFailedError

    member, transport, rec = _stable_member(scripted)
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append)
    transport.answer("offset_commit", _commit_response(E.ILLEGAL_GENERATION))
    assert isinstance(outcome[0], CommitFailedError)
    assert (member.generation.generation_id, member.generation.member_id) == (-1, "m") and member.rejoin_pending


def test_fenced_commit_with_unchanged_generation_is_fatal(scripted):
    from kafkagroup.client import FatalMemberError

    member, transport, rec = _stable_member(scripted, group_instance_id="i-1")
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append)
    transport.answer("offset_commit", _commit_response(E.FENCED_INSTANCE_ID))
    assert isinstance(outcome[0], FatalMemberError) and member.fatal_error is outcome[0]


# ------------------------------------------------------------- a commit error racing the join round
@pytest.mark.parametrize("code, keeps_id", [(E.ILLEGAL_GENERATION, True), (E.UNKNOWN_MEMBER_ID, False)])
def test_commit_error_while_sync_in_flight_fails_the_round_once(scripted, clock, code, keeps_id):
    """The commit of generation 3 is answered 22/25 after the member's JoinGroup of generation 4 succeeded:
    the commit resets the generation (22 keeps the member id); the SyncGroup answer that follows only fails
    the round (Kafka: 'generation/state was modified ... before the sync group response was received') and
    must not reset a second time -- dropping the kept id would leave the old id behind in the group."""
    from kafkagroup.client import CommitFailedError

    member, transport, rec = _stable_member(scripted)
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append)                 # generation 3, in flight
    member.request_rejoin()
    clock.advance(0)
    transport.answer("join_group", join_ok(4, "m", "other", "range"))
    assert member.state is MemberState.COMPLETING_REBALANCE
    transport.answer("offset_commit", _commit_response(code))
    assert isinstance(outcome[0], CommitFailedError)
    assert member.generation.member_id == ("m" if keeps_id else "")
    transport.answer("sync_group", sync_ok([T1P], "range"))
    assert member.generation.member_id == ("m" if keeps_id else "")
    clock.advance(0)
    rejoin = transport.pending("join_group")
    assert len(rejoin) == 1 and rejoin[0].request.member_id == ("m" if keeps_id else "")


def test_commit_error_while_join_in_flight_rejoins_with_the_kept_id(scripted, clock):
    member, transport, rec = _stable_member(scripted)
    outcome = []
    member.commit_offsets({T1P: 7}, outcome.append)
    member.request_rejoin()
    clock.advance(0)
    transport.answer("offset_commit", _commit_response(E.ILLEGAL_GENERATION))   # generation unchanged: reset
    transport.answer("join_group", join_ok(4, "m", "other", "range"))           # answer of the old round
    assert transport.pending("sync_group") == []
    clock.advance(0)
    rejoin = transport.pending("join_group")
    assert len(rejoin) == 1 and rejoin[0].request.member_id == "m"
    transport.answer("join_group", join_ok(4, "m", "other", "range"))
    transport.answer("sync_group", sync_ok([T1P], "range"))
    assert member.state is MemberState.STABLE and member.generation.member_id == "m"
