"""Produce, Fetch, ListOffsets and InitProducerId over the in-memory log (kafkagroup.server.log).

Limits, stated: one replica, so every ``acks`` is satisfied at once; no transactions (a transactional
InitProducerId is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as its FindCoordinator is: see
handlers/cluster.py); idempotent producers get a producer id and epoch but batches
are not de-duplicated by sequence number; no fetch sessions (KIP-227): every Fetch is a full one answered
with session id 0, which every client accepts.  Fetch waits up to ``max_wait_ms`` for ``min_bytes`` as a
broker does, so idle consumers do not spin; its answer is bounded by ``fetch.max.bytes`` whatever the
request asks, and waits for room in the server's answer budget (``queued.max.answer.bytes``) before the
records are copied.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.adapter import ms
from kafkagroup.server.answer_budget import current_hold
from kafkagroup.server.framing import Records, Request
from kafkagroup.server.log import (
    INVALID_TOPIC_EXCEPTION, MESSAGE_TOO_LARGE, OFFSET_OUT_OF_RANGE, BatchError, PartitionLog, split_batches,
)
from kafkagroup.server.state import NO_RESPONSE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONS_REFUSED, NodeState

__all__ = ["HANDLERS"]

log = logging.getLogger("kafkagroup.server")
INVALID_REQUIRED_ACKS = 21
FETCH_SESSION_ID_NOT_FOUND = 70
_LATEST, _EARLIEST, _MAX_TIMESTAMP = -1, -2, -3


def _produce(state: NodeState, req: Request, peer: str) -> Any:
    body = req.body
    topics = []
    for t in body.topic_data:
        parts = []
        for p in t.partition_data:
            result = {"index": p.index, "error_code": ErrorCode.NONE, "base_offset": -1, "log_append_time": None,
                      "log_start_offset": -1, "record_errors": (), "error_message": None}
            parts.append(result)
            if body.acks not in (-1, 0, 1):
                result["error_code"] = INVALID_REQUIRED_ACKS
                continue
            if state.log.topic_problem(t.name):
                result["error_code"] = INVALID_TOPIC_EXCEPTION
                continue
            partition = state.log.partition(t.name, p.index, create=True)
            if partition is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            try:
                batches = split_batches(p.records or b"", state.log.max_message_bytes(t.name))
            except BatchError as e:
                log.info("produce to %s-%d from %s rejected: %s", t.name, p.index, peer, e)
                # Kafka answers a batch over the limit with the code alone (no error message)
                result["error_code"] = e.code
                result["error_message"] = None if e.code == MESSAGE_TOO_LARGE else str(e)
                continue
            result["base_offset"] = partition.append(batches)
            result["log_start_offset"] = partition.log_start_offset
        topics.append({"name": t.name, "partition_responses": parts})
    if body.acks == 0:
        return NO_RESPONSE
    return {"responses": topics}


class _FetchPlan:
    """What one pass over a Fetch's partitions found: the answer's partitions, each holding the log's batches
    (not yet copied) in ``"records"``; their total size; whether a partition answered an error."""

    __slots__ = ("responses", "total", "error", "partitions")

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        self.total = 0
        self.error = False
        self.partitions: list[PartitionLog] = []     # the partitions to wait on for data


def _plan_fetch(state: NodeState, body: Any, version: int) -> _FetchPlan:
    """Kafka's rule (ReplicaManager.readFromLocalLog): the answer is bounded by min(the request's max_bytes
    (v3+), fetch.max.bytes); each partition by min(its partition_max_bytes, what is left of that bound);
    from v3 on (no hard limit) the first batch of the first partition with data is returned even if
    larger than both (KIP-74), so a consumer always makes progress."""
    plan = _FetchPlan()
    request_max = body.max_bytes if hasattr(body, "max_bytes") else 2**31 - 1      # v3+
    left = min(request_max, state.fetch_max_bytes)
    at_least_one = version >= 3
    for t in body.topics:
        parts = []
        for p in t.partitions:
            partition = state.log.partition(t.topic, p.partition)
            result = {"partition_index": p.partition, "error_code": ErrorCode.NONE, "high_watermark": -1,
                      "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                      "preferred_read_replica": -1, "records": ()}
            parts.append(result)
            if partition is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                plan.error = True
                continue
            if not partition.in_range(p.fetch_offset):     # answered -1 for the offsets, as Kafka 4 does
                result["error_code"] = OFFSET_OUT_OF_RANGE
                plan.error = True
                continue
            result["high_watermark"] = result["last_stable_offset"] = partition.high_watermark
            result["log_start_offset"] = partition.log_start_offset
            plan.partitions.append(partition)
            batches = partition.batches_from(p.fetch_offset, max(min(p.partition_max_bytes, left), 0),
                                             at_least_one=at_least_one and plan.total == 0)
            size = sum(map(len, batches))
            result["records"] = batches
            plan.total += size
            left -= size
        plan.responses.append({"topic": t.topic, "partitions": parts})
    return plan


async def _fetch_answer(plan: _FetchPlan) -> dict[str, Any]:
    """The answer, once the server's answer budget has room for its records (kafkagroup.server.answer_budget):
    they are the log's batches, not copies, but the answer keeps them alive until it is written, even if
    the log drops them meanwhile."""
    hold = current_hold()
    if hold is not None and plan.total:
        await hold.reserve(plan.total)
    return _answer(plan)


def _answer(plan: _FetchPlan) -> dict[str, Any]:
    for topic in plan.responses:
        for result in topic["partitions"]:
            result["records"] = Records(result["records"])
    return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": plan.responses}


async def _fetch_waiting(state: NodeState, body: Any, version: int, plan: _FetchPlan) -> Any:
    """Wait up to max_wait for min_bytes, woken only by appends to the partitions read; cancelled (and
    forgotten by the log) when the client's connection closes (kafkagroup.server.connection)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms(body.max_wait) / 1000.0
    while plan.total < body.min_bytes and not plan.error and (remaining := deadline - loop.time()) > 0:
        await state.log.wait_for_append(plan.partitions, remaining)
        plan = _plan_fetch(state, body, version)
    return await _fetch_answer(plan)


