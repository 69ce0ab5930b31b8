"""CreateTopics, CreatePartitions, DeleteTopics, DeleteRecords and DescribeConfigs: the topic admin APIs over
the in-memory log, answered with the error codes and messages of a one-node Apache Kafka 4.4 broker.

One node (id 0) holds every replica, so a replication factor other than 1 (or -1, the default) is
INVALID_REPLICATION_FACTOR and a manual assignment may name broker 0 only.  A CreateTopics request may create
at most 10,000 partitions in all (Kafka's bound per controller operation: above it every topic of the request
is refused with POLICY_VIOLATION, as Kafka 4.4.0 refuses them); a CreatePartitions request may add at most as
many.  ``validate_only``
checks and answers without changing anything.  Consumers see new partitions and topics through Metadata: a
group's leader notices the change at its next metadata refresh (``metadata.max.age.ms``) and rejoins, which
rebalances the group.  Topic configs: :mod:`kafkagroup.server.topic_config`.  Committed offsets of a deleted
topic are kept by the coordinator (Kafka deletes them); a new topic under the name gets a new topic id.
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter
from typing import Any, Iterator

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.framing import Request
from kafkagroup.server.log import INVALID_TOPIC_EXCEPTION, OFFSET_OUT_OF_RANGE
from kafkagroup.server.state import NODE_ID, NodeState
from kafkagroup.server.topic_config import broker_rows, config_problem, topic_rows

__all__ = ["HANDLERS"]

log = logging.getLogger("kafkagroup.server")
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR = 36, 37, 38
INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, POLICY_VIOLATION, UNKNOWN_TOPIC_ID = 39, 40, 44, 100
MAX_PARTITIONS_PER_REQUEST = 10_000
_TOPIC, _BROKER = 2, 4           # DescribeConfigs resource types
_NO_ID = uuid.UUID(int=0)


def _replication_problem(factor: int) -> tuple[int, str] | None:
    if factor == -1 or factor == 1:
        return None
    if factor < 1:
        return INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value."
    return INVALID_REPLICATION_FACTOR, (f"Unable to replicate the partition {factor} time(s): The target replication "
                                        f"factor of {factor} cannot be reached because only 1 broker(s) are registered.")


def _assignment_problem(assignments: Any) -> tuple[int, str] | None:
    """A manual replica assignment: partitions 0..n-1, each on broker 0 alone."""
    for a in assignments:
        other = next((b for b in a.broker_ids if b != NODE_ID), None)
        if other is not None:
            return INVALID_REPLICA_ASSIGNMENT, (f"The manual partition assignment includes broker {other}, but no "
                                                f"such broker is registered.")
        if len(a.broker_ids) != 1:
            return INVALID_REPLICA_ASSIGNMENT, (f"The manual partition assignment of partition {a.partition_index} "
                                                f"names {len(a.broker_ids)} replicas; this node is the only broker.")
    if sorted(a.partition_index for a in assignments) != list(range(len(assignments))):
        return INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
    return None


def _once_per_name(topics: Any) -> Iterator[tuple[Any, bool]]:
    """A request's topics in request order, each name once (its first entry), with whether the name appears
    more than once: Kafka answers a duplicated name once, with INVALID_REQUEST."""
    counts = Counter(t.name for t in topics)
    answered: set[str] = set()
    for t in topics:
        if t.name not in answered:
            answered.add(t.name)
            yield t, counts[t.name] > 1


def _create_topics(state: NodeState, req: Request, peer: str) -> Any:
    body, topics_log = req.body, state.log
    results: list[dict[str, Any]] = []

    def partition_count(t: Any) -> int:
        return len(t.assignments) if t.assignments else (topics_log.num_partitions if t.num_partitions == -1
                                                         else t.num_partitions)

    # Kafka refuses the whole request, every topic of it, when it would create too many partitions at once
    too_many = sum(max(partition_count(t), 0) for t in {t.name: t for t in body.topics}.values()) \
        > MAX_PARTITIONS_PER_REQUEST
    for t, duplicated in _once_per_name(body.topics):
        result = {"name": t.name, "topic_id": _NO_ID, "error_code": ErrorCode.NONE, "error_message": None,
                  "num_partitions": -1, "replication_factor": -1, "configs": ()}
        results.append(result)
        count = partition_count(t)
        configs = {c.name: c.value for c in t.configs}
        problem = None
        if too_many:
            problem = POLICY_VIOLATION, "Excessively large number of partitions per request."
        elif duplicated:
            problem = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
        elif (bad_name := topics_log.topic_problem(t.name)) is not None:
            problem = INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {bad_name}"
        elif t.name in topics_log.topics:
            problem = TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."
        elif t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
            field = "numPartitions" if t.num_partitions != -1 else "replicationFactor"
            problem = ErrorCode.INVALID_REQUEST, (f"A manual partition assignment was specified, but {field} was "
                                                  f"not set to -1.")
        elif t.assignments:
            problem = _assignment_problem(t.assignments)
        elif count < 1:
            problem = INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        else:
            problem = _replication_problem(t.replication_factor)
        if problem is None:
            problem = next(((INVALID_CONFIG, text) for name, value in configs.items()
                            if (text := config_problem(name, value)) is not None), None)
        if problem is not None:
            result["error_code"], result["error_message"] = problem
            continue
        if not body.validate_only:
            topics_log.create(t.name, count, configs)
            log.info("created topic %r with %d partition(s) for %s (CreateTopics)", t.name, count, peer)
        result.update(topic_id=topics_log.topic_id(t.name), num_partitions=count, replication_factor=1,
                      configs=topic_rows(configs, state.broker_config, None, include_synonyms=False))
    return {"topics": results}


def _create_partitions(state: NodeState, req: Request, peer: str) -> Any:
    body, topics_log = req.body, state.log
    results: list[dict[str, Any]] = []
    budget = MAX_PARTITIONS_PER_REQUEST
    for t, duplicated in _once_per_name(body.topics):
        current = len(topics_log.topics.get(t.name, ()))
        problem = None
        if duplicated:
            problem = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
        elif t.name not in topics_log.topics:
            problem = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        elif t.count == current:
            problem = INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
        elif t.count < current:
            problem = INVALID_PARTITIONS, (f"The topic {t.name} currently has {current} partition(s); {t.count} "
                                           f"would not be an increase.")
        elif t.assignments is not None and len(t.assignments) != t.count - current:
            problem = INVALID_REPLICA_ASSIGNMENT, (f"Attempted to add {t.count - current} additional partition(s), "
                                                   f"but only {len(t.assignments)} assignment(s) were specified.")
        elif t.assignments is not None and (other := next((b for a in t.assignments for b in a.broker_ids
                                                           if b != NODE_ID), None)) is not None:
            problem = INVALID_REPLICA_ASSIGNMENT, (f"The manual partition assignment includes broker {other}, but "
                                                   f"no such broker is registered.")
        elif t.count - current > budget:
            problem = POLICY_VIOLATION, "Excessively large number of partitions per request."
        if problem is not None:
            results.append({"name": t.name, "error_code": problem[0], "error_message": problem[1]})
            continue
        budget -= t.count - current
        if not body.validate_only:
            topics_log.add_partitions(t.name, t.count)
            log.info("topic %r grown from %d to %d partition(s) for %s (CreatePartitions)",
                     t.name, current, t.count, peer)
        results.append({"name": t.name, "error_code": ErrorCode.NONE, "error_message": None})
    return {"results": results}


def _delete_topics(state: NodeState, req: Request, peer: str) -> Any:
    body, topics_log = req.body, state.log
    if hasattr(body, "topics"):                                               # v6+: by name or by id
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    by_id = {topics_log.topic_id(n): n for n in topics_log.topics} if any(n is None for n, _ in wanted) else {}
    responses = []
    for name, topic_id in wanted:
        result = {"name": name, "topic_id": _NO_ID, "error_code": ErrorCode.NONE, "error_message": None}
        responses.append(result)
        if name is None:
            name = by_id.get(topic_id)
            if name is None:
                result.update(topic_id=topic_id or _NO_ID, error_code=UNKNOWN_TOPIC_ID)
                continue
            result["name"] = name
        if name not in topics_log.topics:
            result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        result["topic_id"] = topics_log.topic_id(name)
        topics_log.delete(name)
        log.info("deleted topic %r for %s (DeleteTopics)", name, peer)
    return {"responses": responses}


def _delete_records(state: NodeState, req: Request, peer: str) -> Any:
    # Kafka reads the request into a map by partition: a partition named twice is answered once, for the offset
    # named last
    wanted: dict[str, dict[int, int]] = {}
    for t in req.body.topics:
        for p in t.partitions:
            wanted.setdefault(t.name, {})[p.partition_index] = p.offset
    topics = []
    for name, offsets in wanted.items():
        parts = []
        for index, offset in offsets.items():
            result = {"partition_index": index, "low_watermark": -1, "error_code": ErrorCode.NONE}
            parts.append(result)
            partition = state.log.partition(name, index)
            if partition is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif offset < -1 or offset > partition.high_watermark:
                result["error_code"] = OFFSET_OUT_OF_RANGE
            else:
                result["low_watermark"] = partition.delete_records(offset)
        topics.append({"name": name, "partitions": parts})
    return {"topics": topics}


def _describe_configs(state: NodeState, req: Request, peer: str) -> Any:
    body = req.body
    synonyms = getattr(body, "include_synonyms", False)                     # v1+
    results = []
    for r in body.resources:
        result = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": r.resource_type,
                  "resource_name": r.resource_name, "configs": ()}
        results.append(result)
        if r.resource_type == _TOPIC:
            if r.resource_name not in state.log.topics:
                result["error_code"], result["error_message"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""
                continue
            result["configs"] = topic_rows(state.log.configs.get(r.resource_name, {}), state.broker_config,
                                           r.configuration_keys, synonyms)
        elif r.resource_type == _BROKER:
            if r.resource_name == "":
                continue          # the cluster-wide dynamic defaults: serve has none
            if r.resource_name != str(NODE_ID):
                result["error_code"] = ErrorCode.INVALID_REQUEST
                result["error_message"] = (f"Unexpected broker id, expected {NODE_ID} or empty string, but received "
                                           f"{r.resource_name}")
                continue
            result["configs"] = broker_rows(state.broker_config, r.configuration_keys, synonyms)
        else:
            result["error_code"] = ErrorCode.INVALID_REQUEST
            result["error_message"] = f"Unsupported resource type {r.resource_type} for DescribeConfigs"
    return {"results": results}


HANDLERS = {19: _create_topics, 20: _delete_topics, 21: _delete_records, 32: _describe_configs,
            37: _create_partitions}
