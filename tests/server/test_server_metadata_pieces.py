"""Metadata answers assembled from kept per-topic entries, in slices (kafkagroup.server.metadata_pieces).

A Metadata request the server has not answered before (the first, one that auto-creates 1,000 topics, or
one whose bytes vary) must not hold the event loop in one step: other groups' heartbeats wait behind it.
These tests count loop turns and encoded entries (no wall time), and check the assembled bytes against
kio's encoding of the whole answer for every version.
"""
from __future__ import annotations

import asyncio
import dataclasses
import io
import random
import uuid

import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from server_wire import body, encode_request, nested

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.server.entities import to_entity
from kafkagroup.server.framing import EncodedBody, decode_request
from kafkagroup.server.handlers import HANDLERS
from kafkagroup.server.log import INVALID_TOPIC_EXCEPTION, InMemoryLog
from kafkagroup.server.metadata_pieces import ENTRIES, SLICE_WORK
from kafkagroup.server.state import CLUSTER_ID, NODE_ID, NodeState
from kafkagroup.server.versions import request_class, response_class

METADATA, UNKNOWN_TOPIC_ID, NO_ID = 3, 100, uuid.UUID(int=0)


def metadata_request(version: int, topics: list[str | uuid.UUID] | None, allow_create: bool = True):
    fields = {f.name for f in dataclasses.fields(request_class(METADATA, version))}

    def wanted(t: str | uuid.UUID):
        if version >= 10:
            return nested(METADATA, version, "MetadataRequestTopic", name=None if isinstance(t, uuid.UUID) else t,
                          topic_id=t if isinstance(t, uuid.UUID) else NO_ID)
        return nested(METADATA, version, "MetadataRequestTopic", name=t)

    kw = {"topics": None if topics is None else tuple(wanted(t) for t in topics)}
    for name, value in (("allow_auto_topic_creation", allow_create), ("include_cluster_authorized_operations", False),
                        ("include_topic_authorized_operations", False)):
        if name in fields:
            kw[name] = value
    return decode_request(encode_request(METADATA, version, 7, body(METADATA, version, **kw))[4:])


def answer(state: NodeState, request) -> EncodedBody:
    result = asyncio.run(HANDLERS[METADATA](state, request, "/127.0.0.1"))
    assert isinstance(result, EncodedBody)
    return result


def whole(version: int, host: str, port: int, topics: list[tuple[int, str | None, uuid.UUID, int]]) -> bytes:
    """kio's encoding of the whole answer, from what each topic should say: (error, name, id, partitions)."""
    cls = response_class(METADATA, version)
    entity = to_entity(cls, {
        "brokers": [{"node_id": NODE_ID, "host": host, "port": port, "rack": None}],
        "cluster_id": CLUSTER_ID, "controller_id": NODE_ID,
        "topics": [{"error_code": e, "name": n, "topic_id": i, "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": 0,
                                    "replica_nodes": (NODE_ID,), "isr_nodes": (NODE_ID,), "offline_replicas": ()}
                                   for p in range(count)]} for e, n, i, count in topics]})
    buf = io.BytesIO()
    entity_writer(cls)(buf, entity)
    return buf.getvalue()


@pytest.mark.parametrize("auto_create", [True, False])
@pytest.mark.parametrize("version", range(13))
def test_assembled_answers_are_kios_encoding_of_the_whole_answer(version, auto_create):
    log = InMemoryLog(num_partitions=2, auto_create=auto_create)
    for name, count in (("a", 1), ("b", 3), ("c", 12), ("again", 1)):
        log.create(name, count)
    log.delete("again")
    log.create("again", 4)                                   # a new id for the name
    state = NodeState("node.example", 19092, None, log)  # type: ignore[arg-type]
    ok = lambda n: (ErrorCode.NONE, n, log.topic_id(n), len(log.topics[n]))  # noqa: E731
    for _ in range(2):                                       # cold entries, then kept ones
        new = f"new-{version}-{_}"
        got = answer(state, metadata_request(version, ["a", "bad name!", new, "c", "a", "", "again"]))
        created = [ok(new)] if auto_create else [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, new, NO_ID, 0)]
        expected = [ok("a"), (INVALID_TOPIC_EXCEPTION, "bad name!", NO_ID, 0), *created, ok("c"), ok("a"),
                    (INVALID_TOPIC_EXCEPTION, "", NO_ID, 0), ok("again")]
        assert b"".join(got.pieces) == whole(version, "node.example", 19092, expected)
        assert got.cacheable
    every = answer(state, metadata_request(version, None if version else []))
    assert b"".join(every.pieces) == whole(version, "node.example", 19092, [ok(n) for n in log.topics])
    if version >= 1:
        assert b"".join(answer(state, metadata_request(version, [])).pieces) == whole(version, "node.example",
                                                                                       19092, [])
    if version >= 4:
        refused = answer(state, metadata_request(version, ["nope", "b"], allow_create=False))
        assert b"".join(refused.pieces) == whole(version, "node.example", 19092, [
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "nope", NO_ID, 0), ok("b")])
    if version >= 10:
        stranger = uuid.UUID(int=5)
        by_id = answer(state, metadata_request(version, [log.topic_id("b"), stranger, "a", log.topic_id("again")]))
        assert b"".join(by_id.pieces) == whole(version, "node.example", 19092, [
            ok("b"), (UNKNOWN_TOPIC_ID, None, stranger, 0), ok("a"), ok("again")])
        # neither a name nor an id (the all-zero id, which kio reads as None): answered as an unknown id, not
        # a failure inside the handler (the framing fuzz test found it closing the connection)
        nameless = answer(state, metadata_request(version, [NO_ID, "a"]))
        assert b"".join(nameless.pieces) == whole(version, "node.example", 19092, [
            (UNKNOWN_TOPIC_ID, None, NO_ID, 0), ok("a")])


