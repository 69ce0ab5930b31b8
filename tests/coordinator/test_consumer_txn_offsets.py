"""Transactional offsets (TxnOffsetCommit and markers) of consumer groups (KIP-848) and of a classic group
upgraded while a transaction was open.

Kafka validates a TxnOffsetCommit to a consumer group with ``ConsumerGroup.validateOffsetCommit(...,
isTransactional=true, ...)`` (OffsetMetadataManager.validateTransactionalOffsetCommit): an empty group takes
a commit with a negative generation (an admin's, or a producer of a non-grouped consumer); otherwise the member
must exist (UNKNOWN_MEMBER_ID) and send its member epoch as the generation; a stale epoch is ILLEGAL_GENERATION
(TxnOffsetCommit has no STALE_MEMBER_EPOCH: Kafka maps it), and no OffsetCommit-version rule applies.  The
offsets stay pending (invisible to OffsetFetch; UNSTABLE_OFFSET_COMMIT for require_stable) until the marker,
then become the group's committed offsets -- in memory as in the store."""
from __future__ import annotations

from kafkagroup.coordinator import OffsetFetchRequest, TransactionResult, TxnOffsetCommitRequest
from kafkagroup.messages.error_codes import ErrorCode as E

from tests.coordinator.consumer_helpers import Member, coordinator, needs_server_assignors, settle
from tests.coordinator.test_consumer_mixed import Classic, classic_group
from tests.coordinator.test_consumer_persist import Restartable

pytestmark = needs_server_assignors

COMMIT, ABORT = TransactionResult.COMMIT, TransactionResult.ABORT
PID, EPOCH = 4000, 0


def txn(coord, offsets, *, member_id="", generation=-1, group="g", pid=PID, epoch=EPOCH) -> set:
    r = coord.txn_offset_commit(TxnOffsetCommitRequest.of("txn", group, pid, epoch, offsets,
                                                          generation_id=generation, member_id=member_id))
    return set(r.errors().values())


def marker(coord, result, *, group="g", pid=PID, epoch=EPOCH) -> dict:
    return coord.complete_transaction(pid, epoch, [coord.partition_for(group)], result)


def fetched(coord, *, group="g", stable=False) -> dict:
    r = coord.offset_fetch(OffsetFetchRequest.of(group, [("t", 0), ("t", 1)], require_stable=stable))
    assert r.error_code == E.NONE
    return {tp: (p.committed_offset, p.error_code) for tp, p in r.offsets().items()}


def test_a_member_commits_in_a_transaction_and_the_marker_makes_the_offsets_visible():
    coord, clock, _ = coordinator({"t": 2})
    a, b = Member(coord, "g", "A", topics=["t"]), Member(coord, "g", "B", topics=["t"])
    settle(a, b)
    assert txn(coord, {("t", 0): 7, ("t", 1): 9}, member_id="A", generation=a.epoch) == {E.NONE}
    assert fetched(coord) == {("t", 0): (-1, E.NONE), ("t", 1): (-1, E.NONE)}            # pending
    assert fetched(coord, stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT),
                                           ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert marker(coord, COMMIT) == {coord.partition_for("g"): E.NONE}
    assert fetched(coord, stable=True) == {("t", 0): (7, E.NONE), ("t", 1): (9, E.NONE)}
    # still one consumer group under the id; no classic group was made beside it
    assert list(coord.registry.consumer) == ["g"] and "g" not in coord.registry.classic
    assert txn(coord, {("t", 0): 8}, member_id="B", generation=b.epoch) == {E.NONE}
    assert marker(coord, ABORT) == {coord.partition_for("g"): E.NONE}
    assert fetched(coord)[("t", 0)] == (7, E.NONE)


def test_member_checks_follow_kafkas_transactional_rules():
    coord, clock, _ = coordinator({"t": 2})
    a = Member(coord, "g", "A", topics=["t"])
    settle(a)
    assert txn(coord, {("t", 0): 1}, member_id="A", generation=a.epoch - 1) == {E.ILLEGAL_GENERATION}
    assert txn(coord, {("t", 0): 1}, member_id="nobody", generation=a.epoch) == {E.UNKNOWN_MEMBER_ID}
    # TxnOffsetCommit v0-v2 send no member: a non-empty consumer group refuses it
    assert txn(coord, {("t", 0): 1}) == {E.UNKNOWN_MEMBER_ID}
    assert coord.registry.consumer["g"].offset_state.pending_txn_offsets == {}
    a.leave()
    assert txn(coord, {("t", 0): 5}) == {E.NONE}                # empty group: an admin's commit
    marker(coord, COMMIT)
    assert fetched(coord)[("t", 0)] == (5, E.NONE)
    assert list(coord.registry.consumer) == ["g"] and "g" not in coord.registry.classic


def test_pending_offsets_survive_a_restart_and_the_marker_after_it_commits_them(tmp_path):
    r = Restartable(tmp_path / "store.db", {"t": 2})
    a = Member(r.coord, "g", "A", topics=["t"])
    settle(a)
    assert txn(r.coord, {("t", 1): 11}, member_id="A", generation=a.epoch) == {E.NONE}
    r.restart(a)
    assert fetched(r.coord, stable=True)[("t", 1)] == (-1, E.UNSTABLE_OFFSET_COMMIT)
    marker(r.coord, COMMIT)
    assert fetched(r.coord, stable=True)[("t", 1)] == (11, E.NONE)
    r.restart(a)
    assert fetched(r.coord, stable=True)[("t", 1)] == (11, E.NONE)
    r.coord.shutdown()


def test_a_transaction_open_while_a_classic_group_is_upgraded_completes_in_the_consumer_group():
    coord, clock, _ = coordinator({"t": 2}, group_initial_rebalance_delay_ms=0)
    c = Classic(coord, "g", "C", ["t"])
    classic_group(coord, clock, [c], 2)
    assert txn(coord, {("t", 0): 3}, member_id=c.member_id, generation=c.generation) == {E.NONE}
    k = Member(coord, "g", "K", topics=["t"])      # a consumer-protocol member upgrades the group
    k.heartbeat()
    assert "g" in coord.registry.consumer
    assert fetched(coord, stable=True)[("t", 0)] == (-1, E.UNSTABLE_OFFSET_COMMIT)
    marker(coord, COMMIT)
    assert fetched(coord, stable=True)[("t", 0)] == (3, E.NONE)