def _fetch(state: NodeState, req: Request, peer: str) -> Any:
    body = req.body
    if getattr(body, "session_id", 0) != 0:                                  # v7+: no sessions here
        return {"error_code": FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": ()}
    plan = _plan_fetch(state, body, req.api_version)
    # as Kafka: answered at once when enough is there, when nothing may be waited for, or on an error
    if plan.total >= body.min_bytes or ms(body.max_wait) <= 0 or plan.error or not plan.partitions:
        return _answer(plan) if plan.total == 0 else _fetch_answer(plan)
    return _fetch_waiting(state, body, req.api_version, plan)


def _list_offsets(state: NodeState, req: Request, peer: str) -> Any:
    topics = []
    for t in req.body.topics:
        parts = []
        for p in t.partitions:
            result = {"partition_index": p.partition_index, "error_code": ErrorCode.NONE, "timestamp": -1,
                      "offset": -1, "leader_epoch": 0}
            parts.append(result)
            partition = state.log.partition(t.name, p.partition_index)
            if partition is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.timestamp == _LATEST:
                result["offset"] = partition.high_watermark
            elif p.timestamp == _EARLIEST:
                result["offset"] = partition.log_start_offset
            elif p.timestamp == _MAX_TIMESTAMP:
                result["offset"], result["timestamp"] = partition.max_timestamp()
            elif p.timestamp >= 0:
                result["offset"], result["timestamp"] = partition.offset_for_timestamp(p.timestamp)
            else:
                result["error_code"] = ErrorCode.INVALID_REQUEST
        topics.append({"name": t.name, "partitions": parts})
    return {"topics": topics}


def _init_producer_id(state: NodeState, req: Request, peer: str) -> Any:
    body = req.body
    if body.transactional_id is not None:
        log.info("InitProducerId from %s for transactional id %r refused: transactions are not supported",
                 peer, body.transactional_id)
        return {"error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "error_message": TRANSACTIONS_REFUSED,
                "producer_id": -1, "producer_epoch": -1}
    producer_id = getattr(body, "producer_id", -1)                          # v3+: epoch bump (KIP-360)
    if producer_id >= 0 and producer_id < state.next_producer_id:
        epoch = getattr(body, "producer_epoch", -1) + 1
        if epoch <= 32767:
            return {"error_code": ErrorCode.NONE, "producer_id": producer_id, "producer_epoch": epoch}
    producer_id = state.next_producer_id
    state.next_producer_id += 1
    return {"error_code": ErrorCode.NONE, "producer_id": producer_id, "producer_epoch": 0}


HANDLERS = {0: _produce, 1: _fetch, 2: _list_offsets, 22: _init_producer_id}
