"""Spec §7.4 client scenarios (K01...K11), parameterized over EAGER / COOPERATIVE like ConsumerCoordinatorTest.

The member talks to a ScriptedTransport (conftest): each test answers the member's requests with the
responses the scenario names, as Kafka's MockClient does.  K03, K06, K09 and K12 are not listed in the spec
(its §7.4 is a selection); the behaviours they would cover are exercised by the end-to-end tests.
"""
from __future__ import annotations

import pytest

from client_support import (
    MockAssignor,
    heartbeat,
    join_error,
    join_ok,
    subscription_bytes,
    sync_error,
    sync_ok,
    tp,
)
from kafkagroup.client import (
    FatalMemberError,
    MemberConfig,
    MemberState,
    NO_GENERATION,
    RebalanceCallbackError,
    RebalanceProtocol,
    select_rebalance_protocol,
)
from kafkagroup.client.ownership import CooperativeAssignmentViolation
from kafkagroup.messages.error_codes import ErrorCode as E
from kafkagroup.errors import InvalidGroupError
from kafkagroup.protocol import decode_assignment, decode_subscription

T1P, T2P = tp("test1", 0), tp("test2", 0)
EAGER, COOP = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE


def mock_for(protocol: str) -> MockAssignor:
    return MockAssignor([RebalanceProtocol[protocol]])


def join_and_sync(member, transport, *, generation, member_id, assigned, leader=None, protocol_name="mock",
                  leader_members=()):
    """Drive one successful join round on the scripted transport."""
    member.poll()
    transport.answer("join_group", join_ok(generation, member_id, leader or "other-leader", protocol_name,
                                           leader_members))
    transport.answer("sync_group", sync_ok(assigned, protocol_name))
    assert member.state is MemberState.STABLE


