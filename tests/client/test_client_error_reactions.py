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
