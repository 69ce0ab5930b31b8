"""Two coordinators on one store file, as brokers sharing the offsets log: a partition moves from one to the
other (unload / load).  Record offsets (log positions) must keep increasing across both, or a transaction
marker could overwrite a later acknowledged commit (Kafka keeps the most recent record of a partition)."""
from __future__ import annotations

from pathlib import Path

from kafkagroup.coordinator import (
    GroupCoordinator, ManualClock, OffsetCommitRequest, OffsetFetchRequest, TransactionResult, TxnOffsetCommitRequest,
)
from kafkagroup.messages.error_codes import ErrorCode as E
from kafkagroup.structs import TopicPartition

CFG = {"offsets.topic.num.partitions": 2}
G = "g1"                                  # offsets-topic partition 0 of 2


def _visible(coord: GroupCoordinator, tp: tuple[str, int]) -> int:
    return coord.offset_fetch(OffsetFetchRequest.of(G, [tp])).offsets()[TopicPartition(*tp)].committed_offset


def test_a_commit_on_the_new_owner_beats_an_older_pending_txn_offset(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    clock = ManualClock()
    a = GroupCoordinator(CFG, clock=clock, store=path, owned_partitions=[0], enable_offset_expiration=False)
    b = GroupCoordinator(CFG, clock=clock, store=path, owned_partitions=[1], enable_offset_expiration=False)
    for i in range(5):        # A writes several records, so its log position is well ahead of what B read at open
        assert set(a.offset_commit(OffsetCommitRequest.of(G, {("x", i): i})).errors().values()) == {E.NONE}
    assert set(a.txn_offset_commit(TxnOffsetCommitRequest.of("tx", G, 7, 0, {("t", 0): 100})).errors().values()) \
        == {E.NONE}
    a.unload_partition(0)     # the partition moves from A to B
    b.load_partition(0)
    assert set(b.offset_commit(OffsetCommitRequest.of(G, {("t", 0): 200})).errors().values()) == {E.NONE}
    assert b.complete_transaction(7, 0, [0], TransactionResult.COMMIT) == {0: E.NONE}
    assert _visible(b, ("t", 0)) == 200          # the most recent record wins
    b.shutdown()
    c = GroupCoordinator(CFG, clock=clock, store=path, owned_partitions=[0], enable_offset_expiration=False)
    assert _visible(c, ("t", 0)) == 200 and _visible(c, ("x", 3)) == 3


def test_a_rolled_back_write_takes_no_record_offset(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    coord = GroupCoordinator(CFG, clock=ManualClock(), store=path, owned_partitions=[0, 1])
    coord.offset_commit(OffsetCommitRequest.of(G, {("t", 0): 1}))
    first = coord.group(G).offsets[TopicPartition("t", 0)].record_offset
    coord.store.inject_failure(E.NOT_ENOUGH_REPLICAS, kind="offsets")
    assert set(coord.offset_commit(OffsetCommitRequest.of(G, {("t", 0): 2})).errors().values()) \
        == {E.COORDINATOR_NOT_AVAILABLE}
    coord.offset_commit(OffsetCommitRequest.of(G, {("t", 0): 3}))
    assert coord.group(G).offsets[TopicPartition("t", 0)].record_offset == first + 1
