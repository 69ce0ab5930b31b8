"""TxnOffsetCommit and transaction completion (KIP-98; spec §2.6 last paragraph, §2.7).

A TxnOffsetCommit is validated like an OffsetCommit with ``isTransactional=true``
(:func:`~kafkagroup.coordinator.offsets.validate_offset_commit`): a missing group with generation >= 0 is
ILLEGAL_GENERATION at every version, generation < 0 creates a simple (Empty) group; a commit without
member id / generation is accepted by a non-empty group (TxnOffsetCommit v0-v2 send neither); there is no
REBALANCE_IN_PROGRESS for CompletingRebalance; and the member's session is *not* restarted (Kafka's
transactional path does not touch the heartbeat).  The accepted offsets are then written to the store as
*pending* for ``(group, producer id)`` -- durable before the answer, invisible to OffsetFetch -- exactly as
Kafka appends them to ``__consumer_offsets`` inside the producer's transaction.

The pending offsets live in the group id's :class:`~kafkagroup.coordinator.offset_state.GroupOffsets`, which
groups of both kinds hold (one group-id namespace) and which an upgrade or downgrade hands on, so a marker
completes them in whichever group holds the id when it arrives.  Member checks are the kind's: this module
checks a classic group's; the coordinator checks a consumer group's (KIP-848) and then calls
:meth:`TxnOffsetHandlers.store_pending` here.

A transaction marker (Kafka: WriteTxnMarkers on an offsets-topic partition, then
``GroupCoordinator.scheduleHandleTxnCompletion`` / the Java shard's ``replayEndTransactionMarker``) reaches
:meth:`TxnOffsetHandlers.complete_transaction` per offsets-topic partition: on COMMIT every pending offset of
the producer in that partition's groups becomes committed unless the partition already holds a *more
recent* committed record (a plain OffsetCommit written after the transactional one wins, as in Kafka, which
compares the records' log offsets); on ABORT they are dropped.  Both happen in one store transaction before
the call returns; a marker that finds nothing pending is accepted and changes nothing (Kafka ignores it).

Producer fencing: the store keeps the highest producer epoch written per (offsets-topic partition,
producer id), as the log's producer state does.  A TxnOffsetCommit or marker carrying an older epoch is
answered INVALID_PRODUCER_EPOCH (47) and writes nothing (``ProducerAppendInfo.checkProducerEpoch``,
transaction version 1 rule: equal epochs pass).  Limits: no KIP-890 transaction verification (Kafka asks the
transaction coordinator whether the offsets partition was added to the transaction); no coordinator-epoch
check on markers; producer ids never expire (Kafka forgets idle producer ids after
``transactional.id.expiration.ms``).
"""
from __future__ import annotations

import logging
from typing import Callable

from kafkagroup.messages.clock import Clock
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import StoreWriteError, offset_commit_write_error
from kafkagroup.coordinator.group import ClassicGroup
from kafkagroup.messages.api import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafkagroup.coordinator.offsets import (
    commit_response_topics, response_topics, uniform_commit_topics, validate_offset_commit,
)
from kafkagroup.coordinator.offset_state import GroupOffsets
from kafkagroup.coordinator.store import GroupStore

__all__ = ["TxnOffsetHandlers"]

log = logging.getLogger("kafkagroup.coordinator")

_E = ErrorCode