class Turns:
    """Counts the loop turns another task gets while a request is handled."""

    def __init__(self) -> None:
        self.count = 0
        self.done = False

    async def run(self) -> None:
        while not self.done:
            await asyncio.sleep(0)
            self.count += 1


def handled_with_turns(state: NodeState, request) -> tuple[EncodedBody, int]:
    async def scenario() -> tuple[EncodedBody, int]:
        turns = Turns()
        ticker = asyncio.ensure_future(turns.run())
        await asyncio.sleep(0)
        before = turns.count
        result = await HANDLERS[METADATA](state, request, "/127.0.0.1")
        turns.done = True
        await ticker
        return result, turns.count - before
    return asyncio.run(scenario())


def test_auto_creating_1000_topics_lets_the_loop_serve_others_between_slices():
    log = InMemoryLog(num_partitions=1)
    state = NodeState("127.0.0.1", 9092, None, log)  # type: ignore[arg-type]
    names = [f"slices-{i:04d}" for i in range(1000)]
    result, turns = handled_with_turns(state, metadata_request(9, names))
    assert sorted(log.topics) == names
    # a cold 1-partition entry costs 9 of SLICE_WORK: the loop turns at least every SLICE_WORK // 9 topics
    assert turns >= 1000 * 9 // (SLICE_WORK + 9)
    decoded, _ = entity_reader(load_response_schema(METADATA, 9))(b"".join(result.pieces), 0)
    assert [t.name for t in decoded.topics] == names


def test_a_new_request_for_known_topics_reuses_their_entries_and_still_yields():
    log = InMemoryLog(num_partitions=3)
    state = NodeState("127.0.0.1", 9092, None, log)  # type: ignore[arg-type]
    names = [f"reuse-{i:04d}" for i in range(1000)]
    answer(state, metadata_request(12, names))
    encoded = ENTRIES.encoded
    random.Random(1).shuffle(names)                          # other bytes: the whole-answer cache misses
    result, turns = handled_with_turns(state, metadata_request(12, names))
    assert ENTRIES.encoded == encoded                        # every entry came from the kept ones
    assert turns >= 2
    decoded, _ = entity_reader(load_response_schema(METADATA, 12))(b"".join(result.pieces), 0)
    assert [t.name for t in decoded.topics] == names
    assert {len(t.partitions) for t in decoded.topics} == {3}


def test_an_answer_built_while_others_changed_the_topics_is_not_kept_whole():
    log = InMemoryLog(num_partitions=1)
    state = NodeState("127.0.0.1", 9092, None, log)  # type: ignore[arg-type]
    names = [f"race-{i:04d}" for i in range(1000)]

    async def scenario() -> tuple[EncodedBody, EncodedBody]:
        async def other_client() -> None:
            while "race-0999" not in log.topics and "race-0100" not in log.topics:
                await asyncio.sleep(0)
            log.create("created-by-another-client")
        alone = await HANDLERS[METADATA](state, metadata_request(9, names[:10]), "/127.0.0.1")
        racer = asyncio.ensure_future(other_client())
        raced = await HANDLERS[METADATA](state, metadata_request(9, names[10:]), "/127.0.0.1")
        await racer
        return alone, raced

    alone, raced = asyncio.run(scenario())
    assert alone.cacheable                  # its own auto-creations do not count
    assert not raced.cacheable              # another client's change between its slices does
