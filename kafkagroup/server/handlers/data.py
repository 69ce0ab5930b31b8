"""Produce, Fetch, ListOffsets and InitProducerId over the in-memory log (kafkagroup.server.log).

Limits, stated: one replica, so every ``acks`` is satisfied at once; no transactions (a transactional
InitProducerId is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as its FindCoordinator is: see
handlers/cluster.py); idempotent producers get a producer id and epoch but batches
are not de-duplicated by sequence number; no fetch sessions (KIP-227): every Fetch is a full one answered
with session id 0, which every client accepts.  Fetch waits up to ``max_wait_ms`` for ``min_bytes`` as a
broker does, so idle consumers do not spin.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.adapter import ms
from kafkagroup.server.framing import Request
from kafkagroup.server.log import (
    INVALID_TOPIC_EXCEPTION, MESSAGE_TOO_LARGE, OFFSET_OUT_OF_RANGE, BatchError, split_batches,
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
    appended = False
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
            appended = True
        topics.append({"name": t.name, "partition_responses": parts})
    if appended:
        state.log.notify_append()
    if body.acks == 0:
        return NO_RESPONSE
    return {"responses": topics}


def _fetch_once(state: NodeState, body: Any, version: int) -> tuple[list[dict[str, Any]], int]:
    budget = body.max_bytes if hasattr(body, "max_bytes") else 2**31 - 1      # v3+
    total = 0
    responses = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            partition = state.log.partition(t.topic, p.partition)
            result = {"partition_index": p.partition, "error_code": ErrorCode.NONE, "high_watermark": -1,
                      "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                      "preferred_read_replica": -1, "records": b""}
            parts.append(result)
            if partition is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            result["high_watermark"] = result["last_stable_offset"] = partition.high_watermark
            result["log_start_offset"] = partition.log_start_offset
            if not partition.in_range(p.fetch_offset):
                result["error_code"] = OFFSET_OUT_OF_RANGE
                continue
            limit = min(p.partition_max_bytes, budget - total)
            records = partition.read(p.fetch_offset, limit, at_least_one=total == 0)
            result["records"] = records
            total += len(records)
        responses.append({"topic": t.topic, "partitions": parts})
    return responses, total


async def _fetch_waiting(state: NodeState, body: Any, version: int, responses: list, total: int) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms(body.max_wait) / 1000.0
    while total < body.min_bytes and (remaining := deadline - loop.time()) > 0:
        await state.log.wait_for_append(remaining)
        responses, total = _fetch_once(state, body, version)
    return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}


def _fetch(state: NodeState, req: Request, peer: str) -> Any:
    body = req.body
    if getattr(body, "session_id", 0) != 0:                                  # v7+: no sessions here
        return {"error_code": FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": ()}
    responses, total = _fetch_once(state, body, req.api_version)
    if total >= body.min_bytes or ms(body.max_wait) <= 0:
        return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
    return _fetch_waiting(state, body, req.api_version, responses, total)


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
