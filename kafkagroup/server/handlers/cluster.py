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

import logging
import re
import uuid
from typing import Any

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.framing import Request
from kafkagroup.server.log import INVALID_TOPIC_EXCEPTION
from kafkagroup.server.state import (
    CLUSTER_ID, NODE_ID, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONS_REFUSED, NodeState,
)
from kafkagroup.server.versions import ADVERTISED

__all__ = ["HANDLERS"]

log = logging.getLogger("kafkagroup.server")
UNKNOWN_TOPIC_ID = 100
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


def _topic(state: NodeState, name: str, error: int = ErrorCode.NONE) -> dict[str, Any]:
    partitions = state.log.topics.get(name, []) if error == ErrorCode.NONE else []
    return {
        "error_code": error, "name": name, "topic_id": state.log.topic_id(name) if partitions else uuid.UUID(int=0),
        "is_internal": False,
        "partitions": [{"error_code": ErrorCode.NONE, "partition_index": i, "leader_id": NODE_ID, "leader_epoch": 0,
                        "replica_nodes": (NODE_ID,), "isr_nodes": (NODE_ID,), "offline_replicas": ()}
                       for i in range(len(partitions))],
    }


def _metadata(state: NodeState, req: Request, peer: str) -> Any:
    body, topics_log = req.body, state.log
    requested = body.topics
    if requested is None or (req.api_version == 0 and not requested):     # all topics
        topics = [_topic(state, name) for name in topics_log.topics]
    else:
        allow_create = getattr(body, "allow_auto_topic_creation", True)      # v4+
        by_id = {topics_log.topic_id(n): n for n in topics_log.topics} if req.api_version >= 10 else {}
        topics = []
        for wanted in requested:
            name = getattr(wanted, "name", None)
            if name is None:                                                # v10+: by topic id
                found = by_id.get(getattr(wanted, "topic_id", None))
                if found is None:
                    topics.append({**_topic(state, "", UNKNOWN_TOPIC_ID), "name": None,
                                   "topic_id": wanted.topic_id})
                    continue
                name = found
            if name not in topics_log.topics:
                if topics_log.topic_problem(name):
                    topics.append(_topic(state, name, INVALID_TOPIC_EXCEPTION))
                    continue
                if not (allow_create and topics_log.auto_create):
                    topics.append(_topic(state, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                topics_log.create(name)
                log.info("created topic %r with %d partition(s) (auto-creation by Metadata)",
                         name, topics_log.num_partitions)
            topics.append(_topic(state, name))
    return {
        "brokers": [{"node_id": NODE_ID, "host": state.host, "port": state.port, "rack": None}],
        "cluster_id": CLUSTER_ID, "controller_id": NODE_ID, "topics": topics,
    }


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