class TxnOffsetHandlers:
    """Pending transactional offsets of the loaded groups and the markers that complete them."""

    def __init__(self, clock: Clock, config: CoordinatorConfig, store: GroupStore,
                 groups: dict[str, ClassicGroup], create_group: Callable[[str], ClassicGroup],
                 partition_for: Callable[[str], int], offsets_of: Callable[[str], GroupOffsets | None]) -> None:
        """``groups``: the classic groups; ``offsets_of(group_id)``: the offsets of the loaded group of that id,
        of either kind (None when no group holds it)."""
        self.clock = clock
        self.config = config
        self.store = store
        self.groups = groups
        self.offsets_of = offsets_of
        self.create_group = create_group
        self.partition_for = partition_for
        # (offsets-topic partition, producer id) -> ids of loaded groups that got pending offsets from it
        # (Kafka's openGroupsForProducer).  May hold ids whose pending offsets were deleted since: harmless,
        # the marker finds nothing there.
        self._producer_groups: dict[tuple[int, int], set[str]] = {}

    # ============================================================ TxnOffsetCommit

    def txn_offset_commit(self, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        """After the gate, to a classic group id (or one no group holds): validate, then store as pending."""
        group = self.groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                return TxnOffsetCommitResponse(uniform_commit_topics(req.topics, _E.ILLEGAL_GENERATION))
            log.info("creating simple consumer group %s via a transactional offset commit", req.group_id)
            group = self.create_group(req.group_id)
        error = validate_offset_commit(group, req.generation_id, req.member_id, req.group_instance_id,
                                       transactional=True)
        if error is not None:
            return TxnOffsetCommitResponse(uniform_commit_topics(req.topics, error))
        return self.store_pending(group.group_id, group.offset_state, req)

    def store_pending(self, group_id: str, state: GroupOffsets, req: TxnOffsetCommitRequest
                      ) -> TxnOffsetCommitResponse:
        """Write a validated TxnOffsetCommit's offsets durably as pending for its producer, then into ``state``
        (the group id's offsets, of either kind)."""
        partition = self.partition_for(group_id)
        accepted, codes = commit_response_topics(req.topics, self.clock.now_ms(), None,
                                                 self.config.offset_metadata_max_bytes)
        write_error = _E.NONE
        if accepted:
            if self._fenced(partition, req.producer_id, req.producer_epoch):
                write_error = _E.INVALID_PRODUCER_EPOCH
            else:
                try:
                    self.store.store_pending_offsets(group_id, partition, req.producer_id,
                                                     req.producer_epoch, accepted)
                except StoreWriteError as exc:
                    write_error = offset_commit_write_error(exc.code)
                    log.warning("transactional offset commit of group %s failed: %s", group_id, exc)
                else:
                    state.add_pending_txn_offsets(req.producer_id, accepted)
                    self._producer_groups.setdefault((partition, req.producer_id), set()).add(group_id)
        return TxnOffsetCommitResponse(response_topics(req.topics, codes, write_error))

    def _fenced(self, partition: int, producer_id: int, producer_epoch: int) -> bool:
        latest = self.store.producer_epoch(partition, producer_id)
        return latest is not None and producer_epoch < latest

    # ============================================================== markers

    def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                             commit: bool) -> ErrorCode:
        """Apply one marker to one offsets-topic partition (owned or loading); returns its error code.

        A write failure answers the append error itself (WriteTxnMarkers reports the log's error; the
        transaction coordinator retries).  For a partition still loading, only the store changes: its
        groups are read back from the store when the load completes."""
        if self._fenced(partition, producer_id, producer_epoch):
            return _E.INVALID_PRODUCER_EPOCH
        try:
            materialized = self.store.complete_transaction(partition, producer_id, producer_epoch, commit)
        except StoreWriteError as exc:
            log.warning("transaction marker of producer %d on partition %d failed: %s", producer_id, partition, exc)
            return exc.code
        for group_id in self._producer_groups.pop((partition, producer_id), ()):
            state = self.offsets_of(group_id)
            if state is not None:
                state.take_pending_txn_offsets(producer_id)
        for group_id, tp, value in materialized:
            state = self.offsets_of(group_id)
            if state is not None:
                state.committed[tp] = value
        return _E.NONE

    # ====================================================== partition moves

    def on_group_loaded(self, partition: int, group_id: str, state: GroupOffsets) -> None:
        for producer_id in state.pending_txn_offsets:
            self._producer_groups.setdefault((partition, producer_id), set()).add(group_id)

    def on_partition_unloaded(self, partition: int) -> None:
        for key in [k for k in self._producer_groups if k[0] == partition]:
            del self._producer_groups[key]
