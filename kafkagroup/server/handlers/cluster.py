"""ApiVersions, Metadata and FindCoordinator: how a client learns the node, its APIs and the topics.

One node (id 0) leads every partition and coordinates every group; it is advertised as the address the
server listens on.  Transactions are not implemented: a FindCoordinator for a transactional id is answered
TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a message saying so -- what a Kafka broker answers a producer whose
transactional id its ACLs refuse, and the one answer every client takes as final (librdkafka retries every
other error, INVALID_REQUEST and COORDINATOR_NOT_AVAILABLE included, until ``init_transactions`` times out; Java
and kafka-python fail on it at once too).  The transaction APIs themselves (AddPartitionsToTxn, EndTxn, ...) are
not advertised.
"""
from __future__ import annotations

import asyncio
import logging
import re
import uuid
from typing import Any

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.framing import EncodedBody, Request
from kafkagroup.server.log import INVALID_TOPIC_EXCEPTION
from kafkagroup.server.metadata_pieces import ENTRIES, SLICE_WORK, assemble
from kafkagroup.server.state import (
    NODE_ID, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONS_REFUSED, NodeState,
)
from kafkagroup.server.versions import ADVERTISED, API_VERSIONS

__all__ = ["HANDLERS"]

log = logging.getLogger("kafkagroup.server")
UNKNOWN_TOPIC_ID = 100
_NO_ID = uuid.UUID(int=0)
_GROUP_KEY, _TRANSACTION_KEY = 0, 1
# KIP-511: what a v3+ ApiVersions request may name as the client's software and version
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?")
_API_KEYS = [{"api_key": k, "min_version": lo, "max_version": hi} for k, (_, lo, hi) in sorted(ADVERTISED.items())]


def _api_versions(state: NodeState, req: Request, peer: str) -> Any:
    if req.body is None:
        # A version above the range: a v0 body with UNSUPPORTED_VERSION listing ApiVersions' own range only,
        # as Kafka's broker does (a client reads that entry and retries at a version it has).
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION,
                "api_keys": [k for k in _API_KEYS if k["api_key"] == API_VERSIONS]}
    if req.api_version >= 3 and not (_SOFTWARE.fullmatch(req.body.client_software_name)
                                     and _SOFTWARE.fullmatch(req.body.client_software_version)):
        log.info("ApiVersions from %s: invalid client software name/version %r %r", peer,
                 req.body.client_software_name, req.body.client_software_version)
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": ()}
    return {"error_code": ErrorCode.NONE, "api_keys": _API_KEYS}


async def _metadata(state: NodeState, req: Request, peer: str) -> EncodedBody:
    """Assembled from kept per-topic entries (:mod:`kafkagroup.server.metadata_pieces`), yielding to the loop
    every ``SLICE_WORK``: a 1,000-topic answer (or auto-creation of 1,000 topics) never holds it in one step.
    Topics may change between two slices (another client's request); each entry is what it was when it was
    taken, and such an answer is marked not to be kept by the whole-answer cache."""
    body, topics_log, version = req.body, state.log, req.api_version
    out: list[bytes] = []
    work = 0
    expected = topics_log.metadata_version
    changed_by_others = False

    async def turn() -> None:
        nonlocal expected, changed_by_others, work
        if work >= SLICE_WORK:
            work = 0
            expected = topics_log.metadata_version
            await asyncio.sleep(0)
            changed_by_others |= topics_log.metadata_version != expected

    def add(name: str | None, code: int = ErrorCode.NONE, topic_id: uuid.UUID = _NO_ID) -> None:
        nonlocal work
        if code == ErrorCode.NONE:
            assert name is not None
            topic_id, partitions = topics_log.topic_id(name), len(topics_log.topics[name])
        else:
            partitions = 0
        entry, cost = ENTRIES.entry(version, code, name, topic_id, partitions)
        out.append(entry)
        work += cost

    requested = body.topics
    if requested is None or (version == 0 and not requested):               # all topics
        for name in list(topics_log.topics):
            if name in topics_log.topics:                                   # not deleted while we yielded
                add(name)
                await turn()
    else:
        allow_create = getattr(body, "allow_auto_topic_creation", True)      # v4+
        by_id: dict[uuid.UUID, str] | None = None
        by_id_version = -1
        for wanted in requested:
            name = getattr(wanted, "name", None)
            # v10+: by topic id -- as Kafka's broker does, whenever the id is not all-zero (read as None),
            # whatever the name: the Java client 4.x sends "" there, its default, not null
            if name is None or getattr(wanted, "topic_id", None) is not None:
                if by_id is None or (changed_by_others and by_id_version != topics_log.metadata_version):
                    by_id = {topics_log.topic_id(n): n for n in topics_log.topics}
                    by_id_version = topics_log.metadata_version
                found = by_id.get(getattr(wanted, "topic_id", None))       # type: ignore[arg-type]
                if found is None or found not in topics_log.topics:
                    # kio reads the all-zero id as None: a request naming neither a name nor an id
                    add(None, UNKNOWN_TOPIC_ID, getattr(wanted, "topic_id", None) or _NO_ID)
                    await turn()
                    continue
                name = found
            if name not in topics_log.topics:
                if topics_log.topic_problem(name):
                    add(name, INVALID_TOPIC_EXCEPTION)
                    await turn()
                    continue
                if not (allow_create and topics_log.auto_create):
                    add(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    await turn()
                    continue
                topics_log.create(name)
                log.info("created topic %r with %d partition(s) (auto-creation by Metadata)",
                         name, topics_log.num_partitions)
            add(name)
            await turn()
    return EncodedBody(assemble(version, state.host, state.port, out), cacheable=not changed_by_others)


def _coordinator(state: NodeState, key: str, key_type: int, batched: bool = False) -> dict[str, Any]:
    if key_type == _GROUP_KEY:
        # Kafka's broker writes Errors.NONE.message(), the text "NONE", into a successful v0-v3 answer, and
        # an empty message into each coordinator of a v4+ (batched) one.
        return {"key": key, "node_id": NODE_ID, "host": state.host, "port": state.port,
                "error_code": ErrorCode.NONE, "error_message": "" if batched else "NONE"}
    if key_type == _TRANSACTION_KEY:
        return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "error_message": TRANSACTIONS_REFUSED}
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": ErrorCode.INVALID_REQUEST,
            "error_message": f"unknown coordinator key type {key_type}"}


def _find_coordinator(state: NodeState, req: Request, peer: str) -> Any:
    body = req.body
    key_type = getattr(body, "key_type", _GROUP_KEY)                         # v1+
    if hasattr(body, "coordinator_keys"):                                    # v4+: batched
        return {"coordinators": [_coordinator(state, k, key_type, batched=True) for k in body.coordinator_keys]}
    return _coordinator(state, body.key, key_type)


HANDLERS = {18: _api_versions, 3: _metadata, 10: _find_coordinator}
