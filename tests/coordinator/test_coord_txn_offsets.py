"""TxnOffsetCommit, transaction markers and OffsetFetch require_stable (spec §2.6 last paragraph, §2.7, §8 row 10).

Kafka's own tests restated; each cites its source (GroupCoordinatorTest / GroupMetadataTest: Scala
coordinator, ``core/src/test/scala/unit/kafka/coordinator/group``; OffsetMetadataManagerTest: Java,
``group-coordinator/src/test/java/org/apache/kafka/coordinator/group``).  Kafka's ``handleTxnCompletion`` /
``replayEndTransactionMarker`` is ``GroupCoordinator.complete_transaction`` here.
"""
from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from coord_harness import E, S, Harness, tie, hs  # noqa: F401 (fixtures)
from coord_virtual_loop import VirtualTimeLoop

from kafkagroup.coordinator import (
    DeleteGroupsRequest, GroupStore, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetFetchRequest,
    TransactionResult, TxnOffsetCommitRequest,
)
from kafkagroup.coordinator.aio import AsyncGroupCoordinator
from kafkagroup.coordinator.store import SCHEMA_VERSION

COMMIT, ABORT = TransactionResult.COMMIT, TransactionResult.ABORT
PID, EPOCH = 1000, 2
OTHER_GROUP = "otherGroup"          # offsets-topic partition 1 of 2 ("groupId" is on 0)


def txn(h: Harness, offsets: dict, *, pid: int = PID, epoch: int = EPOCH, group: str | None = None,
        member_id: str = "", generation: int = -1, instance: str | None = None) -> dict:
    return h.coord.txn_offset_commit(TxnOffsetCommitRequest.of(
        "txn-id", h.group_id if group is None else group, pid, epoch, offsets, generation_id=generation,
        member_id=member_id, group_instance_id=instance)).errors()


def marker(h: Harness, result: TransactionResult, *, pid: int = PID, epoch: int = EPOCH,
           partitions: tuple[int, ...] = (0,)) -> dict:
    return h.coord.complete_transaction(pid, epoch, partitions, result)


def fetch(h: Harness, partitions, *, group: str | None = None, stable: bool = False) -> dict:
    """{(topic, partition): (offset, error)}."""
    r = h.coord.offset_fetch(OffsetFetchRequest.of(h.group_id if group is None else group, partitions,
                                                   require_stable=stable))
    assert r.error_code == E.NONE
    return {tp: (p.committed_offset, p.error_code) for tp, p in r.offsets().items()}


def restart(h: Harness, path: str, **kw) -> Harness:
    h.coord.shutdown()
    return Harness("S", store=path, clock=h.clock, **kw)


# --------------------------------------------------------------------------- markers and OffsetFetch

def test_basic_fetch_txn_offsets(hs: Harness) -> None:
    # GroupCoordinatorTest.testBasicFetchTxnOffsets
    assert txn(hs, {("topic", 0): 0}) == {("topic", 0): E.NONE}
    assert fetch(hs, [("topic", 0)]) == {("topic", 0): (-1, E.NONE)}      # not materialized yet
    assert marker(hs, COMMIT) == {0: E.NONE}
    assert fetch(hs, [("topic", 0)]) == {("topic", 0): (0, E.NONE)}


def test_fetch_txn_offsets_with_abort(hs: Harness) -> None:
    # GroupCoordinatorTest.testFetchTxnOffsetsWithAbort
    assert txn(hs, {("topic", 0): 0}) == {("topic", 0): E.NONE}
    assert fetch(hs, [("topic", 0)]) == {("topic", 0): (-1, E.NONE)}
    assert marker(hs, ABORT) == {0: E.NONE}
    assert fetch(hs, [("topic", 0)]) == {("topic", 0): (-1, E.NONE)}
    assert hs.group.pending_txn_offsets == {} and hs.coord.store.load_partition(0).pending == {}


