"""One group id's offsets: committed ones and pending transactional ones (Kafka's ``OffsetMetadataManager``
keeps them by group id, apart from the group's membership).

A :class:`GroupOffsets` belongs to the group *id*, not to a kind of group: a classic group and a consumer
group with the same id see the same object, so converting one kind into the other (an empty classic group
taken over by a consumer-protocol member, and back) never moves or copies an offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from kafkagroup.structs import TopicPartition

__all__ = ["OffsetAndMetadata", "GroupOffsets"]


@dataclass(slots=True)
class OffsetAndMetadata:
    """A committed offset as the coordinator keeps it (Kafka's ``OffsetAndMetadata``)."""

    committed_offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int | None = None   # only from OffsetCommit v2-v4 with an explicit retention time
    # position of the write in the store (Kafka: the record's offset in __consumer_offsets); a transaction
    # marker materializes a pending offset only over an older committed one.  Not part of the value.
    record_offset: int = field(default=0, compare=False)


class GroupOffsets:
    """Committed offsets of one group id, and transactional offsets pending a marker (per producer id, with
    the producers per partition -- Kafka's openTransactions -- for O(1) stability checks)."""

    __slots__ = ("committed", "pending_txn_offsets", "pending_txn_partitions")

    def __init__(self, committed: dict[TopicPartition, OffsetAndMetadata] | None = None) -> None:
        self.committed: dict[TopicPartition, OffsetAndMetadata] = {} if committed is None else committed
        self.pending_txn_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.pending_txn_partitions: dict[TopicPartition, set[int]] = {}

    def has_offsets(self) -> bool:
        """Committed or pending transactional offsets exist (``GroupMetadata.hasOffsets``)."""
        return bool(self.committed) or bool(self.pending_txn_offsets)

    def clear(self) -> None:
        self.committed.clear()
        self.pending_txn_offsets.clear()
        self.pending_txn_partitions.clear()

    def add_pending_txn_offsets(self, producer_id: int,
                                offsets: Iterable[tuple[TopicPartition, OffsetAndMetadata]]) -> None:
        pending = self.pending_txn_offsets.setdefault(producer_id, {})
        by_partition = self.pending_txn_partitions
        for tp, value in offsets:
            pending[tp] = value
            by_partition.setdefault(tp, set()).add(producer_id)

    def take_pending_txn_offsets(self, producer_id: int) -> dict[TopicPartition, OffsetAndMetadata]:
        """Remove and return the producer's pending offsets (empty if none)."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not pending:
            return {}
        by_partition = self.pending_txn_partitions
        for tp in pending:
            producers = by_partition.get(tp)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    del by_partition[tp]
        return pending

    def drop_pending_txn_partition(self, tp: TopicPartition) -> None:
        """Forget every producer's pending offset of ``tp`` (an offset tombstone clears them, as in Kafka)."""
        for producer_id in self.pending_txn_partitions.pop(tp, ()):
            pending = self.pending_txn_offsets.get(producer_id)
            if pending is not None:
                pending.pop(tp, None)
                if not pending:
                    del self.pending_txn_offsets[producer_id]