# ---------------------------------------------------------------------------------------------- K01
def test_K01_rebalance_protocol_selection():
    x, y = MockAssignor([EAGER], "x"), MockAssignor([COOP], "y")
    with pytest.raises(InvalidGroupError, match="share no rebalance protocol"):
        select_rebalance_protocol([x, y])
    with pytest.raises(InvalidGroupError):
        MemberConfig(group_id="g", partition_assignment_strategy=(x, y))
    both = [MockAssignor([EAGER, COOP], "x"), MockAssignor([EAGER, COOP], "y")]
    assert select_rebalance_protocol(both) is COOP
    # Kafka's default list [range, cooperative-sticky] runs EAGER; cooperative-sticky alone COOPERATIVE
    assert MemberConfig(group_id="g").rebalance_protocol is EAGER
    assert MemberConfig(group_id="g", partition_assignment_strategy="cooperative-sticky").rebalance_protocol is COOP
    assert MemberConfig(group_id="g", partition_assignment_strategy=[
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"]).rebalance_protocol is COOP
    assert MemberConfig(group_id="g", partition_assignment_strategy=["roundrobin", "sticky"]).rebalance_protocol is EAGER


# ---------------------------------------------------------------------------------------------- K02
def test_K02_leader_join_first_assignment(scripted, protocol):
    assignor = mock_for(protocol)
    member, transport, rec = scripted(topics=["test1"], strategy=[assignor])
    assignor.prepared = {"leader": [T1P]}
    member.poll()
    join = transport.pending("join_group")[0].request
    assert join.member_id == "" and join.protocols[0][0] == "mock"
    sub = decode_subscription(join.protocols[0][1])
    assert list(sub.topics) == ["test1"] and list(sub.owned_partitions) == [] and sub.generation_id == -1

    transport.answer("join_group", join_ok(1, "leader", "leader", "mock",
                                           [("leader", None, subscription_bytes(["test1"]))]))
    sync = transport.pending("sync_group")[0].request
    assert (sync.member_id, sync.generation_id) == ("leader", 1)
    assert [m for m, _ in sync.assignments] == ["leader"]
    assert list(decode_assignment(dict(sync.assignments)["leader"]).partitions) == [T1P]
    assert member.is_leader and len(assignor.calls) == 1

    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.state is MemberState.STABLE
    assert not member.rejoin_pending
    assert member.assignment == {T1P}
    assert rec.revoked == [] and rec.assigned == [frozenset({T1P})]
    assert assignor.on_assignment_calls == [((T1P,), 1)]


# ---------------------------------------------------------------------------------------------- K04
def _k04_member(scripted, protocol, fail_on=()):
    """Member subscribed to [test1, test2] owning {t2p}; then its subscription narrows to [test1] while a
    rebalance is in flight, and the SyncGroup assigns [t1p] (the onJoinComplete of the scenario)."""
    assignor = mock_for(protocol)
    member, transport, rec = scripted(topics=["test1", "test2"], strategy=[assignor])
    join_and_sync(member, transport, generation=1, member_id="memberId", assigned=[T2P])
    assert member.assignment == {T2P}
    transport.answer("heartbeat", heartbeat()) if transport.pending("heartbeat") else None
    member.request_rejoin()
    member.poll()                                   # onJoinPrepare + JoinGroup
    revoked_in_prepare = list(rec.revoked)
    member.subscribe(["test1"])
    rec.fail_on = set(fail_on)
    transport.answer("join_group", join_ok(2, "memberId", "other", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    return member, transport, rec, revoked_in_prepare


def test_K04_cooperative_revocation_in_on_join_complete_and_rejoin(scripted, protocol):
    member, transport, rec, revoked_in_prepare = _k04_member(scripted, protocol)
    if protocol == "COOPERATIVE":
        assert revoked_in_prepare == []                      # t2p's topic was still subscribed at prepare time
        assert rec.revoked == [frozenset({T2P})]             # revoked in onJoinComplete ...
        assert member._rejoin_needed                          # ... and a rejoin requested
        assert rec.assigned[-1] == frozenset({T1P})
    else:
        assert revoked_in_prepare == [frozenset({T2P})]      # eager revoked everything before joining
        assert rec.revoked == [frozenset({T2P})]             # and nothing more in onJoinComplete
        assert rec.assigned[-1] == frozenset({T1P})
    assert member.assignment == {T1P}


def test_K04_first_callback_exception_rethrown_after_all_callbacks(scripted, protocol):
    member, transport, rec, _ = _k04_member(scripted, protocol, fail_on={"revoked", "assigned"})
    # every callback ran although the first one raised
    assert rec.assigned[-1] == frozenset({T1P}) and member.assignment == {T1P}
    with pytest.raises(RebalanceCallbackError, match="User rebalance callback throws an error") as info:
        member.poll()
    first = "revoke" if protocol == "COOPERATIVE" else "assign"
    assert f"{first} callback failed" in str(info.value.__cause__)


# ---------------------------------------------------------------------------------------------- K05
def test_K05_metadata_change_follow_up_rebalance(scripted, protocol, clock):
    from kafkagroup.client import ClusterMetadata

    cluster = ClusterMetadata({"topic1": 1})
    t1p, t2p = tp("topic1", 0), tp("topic2", 0)
    assignor = mock_for(protocol)
    member, transport, rec = scripted(pattern=".*", strategy=[assignor], cluster=cluster)

    # rebalance 1 (leader); the metadata changes while the SyncGroup is in flight
    member.poll()
    assert list(decode_subscription(transport.pending("join_group")[0].request.protocols[0][1]).topics) == ["topic1"]
    assignor.prepared = {"m": [t1p]}
    transport.answer("join_group", join_ok(1, "m", "m", "mock", [("m", None, subscription_bytes(["topic1"]))]))
    cluster.set_partitions("topic2", 1)
    transport.answer("sync_group", sync_ok([t1p], "mock"))
    assert member.subscription == {"topic1"} and member.assignment == {t1p}
    assert (len(rec.revoked), len(rec.assigned)) == (0, 1)
    assert not member.rejoin_pending       # not detected before the next metadata refresh

    # next poll sees the new metadata: rejoin with both topics
    member.refresh_metadata()
    member.poll()
    join2 = transport.pending("join_group")[0].request
    assert set(decode_subscription(join2.protocols[0][1]).topics) == {"topic1", "topic2"}
    assignor.prepared = {"m": [t1p, t2p]}
    transport.answer("join_group", join_ok(2, "m", "m", "mock",
                                           [("m", None, join2.protocols[0][1])]))
    transport.answer("sync_group", sync_ok([t1p, t2p], "mock"))
    assert member.subscription == {"topic1", "topic2"} and member.assignment == {t1p, t2p}
    assert len(rec.assigned) == 2
    if protocol == "EAGER":
        assert rec.assigned[-1] == {t1p, t2p} and rec.revoked == [frozenset({t1p})]
    else:
        assert rec.assigned[-1] == {t2p} and rec.revoked == []

    # metadata goes back to topic1 only
    cluster.delete_topic("topic2")
    member.refresh_metadata()
    member.poll()
    join3 = transport.pending("join_group")[0].request
    assert list(decode_subscription(join3.protocols[0][1]).topics) == ["topic1"]
    assignor.prepared = {"m": [t1p]}
    transport.answer("join_group", join_ok(3, "m", "m", "mock", [("m", None, join3.protocols[0][1])]))
    transport.answer("sync_group", sync_ok([t1p], "mock"))
    assert member.assignment == {t1p}
    assert len(rec.assigned) == 3 and rec.lost == []
    if protocol == "EAGER":
        assert rec.revoked[-1] == {t1p, t2p} and rec.assigned[-1] == {t1p} and len(rec.revoked) == 2
    else:
        assert rec.revoked[-1] == {t2p} and rec.assigned[-1] == frozenset() and len(rec.revoked) == 1


# ---------------------------------------------------------------------------------------------- K07
def test_K07_static_leader_told_to_skip_assignment(scripted, protocol):
    assignor = mock_for(protocol)
    member, transport, rec = scripted(strategy=[assignor], group_instance_id="leader-instance")
    member.poll()
    resp = join_ok(1, "1", "1", "mock", [("1", "leader-instance", subscription_bytes(["test1"]))])
    resp.skip_assignment = True
    transport.answer("join_group", resp)
    sync = transport.pending("sync_group")[0].request
    assert list(sync.assignments) == [] and assignor.calls == []
    assert member.is_leader
    assert sync.group_instance_id == "leader-instance"


# ---------------------------------------------------------------------------------------------- K08
@pytest.mark.parametrize("sync_code", [E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION])
def test_K08_lost_partitions_after_dropping_out_of_the_group(scripted, protocol, sync_code):
    assignor = mock_for(protocol)
    member, transport, rec = scripted(strategy=[assignor])
    join_and_sync(member, transport, generation=1, member_id="consumer-42", assigned=[T1P])

    # an OffsetCommit answered REBALANCE_IN_PROGRESS requests a rejoin
    from kafkagroup.messages.api import OffsetCommitResponse, OffsetCommitResponsePartition, \
        OffsetCommitResponseTopic
    outcome = []
    member.commit_offsets({T1P: 10}, outcome.append)
    transport.answer("offset_commit", OffsetCommitResponse(
        [OffsetCommitResponseTopic("test1", [OffsetCommitResponsePartition(0, E.REBALANCE_IN_PROGRESS)])]))
    assert type(outcome[0]).__name__ == "RebalanceInProgressError"
    assert member._rejoin_needed

    member.poll()                                                 # first onJoinPrepare
    transport.answer("join_group", join_ok(42, "consumer-42", "leader", "mock"))
    transport.answer("sync_group", sync_error(sync_code))
    if sync_code is E.UNKNOWN_MEMBER_ID:
        assert member.generation == NO_GENERATION
    else:
        assert (member.generation.generation_id, member.generation.member_id,
                member.generation.protocol_name) == (-1, "consumer-42", None)
    lost_before = len(rec.lost)
    member.poll()                                                 # rejoin: onJoinPrepare again
    if protocol == "COOPERATIVE":
        assert len(rec.lost) == lost_before + 1 and rec.lost[-1] == {T1P}
    else:
        assert len(rec.lost) == lost_before == 0                  # already revoked in the first prepare
    assert member.assignment == frozenset()
    rejoin = transport.pending("join_group")[0].request
    assert rejoin.member_id == ("" if sync_code is E.UNKNOWN_MEMBER_ID else "consumer-42")


# ---------------------------------------------------------------------------------------------- K10
def test_K10_leave_with_reset_generation_loses_partitions(scripted, protocol):
    member, transport, rec = scripted(strategy=[mock_for(protocol)])
    join_and_sync(member, transport, generation=1, member_id="m1", assigned=[T1P])
    # the heartbeat says the member's generation is gone -> generation reset
    member.clock.advance(5_000)
    transport.answer("heartbeat", heartbeat(E.ILLEGAL_GENERATION))
    assert member.generation.generation_id == -1
    rec.revoked.clear()                  # EAGER's first onJoinPrepare revoked the (empty) assignment; not K10's
    rec.assigned.clear()
    member.close()
    assert rec.lost == [frozenset({T1P})]
    assert rec.revoked == []             # onPartitionsRevoked not called
    assert member.assignment == frozenset()


def test_K10_leave_with_valid_generation_revokes_and_sends_leave(scripted, protocol):
    member, transport, rec = scripted(strategy=[mock_for(protocol)])
    join_and_sync(member, transport, generation=1, member_id="m1", assigned=[T1P])
    member.close()
    assert rec.revoked[-1] == {T1P} and rec.lost == []
    leave = transport.requests("leave_group")
    assert len(leave) == 1 and leave[0].members[0].member_id == "m1"


def test_K10_static_member_never_sends_leave_group(scripted, protocol):
    member, transport, rec = scripted(strategy=[mock_for(protocol)], group_instance_id="i-1")
    join_and_sync(member, transport, generation=1, member_id="i-1-uuid", assigned=[T1P])
    member.close()
    assert transport.requests("leave_group") == []
    assert rec.revoked[-1] == {T1P}


# ---------------------------------------------------------------------------------------------- K11
@pytest.mark.parametrize("partitions, expect1", [(3, [tp("t", 1)]), (4, [tp("t", 1), tp("t", 3)])])
def test_K11_partition_claimed_twice_in_same_generation_is_withheld(scripted, partitions, expect1):
    from kafkagroup.client import ClusterMetadata

    cluster = ClusterMetadata({"t": partitions})
    member, transport, rec = scripted(topics=["t"], strategy=["cooperative-sticky"], cluster=cluster)
    owned2 = [tp("t", 0), tp("t", 2)]
    owned1 = [tp("t", 0), tp("t", 1)] + ([tp("t", 3)] if partitions == 4 else [])
    member.poll()
    members = [
        ("consumer1", None, subscription_bytes(["t"], owned1, 1)),
        ("consumer2", None, subscription_bytes(["t"], owned2, 1)),
        ("consumer3", None, subscription_bytes(["t"], [], 1)),
    ]
    transport.answer("join_group", join_ok(2, "consumer3", "consumer3", "cooperative-sticky", members))
    sync = transport.pending("sync_group")[0].request
    got = {m: sorted(decode_assignment(b).partitions) for m, b in sync.assignments}
    assert got == {"consumer1": expect1, "consumer2": [tp("t", 2)], "consumer3": []}
    # next round with the new owned sets: t-0 goes to consumer3
    transport.answer("sync_group", sync_ok([], "cooperative-sticky"))
    member.request_rejoin()
    member.poll()
    members = [
        ("consumer1", None, subscription_bytes(["t"], expect1, 2)),
        ("consumer2", None, subscription_bytes(["t"], [tp("t", 2)], 2)),
        ("consumer3", None, subscription_bytes(["t"], [], 2)),
    ]
    transport.answer("join_group", join_ok(3, "consumer3", "consumer3", "cooperative-sticky", members))
    sync = transport.pending("sync_group")[0].request
    got = {m: sorted(decode_assignment(b).partitions) for m, b in sync.assignments}
    assert got == {"consumer1": expect1, "consumer2": [tp("t", 2)], "consumer3": [tp("t", 0)]}


# ----------------------------------------------------------------------- §6.5 cooperative validation
def test_cooperative_leader_rejects_assignment_that_moves_an_owned_partition(scripted):
    assignor = MockAssignor([COOP])
    member, transport, rec = scripted(strategy=[assignor])
    member.poll()
    assignor.prepared = {"a": [], "b": [T1P]}        # t1p moves from a to b in one round
    members = [("a", None, subscription_bytes(["test1"], [T1P], 1)), ("b", None, subscription_bytes(["test1"]))]
    transport.answer("join_group", join_ok(2, "a", "a", "mock", members))
    assert transport.pending("sync_group") == []     # no SyncGroup was sent
    with pytest.raises(CooperativeAssignmentViolation, match="violates its requirements"):
        member.poll()


def test_eager_leader_does_not_validate(scripted):
    assignor = MockAssignor([EAGER])
    member, transport, rec = scripted(strategy=[assignor])
    member.poll()
    assignor.prepared = {"a": [], "b": [T1P]}
    members = [("a", None, subscription_bytes(["test1"], [T1P], 1)), ("b", None, subscription_bytes(["test1"]))]
    transport.answer("join_group", join_ok(2, "a", "a", "mock", members))
    assert len(transport.pending("sync_group")) == 1


# ------------------------------------------------------------------------- §6.9 error reactions
def test_member_id_required_then_rejoin_with_returned_id(scripted):
    member, transport, rec = scripted()
    member.poll()
    transport.answer("join_group", join_error(E.MEMBER_ID_REQUIRED, "consumer-abc"))
    assert member.generation.member_id == "consumer-abc" and member.generation.generation_id == -1
    member.clock.advance(0)
    member.poll()
    assert transport.pending("join_group")[0].request.member_id == "consumer-abc"
    assert rec.lost == []


@pytest.mark.parametrize("code", [E.FENCED_INSTANCE_ID, E.GROUP_MAX_SIZE_REACHED, E.INCONSISTENT_GROUP_PROTOCOL,
                                  E.INVALID_SESSION_TIMEOUT, E.GROUP_AUTHORIZATION_FAILED])
def test_fatal_join_errors(scripted, code):
    member, transport, rec = scripted(group_instance_id="i-1")
    member.poll()
    transport.answer("join_group", join_error(code))
    assert member.fatal_error is not None and member.fatal_error.code is code
    with pytest.raises(FatalMemberError):
        member.poll()
    member.clock.advance(100_000)
    assert transport.pending("join_group") == []     # a fatal member stops


@pytest.mark.parametrize("code", [E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS])
def test_retriable_join_errors_back_off(scripted, clock, code):
    member, transport, rec = scripted()
    member.poll()
    transport.answer("join_group", join_error(code))
    assert member.fatal_error is None
    clock.advance(99)
    assert transport.pending("join_group") == []
    clock.advance(1)                                # retry.backoff.ms = 100
    assert len(transport.pending("join_group")) == 1


def test_unknown_member_join_resets_member_id_and_retries_at_once(scripted, clock):
    member, transport, rec = scripted()
    join_and_sync(member, transport, generation=3, member_id="old", assigned=[T1P], protocol_name="range")
    member.request_rejoin()
    clock.advance(0)
    transport.answer("join_group", join_error(E.UNKNOWN_MEMBER_ID, "old"))
    assert member.generation == NO_GENERATION
    clock.advance(0)
    assert transport.pending("join_group")[0].request.member_id == ""


def test_heartbeat_reactions(scripted, clock, protocol):
    member, transport, rec = scripted(strategy=[mock_for(protocol)])
    join_and_sync(member, transport, generation=1, member_id="m", assigned=[T1P])
    clock.advance(5_000)
    transport.answer("heartbeat", heartbeat(E.NONE))
    assert member.state is MemberState.STABLE and not member._rejoin_needed
    clock.advance(5_000)
    transport.answer("heartbeat", heartbeat(E.REBALANCE_IN_PROGRESS))   # STABLE -> rejoin
    clock.advance(0)
    assert member.state is MemberState.PREPARING_REBALANCE
    # parked in JoinGroup: an EAGER member (it revoked everything) stops heartbeating, as Kafka's clients do; a
    # COOPERATIVE one still owns T1P and keeps heartbeating, so that its session guard keeps its proof
    n = len(transport.requests("heartbeat"))
    for _ in range(20):
        clock.advance(1_000)
        while transport.pending("heartbeat"):
            transport.answer("heartbeat", heartbeat(E.REBALANCE_IN_PROGRESS))
    sent = transport.requests("heartbeat")[n:]
    if protocol == "EAGER":
        assert sent == [] and member.assignment == frozenset()
    else:
        assert len(sent) >= 5 and {r.generation_id for r in sent} == {1}
        assert member.assignment == {T1P} and rec.lost == []
    transport.answer("join_group", join_ok(2, "m", "x", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    clock.advance(5_000)
    transport.answer("heartbeat", heartbeat(E.FENCED_INSTANCE_ID))
    assert member.fatal_error is not None and member.fatal_error.code is E.FENCED_INSTANCE_ID


def test_stale_heartbeat_error_is_ignored(scripted, clock):
    member, transport, rec = scripted()
    join_and_sync(member, transport, generation=1, member_id="m", assigned=[T1P], protocol_name="range")
    clock.advance(5_000)                             # heartbeat of generation 1 in flight
    member.request_rejoin()
    clock.advance(0)
    transport.answer("join_group", join_ok(2, "m", "x", "range"))
    transport.answer("sync_group", sync_ok([T1P], "range"))
    transport.answer("heartbeat", heartbeat(E.ILLEGAL_GENERATION))  # answers generation 1: ignored
    assert member.generation.generation_id == 2 and member.state is MemberState.STABLE


def test_outdated_assignment_requests_rejoin_without_applying(scripted):
    member, transport, rec = scripted(topics=["test1"])
    member.poll()
    transport.answer("join_group", join_ok(1, "m", "x", "range"))
    transport.answer("sync_group", sync_ok([T1P, T2P], "range"))   # test2 is not subscribed
    assert member.assignment == frozenset() and member._rejoin_needed and rec.assigned == []


def test_sync_protocol_name_mismatch_is_fatal(scripted):
    member, transport, rec = scripted()
    member.poll()
    transport.answer("join_group", join_ok(1, "m", "x", "range"))
    transport.answer("sync_group", sync_ok([T1P], "roundrobin"))
    assert member.fatal_error.code is E.INCONSISTENT_GROUP_PROTOCOL


def test_short_assignment_bytes_surface_an_error(scripted):
    from kafkagroup.messages.api import SyncGroupResponse
    from kafkagroup.errors import InvariantError

    member, transport, rec = scripted()
    member.poll()
    transport.answer("join_group", join_ok(1, "m", "x", "range"))
    transport.answer("sync_group", SyncGroupResponse(E.NONE, "consumer", "range", b"\x00"))
    with pytest.raises(InvariantError, match="at least 2"):
        member.poll()


def test_join_group_request_fields(scripted):
    member, transport, rec = scripted(strategy=["range", "roundrobin"], group_instance_id="host-7",
                                      client_rack="rack-a")
    member.poll()
    req = transport.pending("join_group")[0].request
    assert [n for n, _ in req.protocols] == ["range", "roundrobin"]
    assert (req.group_instance_id, req.session_timeout_ms, req.rebalance_timeout_ms, req.protocol_type) == (
        "host-7", 10_000, 60_000, "consumer")
    assert decode_subscription(req.protocols[0][1]).rack_id == "rack-a"


def test_poll_timeout_leaves_group_and_loses_partitions(scripted, clock, protocol):
    """The heartbeat thread leaves the group after max.poll.interval.ms; the partitions are lost as the
    LeaveGroup goes out (Java reports them at the next poll), and the member rejoins afresh on return."""
    member, transport, rec = scripted(strategy=[mock_for(protocol)])
    join_and_sync(member, transport, generation=1, member_id="m", assigned=[T1P])
    member.stall()
    for _ in range(60):                             # max.poll.interval.ms; the coordinator answers heartbeats
        clock.advance(1_000)
        while transport.pending("heartbeat"):
            transport.answer("heartbeat", heartbeat(E.NONE))
    leave = transport.requests("leave_group")
    assert len(leave) == 1 and "poll timeout" in leave[0].members[0].reason
    assert member.generation == NO_GENERATION
    assert rec.lost == [frozenset({T1P})] and member.assignment == frozenset()
    member.resume()
    clock.advance(0)
    assert rec.lost == [frozenset({T1P})]
    assert transport.pending("join_group")[0].request.member_id == ""


def test_an_assignor_class_is_built_once_per_member():
    """A class entry of partition.assignment.strategy is instantiated once per member (its own state), not once
    more to learn its protocols; protocols that do not agree fail when the member is built."""
    from kafkagroup.assignors import PartitionAssignor
    from kafkagroup.client import GroupMember
    from kafkagroup.client.cluster import ClusterMetadata
    from kafkagroup.coordinator import GroupCoordinator
    from kafkagroup.messages.clock import ManualClock

    built: list[object] = []

    class Counting(PartitionAssignor):
        name = "counting"

        def __init__(self) -> None:
            built.append(self)

        def assign(self, cluster, members, *, group_instance_ids=None):
            return {}

    class CountingCooperative(Counting):
        name = "counting-cooperative"

        def supported_protocols(self):
            return [COOP]

    clock = ManualClock()
    coordinator, cluster = GroupCoordinator(clock=clock, store=":memory:"), ClusterMetadata({"t": 4})
    cfg = MemberConfig(group_id="g", partition_assignment_strategy=(Counting,))
    assert built == []
    members = [GroupMember(coordinator, clock=clock, cluster=cluster, topics=["t"], config=cfg) for _ in range(3)]
    assert [m.assignors[0] for m in members] == built and len(set(map(id, built))) == 3
    assert {m.rebalance_protocol for m in members} == {EAGER}
    with pytest.raises(InvalidGroupError, match="share no rebalance protocol"):
        GroupMember(coordinator, clock=clock, cluster=cluster, topics=["t"],
                    config=MemberConfig(group_id="g", partition_assignment_strategy=(Counting, CountingCooperative)))