def test_fetch_pending_txn_offsets_with_abort(hs: Harness) -> None:
    # GroupCoordinatorTest.testFetchPendingTxnOffsetsWithAbort (requireStable = true)
    assert txn(hs, {("topic", 0): 0}) == {("topic", 0): E.NONE}
    assert fetch(hs, [("topic", 0), ("non-exist-topic", 0)], stable=True) == {
        ("topic", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("non-exist-topic", 0): (-1, E.NONE)}
    marker(hs, ABORT)
    assert fetch(hs, [("topic", 0)], stable=True) == {("topic", 0): (-1, E.NONE)}


def test_fetch_pending_txn_offsets_with_commit(hs: Harness) -> None:
    # GroupCoordinatorTest.testFetchPendingTxnOffsetsWithCommit
    assert txn(hs, {("topic", 0): 25}) == {("topic", 0): E.NONE}
    assert fetch(hs, [("topic", 0)], stable=True) == {("topic", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    marker(hs, COMMIT)
    assert fetch(hs, [("topic", 0)], stable=True) == {("topic", 0): (25, E.NONE)}


def test_fetch_txn_offsets_ignore_spurious_commit(hs: Harness) -> None:
    # GroupCoordinatorTest.testFetchTxnOffsetsIgnoreSpuriousCommit
    txn(hs, {("topic", 0): 0})
    assert marker(hs, ABORT) == {0: E.NONE}
    assert fetch(hs, [("topic", 0)]) == {("topic", 0): (-1, E.NONE)}
    assert marker(hs, COMMIT) == {0: E.NONE}                              # nothing pending: ignored
    assert fetch(hs, [("topic", 0)]) == {("topic", 0): (-1, E.NONE)}


def test_fetch_txn_offsets_one_producer_multiple_groups() -> None:
    # GroupCoordinatorTest.testFetchTxnOffsetsOneProducerMultipleGroups: a marker completes only the
    # groups of its own offsets-topic partition
    h = Harness("S", owned=[0, 1])
    assert h.coord.partition_for(h.group_id) != h.coord.partition_for(OTHER_GROUP)
    tps = [("topic1", 0), ("topic2", 0)]
    assert txn(h, {tps[0]: 10}, epoch=3) == {tps[0]: E.NONE}
    assert txn(h, {tps[1]: 15}, epoch=3, group=OTHER_GROUP) == {tps[1]: E.NONE}
    assert marker(h, COMMIT, epoch=3, partitions=(0,)) == {0: E.NONE}
    assert fetch(h, tps) == {tps[0]: (10, E.NONE), tps[1]: (-1, E.NONE)}
    assert fetch(h, tps, group=OTHER_GROUP) == {tps[0]: (-1, E.NONE), tps[1]: (-1, E.NONE)}
    assert marker(h, COMMIT, epoch=3, partitions=(1,)) == {1: E.NONE}
    assert fetch(h, tps) == {tps[0]: (10, E.NONE), tps[1]: (-1, E.NONE)}
    assert fetch(h, tps, group=OTHER_GROUP) == {tps[0]: (-1, E.NONE), tps[1]: (15, E.NONE)}


def test_fetch_txn_offsets_multiple_producers_one_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testFetchTxnOffsetsMultipleProducersOneGroup, OffsetMetadataManagerTest.
    # testReplayTransactionEndMarkerWithCommit: each producer's marker completes its own offsets only
    tps = [("topic1", 0), ("topic2", 0)]
    assert txn(hs, {tps[0]: 10}, pid=1000, epoch=3) == {tps[0]: E.NONE}
    assert txn(hs, {tps[1]: 15}, pid=1001, epoch=4) == {tps[1]: E.NONE}
    assert marker(hs, ABORT, pid=1000, epoch=3) == {0: E.NONE}
    assert fetch(hs, tps) == {tps[0]: (-1, E.NONE), tps[1]: (-1, E.NONE)}
    assert fetch(hs, tps, stable=True) == {tps[0]: (-1, E.NONE), tps[1]: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert marker(hs, COMMIT, pid=1001, epoch=4) == {0: E.NONE}
    assert fetch(hs, tps, stable=True) == {tps[0]: (-1, E.NONE), tps[1]: (15, E.NONE)}


def test_fetch_offsets_with_pending_transactional_offsets(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testFetchOffsetsWithPendingTransactionalOffsets and
    # testFetchAllOffsetsWithPendingTransactionalOffsets (the Java rule of spec §8 row 10)
    hs.commit({("foo", 0): 100, ("foo", 1): 110, ("bar", 0): 200})
    assert txn(hs, {("foo", 1): 111, ("bar", 0): 201, ("bar", 1): 211}, pid=10) == {
        ("foo", 1): E.NONE, ("bar", 0): E.NONE, ("bar", 1): E.NONE}
    request = [("foo", 0), ("foo", 1), ("bar", 0), ("bar", 1)]
    assert fetch(hs, request, stable=True) == {
        ("foo", 0): (100, E.NONE), ("foo", 1): (-1, E.UNSTABLE_OFFSET_COMMIT),
        ("bar", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("bar", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert fetch(hs, request) == {("foo", 0): (100, E.NONE), ("foo", 1): (110, E.NONE),
                                  ("bar", 0): (200, E.NONE), ("bar", 1): (-1, E.NONE)}
    # all offsets: bar-1 (pending only) is not listed until its transaction commits
    assert fetch(hs, None, stable=True) == {("foo", 0): (100, E.NONE), ("foo", 1): (-1, E.UNSTABLE_OFFSET_COMMIT),
                                            ("bar", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert fetch(hs, None) == {("foo", 0): (100, E.NONE), ("foo", 1): (110, E.NONE), ("bar", 0): (200, E.NONE)}
    assert marker(hs, COMMIT, pid=10) == {0: E.NONE}
    everything = {("foo", 0): (100, E.NONE), ("foo", 1): (111, E.NONE), ("bar", 0): (201, E.NONE),
                  ("bar", 1): (211, E.NONE)}
    assert fetch(hs, request, stable=True) == everything and fetch(hs, None, stable=True) == everything


# ------------------------------------------------------------------ most recent record wins on commit

def test_consumer_commit_after_the_transactional_one_wins(hs: Harness) -> None:
    # GroupMetadataTest.testConsumerBeatsTransactionalOffsetCommit /
    # OffsetMetadataManagerTest.testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset
    txn(hs, {("foo", 0): 5})
    hs.commit({("foo", 0): 7})                  # written after the transactional record
    assert marker(hs, COMMIT) == {0: E.NONE}
    assert fetch(hs, [("foo", 0)]) == {("foo", 0): (7, E.NONE)}
    assert hs.coord.store.load_partition(0).offsets["groupId"][("foo", 0)].committed_offset == 7


def test_transactional_commit_after_the_consumer_one_wins(hs: Harness) -> None:
    # GroupMetadataTest.testTransactionBeatsConsumerOffsetCommit
    hs.commit({("foo", 0): 7})
    txn(hs, {("foo", 0): 5})
    assert fetch(hs, [("foo", 0)]) == {("foo", 0): (7, E.NONE)}
    marker(hs, COMMIT)
    assert fetch(hs, [("foo", 0)]) == {("foo", 0): (5, E.NONE)}


def test_transactional_commit_is_aborted_and_consumer_commit_wins(hs: Harness) -> None:
    # GroupMetadataTest.testTransactionalCommitIsAbortedAndConsumerCommitWins (consumer record first, then the
    # transactional one, then ABORT)
    hs.commit({("foo", 0): 57})
    txn(hs, {("foo", 0): 37})
    assert fetch(hs, [("foo", 0)]) == {("foo", 0): (57, E.NONE)}
    marker(hs, ABORT)
    assert fetch(hs, [("foo", 0)], stable=True) == {("foo", 0): (57, E.NONE)}
    assert hs.group.pending_txn_offsets == {}


# -------------------------------------------------------------------------------- validation (§2.6)

def test_txn_commit_with_unknown_group_and_generation_is_illegal_generation(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownGroupId (spec §2.6)
    assert txn(hs, {("bar", 0): 100}, member_id="member", generation=10) == {("bar", 0): E.ILLEGAL_GENERATION}
    assert hs.coord.group("groupId") is None
    # generation -1: a simple group is created (GroupCoordinatorTest.testBasicFetchTxnOffsets)
    assert txn(hs, {("bar", 0): 100}) == {("bar", 0): E.NONE}
    assert hs.group.state is S.EMPTY and hs.group.protocol_type is None


def test_txn_commit_with_unknown_member_id(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownMemberId (Empty group)
    hs.commit({("t", 0): 1})
    assert txn(hs, {("bar", 0): 100}, member_id="member", generation=10) == {("bar", 0): E.UNKNOWN_MEMBER_ID}
    # Stable group: GroupCoordinator.validateOffsetCommit -> validateCurrentMember("txn-offset-commit")
    hs2 = Harness("S")
    a = hs2.fx_single()
    assert txn(hs2, {("bar", 0): 1}, member_id="unknown", generation=1) == {("bar", 0): E.UNKNOWN_MEMBER_ID}
    assert txn(hs2, {("bar", 0): 1}, member_id=a, generation=1) == {("bar", 0): E.NONE}


def test_txn_commit_with_illegal_and_legal_generation(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommit and
    # testGenericGroupTransactionalOffsetCommitWithIllegalGenerationId
    a = hs.fx_single()
    assert txn(hs, {("bar", 0): 100}, member_id=a, generation=100) == {("bar", 0): E.ILLEGAL_GENERATION}
    assert txn(hs, {("bar", 0): 100}, member_id=a, generation=1) == {("bar", 0): E.NONE}
    assert set(hs.group.pending_txn_offsets[PID]) == {("bar", 0)}


def test_txn_commit_with_fenced_instance_id(hs: Harness) -> None:
    # GroupCoordinator.validateOffsetCommit(isTransactional = true) -> validateCurrentMember: a static member's
    # instance id with another member id is fenced
    leader, _ = hs.fx_static()
    assert txn(hs, {("bar", 0): 1}, member_id="wrong", generation=1, instance="leader") == {
        ("bar", 0): E.FENCED_INSTANCE_ID}
    assert txn(hs, {("bar", 0): 1}, member_id=leader, generation=1, instance="leader") == {("bar", 0): E.NONE}


def test_transactional_rules_differ_from_offset_commit(hs: Harness) -> None:
    # GroupMetadataManager validateOffsetCommit(isTransactional = true) (Scala and Java): no member id and no
    # generation is accepted by a non-empty group (TxnOffsetCommit v0-v2 send neither), and
    # CompletingRebalance does not answer REBALANCE_IN_PROGRESS
    a = hs.fx_single()
    assert hs.commit({("t", 0): 1}) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert txn(hs, {("t", 0): 1}) == {("t", 0): E.NONE}
    b_reply = hs.join_v3("")
    hs.join(a)
    assert b_reply.result().generation_id == 2 and hs.group.state is S.COMPLETING_REBALANCE
    assert hs.commit({("t", 1): 1}, member_id=a, generation=2) == {("t", 1): E.REBALANCE_IN_PROGRESS}
    assert txn(hs, {("t", 1): 1}, member_id=a, generation=2) == {("t", 1): E.NONE}
    # Dead group -> COORDINATOR_NOT_AVAILABLE, as for OffsetCommit
    hs.group.transition_to(S.DEAD, hs.now)
    assert txn(hs, {("t", 2): 1}) == {("t", 2): E.COORDINATOR_NOT_AVAILABLE}


def test_txn_commits_do_not_keep_a_member_alive() -> None:
    # Kafka's doTxnCommitOffsets never calls completeAndScheduleNextHeartbeatExpiration (doCommitOffsets does)
    h = Harness("S")
    a = h.fx_single()                           # session 500 ms from t=50 (sync)
    for _ in range(2):
        h.advance(200)
        assert txn(h, {("t", 0): 1}, member_id=a, generation=1) == {("t", 0): E.NONE}
    h.advance(200)                              # t=650: expired at 550 despite the commits at 250 and 450
    assert a not in h.group.members and h.group.state is S.EMPTY
    assert txn(h, {("t", 0): 1}, member_id=a, generation=1) == {("t", 0): E.UNKNOWN_MEMBER_ID}


def test_txn_commit_gate_and_metadata_limit(hs: Harness) -> None:
    # spec §2.1: "" is an invalid group id for TxnOffsetCommit; §2.6 step 8 per partition
    assert txn(hs, {("t", 0): 1}, group="") == {("t", 0): E.INVALID_GROUP_ID}
    assert txn(hs, {("t", 0): 1}, group=OTHER_GROUP) == {("t", 0): E.NOT_COORDINATOR}
    assert txn(hs, {("t", 0): (1, "s" * 4097), ("t", 1): (2, "ok")}) == {
        ("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE}
    assert set(hs.group.pending_txn_partitions) == {("t", 1)}
    req = TxnOffsetCommitRequest("txn-id", "groupId", PID, EPOCH, topics=[OffsetCommitRequestTopic("n", [
        OffsetCommitRequestPartition(0, 9, 4, None)])])
    assert hs.coord.txn_offset_commit(req).errors() == {("n", 0): E.NONE}
    marker(hs, COMMIT)
    got = hs.coord.offset_fetch(OffsetFetchRequest.of("groupId", [("n", 0)])).offsets()[("n", 0)]
    assert (got.committed_offset, got.committed_leader_epoch, got.metadata) == (9, 4, "")


def test_marker_partition_errors(hs: Harness) -> None:
    with pytest.raises(ValueError, match="TransactionResult"):
        hs.coord.complete_transaction(PID, EPOCH, [0], True)  # type: ignore[arg-type]
    assert marker(hs, COMMIT, partitions=(1, 7)) == {1: E.NOT_LEADER_OR_FOLLOWER, 7: E.UNKNOWN_TOPIC_OR_PARTITION}
    hs.coord.shutdown()
    assert marker(hs, COMMIT) == {0: E.NOT_LEADER_OR_FOLLOWER}


# ---------------------------------------------------------------------------------- producer fencing

def test_older_producer_epoch_is_fenced(hs: Harness) -> None:
    # ProducerStateManager / ProducerAppendInfo.checkProducerEpoch: an append with an older epoch than the
    # producer's latest on that partition fails with INVALID_PRODUCER_EPOCH (transaction version 1: equal passes)
    assert txn(hs, {("t", 0): 1}, epoch=5) == {("t", 0): E.NONE}
    assert txn(hs, {("t", 1): 1}, epoch=4) == {("t", 1): E.INVALID_PRODUCER_EPOCH}
    assert txn(hs, {("t", 1): (1, "s" * 5000)}, epoch=4) == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert set(hs.group.pending_txn_partitions) == {("t", 0)}
    assert marker(hs, COMMIT, epoch=4) == {0: E.INVALID_PRODUCER_EPOCH}
    assert fetch(hs, [("t", 0)], stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert marker(hs, ABORT, epoch=6) == {0: E.NONE}          # the bumped epoch aborts the old transaction
    assert txn(hs, {("t", 0): 2}, epoch=5) == {("t", 0): E.INVALID_PRODUCER_EPOCH}
    assert txn(hs, {("t", 0): 3}, epoch=6) == {("t", 0): E.NONE}
    assert txn(hs, {("t", 0): 3}, pid=7, epoch=0) == {("t", 0): E.NONE}   # other producers are independent


# ------------------------------------------------------------------------ durability, restart, load

def test_pending_offsets_survive_a_restart_and_complete_after_it(tmp_path: Path) -> None:
    path = str(tmp_path / "txn.db")
    h = Harness("S", store=path)
    h.commit({("t", 0): 1})
    assert txn(h, {("t", 0): 10, ("t", 1): 11}) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert txn(h, {("u", 0): 5}, pid=2000, epoch=0) == {("u", 0): E.NONE}
    h2 = restart(h, path)
    assert fetch(h2, [("t", 0), ("t", 1), ("u", 0)], stable=True) == {
        ("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT),
        ("u", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert fetch(h2, [("t", 0), ("t", 1)]) == {("t", 0): (1, E.NONE), ("t", 1): (-1, E.NONE)}
    assert marker(h2, COMMIT) == {0: E.NONE}
    assert marker(h2, ABORT, pid=2000, epoch=0) == {0: E.NONE}
    assert txn(h2, {("t", 0): 99}, epoch=EPOCH - 1) == {("t", 0): E.INVALID_PRODUCER_EPOCH}  # epoch was kept
    h3 = restart(h2, path)
    assert fetch(h3, [("t", 0), ("t", 1), ("u", 0)], stable=True) == {
        ("t", 0): (10, E.NONE), ("t", 1): (11, E.NONE), ("u", 0): (-1, E.NONE)}
    assert h3.group.pending_txn_offsets == {}


def test_a_group_with_only_pending_offsets_is_reloaded(tmp_path: Path) -> None:
    path = str(tmp_path / "txn.db")
    h = Harness("S", store=path)
    txn(h, {("t", 0): 4}, group="simple")
    h2 = restart(h, path)
    g = h2.coord.group("simple")
    assert g is not None and g.state is S.EMPTY and g.protocol_type is None and g.offsets == {}
    assert marker(h2, COMMIT) == {0: E.NONE}
    assert fetch(h2, [("t", 0)], group="simple") == {("t", 0): (4, E.NONE)}


def test_the_most_recent_record_still_wins_after_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "txn.db")
    h = Harness("S", store=path)
    txn(h, {("foo", 0): 5})
    h.commit({("foo", 0): 7})
    h2 = restart(h, path)
    marker(h2, COMMIT)
    assert fetch(h2, [("foo", 0)]) == {("foo", 0): (7, E.NONE)}
    txn(h2, {("foo", 0): 9})
    h3 = restart(h2, path)                      # record offsets continue above the stored ones
    marker(h3, COMMIT)
    assert fetch(h3, [("foo", 0)]) == {("foo", 0): (9, E.NONE)}


def test_marker_while_the_partition_is_loading(tmp_path: Path) -> None:
    # Kafka appends the marker to the log and materializes it once the load is done (scheduleHandleTxnCompletion
    # runs on the loading scheduler); here the store takes it and the load reads the result
    path = str(tmp_path / "txn.db")
    h = Harness("S", store=path)
    txn(h, {("t", 0): 3})
    h.coord.unload_partition(0)
    h.coord.load_partition(0, defer=True)
    assert txn(h, {("t", 1): 3}) == {("t", 1): E.COORDINATOR_LOAD_IN_PROGRESS}
    assert marker(h, COMMIT) == {0: E.NONE}
    h.coord.complete_loading(0)
    assert fetch(h, [("t", 0)], stable=True) == {("t", 0): (3, E.NONE)}
    assert h.group.pending_txn_offsets == {}


def test_unload_then_load_keeps_pending_offsets(tmp_path: Path) -> None:
    path = str(tmp_path / "txn.db")
    h = Harness("S", store=path)
    txn(h, {("t", 0): 3})
    h.coord.unload_partition(0)
    assert marker(h, COMMIT) == {0: E.NOT_LEADER_OR_FOLLOWER}
    h.coord.load_partition(0)
    assert fetch(h, [("t", 0)], stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert marker(h, COMMIT) == {0: E.NONE}
    assert fetch(h, [("t", 0)], stable=True) == {("t", 0): (3, E.NONE)}


def test_failed_txn_offset_commit_leaves_no_pending_state(hs: Harness) -> None:
    # GroupMetadataTest.testFailedTxnOffsetCommitLeavesNoPendingState; errors mapped as §2.6 step 9
    hs.coord.store.inject_failure(E.NOT_LEADER_OR_FOLLOWER, kind="offsets")
    assert txn(hs, {("t", 0): 1}) == {("t", 0): E.NOT_COORDINATOR}
    assert hs.group.pending_txn_offsets == {} and hs.coord.store.load_partition(0).pending == {}
    assert fetch(hs, [("t", 0)], stable=True) == {("t", 0): (-1, E.NONE)}
    assert hs.coord.store.producer_epoch(0, PID) is None        # the failed write raised no epoch either


def test_failed_marker_write_keeps_the_transaction_pending(hs: Harness) -> None:
    txn(hs, {("t", 0): 1})
    hs.coord.store.inject_failure(E.KAFKA_STORAGE_ERROR, kind="offsets")
    assert marker(hs, COMMIT) == {0: E.KAFKA_STORAGE_ERROR}      # the append error; the sender retries
    assert fetch(hs, [("t", 0)], stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert hs.coord.store.load_partition(0).pending["groupId"][PID][("t", 0)].committed_offset == 1
    assert marker(hs, COMMIT) == {0: E.NONE}
    assert fetch(hs, [("t", 0)], stable=True) == {("t", 0): (1, E.NONE)}


# ------------------------------------------------------------------------------ retention, deletion

def test_pending_partitions_never_expire_and_keep_the_group() -> None:
    # OffsetMetadataManagerTest.testCleanupExpiredOffsetsWithPendingTransactionalOffsets and ...OffsetsOnly;
    # spec §3.9
    h = Harness("S", **{"offsets.retention.minutes": 1})
    h.commit({("t", 0): 1, ("t", 1): 1})
    txn(h, {("t", 0): 2, ("u", 0): 2})
    h.advance(60_000)
    assert h.coord.expire_offsets() == 1                   # t-1 only: t-0 has a pending transactional offset
    assert set(h.fetch(None).offsets()) == {("t", 0)}
    marker(h, ABORT)
    h.advance(1)
    assert h.coord.expire_offsets() == 1 and h.coord.group("groupId") is None
    h2 = Harness("S", **{"offsets.retention.minutes": 1})
    txn(h2, {("t", 0): 2})                                   # pending only: the group stays
    h2.advance(60_000)
    assert h2.coord.expire_offsets() == 0 and h2.coord.group("groupId") is not None


def test_delete_group_removes_pending_offsets(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testDeleteGroupAllOffsetsWithPendingTransactionalOffsets
    hs.commit({("bar-0", 0): 100, ("bar-0", 1): 100, ("bar-1", 0): 100})
    txn(hs, {("bar-1", 0): 101, ("bar-2", 0): 100}, pid=10)
    assert hs.coord.delete_groups(DeleteGroupsRequest(["groupId"])).results[0].error_code == E.NONE
    snapshot = hs.coord.store.load_partition(0)
    assert snapshot.offsets == {} and snapshot.pending == {} and snapshot.groups == {}
    assert marker(hs, COMMIT, pid=10) == {0: E.NONE}        # the late marker resurrects nothing
    assert hs.coord.group("groupId") is None and hs.coord.store.load_partition(0).offsets == {}


# ------------------------------------------------------------------------------ store schema migration

_SCHEMA_V0 = """
CREATE TABLE groups (group_id TEXT PRIMARY KEY, partition INTEGER NOT NULL, protocol_type TEXT,
    generation_id INTEGER NOT NULL, protocol_name TEXT, leader_id TEXT, state_timestamp INTEGER);
CREATE INDEX groups_by_partition ON groups(partition);
CREATE TABLE members (group_id TEXT NOT NULL, position INTEGER NOT NULL, member_id TEXT NOT NULL,
    group_instance_id TEXT, client_id TEXT NOT NULL, client_host TEXT NOT NULL,
    rebalance_timeout_ms INTEGER NOT NULL, session_timeout_ms INTEGER NOT NULL, subscription BLOB NOT NULL,
    assignment BLOB NOT NULL, PRIMARY KEY (group_id, position)) WITHOUT ROWID;
CREATE TABLE offsets (group_id TEXT NOT NULL, topic TEXT NOT NULL, partition_index INTEGER NOT NULL,
    partition INTEGER NOT NULL, committed_offset INTEGER NOT NULL, leader_epoch INTEGER NOT NULL,
    metadata TEXT NOT NULL, commit_timestamp INTEGER NOT NULL, expire_timestamp INTEGER,
    PRIMARY KEY (group_id, topic, partition_index)) WITHOUT ROWID;
CREATE INDEX offsets_by_partition ON offsets(partition);
INSERT INTO offsets VALUES ('groupId', 't', 0, 0, 42, -1, 'm', 5, NULL);
"""


def test_a_version_0_store_is_migrated_in_place(tmp_path: Path) -> None:
    path = str(tmp_path / "v0.db")
    with sqlite3.connect(path) as db:            # the first release's schema, as its files are on disk
        db.executescript(_SCHEMA_V0)
    db.close()
    h = Harness("S", store=path)
    assert h.coord.store.schema_version == SCHEMA_VERSION
    got = h.fetch([("t", 0)]).offsets()[("t", 0)]
    assert (got.committed_offset, got.metadata) == (42, "m")
    txn(h, {("t", 0): 43})                       # an old row (record offset 0) is older than any new one
    marker(h, COMMIT)
    assert fetch(h, [("t", 0)]) == {("t", 0): (43, E.NONE)}
    h2 = restart(h, path)
    assert fetch(h2, [("t", 0)]) == {("t", 0): (43, E.NONE)}
    h2.coord.shutdown()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ValueError, match="newer"):
        GroupStore(path)


# ---------------------------------------------------------------------------------------- asyncio

def test_async_facade() -> None:
    async def scenario() -> None:
        coord = AsyncGroupCoordinator.create({"offsets.topic.num.partitions": 1}, store=":memory:")
        r = await coord.txn_offset_commit(TxnOffsetCommitRequest.of("tx", "g", 5, 0, {("t", 0): 8}))
        assert r.errors() == {("t", 0): E.NONE}
        assert await coord.complete_transaction(5, 0, [0], COMMIT) == {0: E.NONE}
        fetched = await coord.offset_fetch(OffsetFetchRequest.of("g", [("t", 0)], require_stable=True))
        assert fetched.offsets()[("t", 0)].committed_offset == 8
        await coord.close()

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(scenario())
