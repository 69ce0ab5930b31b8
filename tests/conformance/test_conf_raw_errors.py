"""The coordinator's error cases that a client can reach (spec §7), and requests no well-behaved client sends
(nulls where Kafka's schema has none, duplicates, unknown member ids, stale generations, a version an API does
not have, an unknown API key), as raw requests: each answer (or the connection being closed) must be the same
from `kafkagroup serve` as from Apache Kafka 4."""
from __future__ import annotations

import struct
from typing import Any

from conformance_support import (DELETE_GROUPS, DESCRIBE, FIND_COORDINATOR, HEARTBEAT, JOIN, OFFSET_COMMIT,
                                 OFFSET_FETCH, SYNC, describe_group, fetch_offsets, heartbeat_body, join_answer,
                                 join_body, plain, sync_body)
from server_wire import KafkaWire, body, encode_request, nested

API_VERSIONS = 18


def ask(run, api_key: int, version: int, entity: Any, response_version: int | None = None) -> Any:
    """One request on a fresh connection: the answer as plain data, or "closed" if the server closed it."""
    wire = run.wire()
    try:
        wire.send(api_key, version, entity)
        return plain(wire.receive(response_version))
    except (ConnectionError, OSError):
        return "closed"


def ask_frame(run, payload: bytes) -> Any:
    """Raw bytes (a request header and body, no size prefix) on a fresh connection: the answer's correlation
    id and the rest as hex (small answers only: an error code and what follows), or "closed"."""
    wire = run.wire()
    wire.sock.settimeout(15)
    try:
        wire.send_raw(struct.pack(">i", len(payload)) + payload)
        frame = wire.read_frame()
        return {"correlation_id": struct.unpack(">i", frame[:4])[0], "body": frame[4:68].hex()}
    except (ConnectionError, OSError):
        return "closed"


def api_versions_v0(answer: Any) -> Any:
    """An ApiVersions v0 answer from ask_frame: its error code and the API keys it lists (not their version
    ranges, which are each server's own)."""
    if not isinstance(answer, dict):
        return answer
    data = bytes.fromhex(answer["body"])
    error, count = struct.unpack(">hi", data[:6])
    keys = [struct.unpack(">h", data[6 + 6 * i:8 + 6 * i])[0] for i in range(min(count, (len(data) - 6) // 6))]
    return {"error_code": error, "count": count, "keys": keys[:3]}


def header(api_key: int, version: int, correlation_id: int = 7, client_id: bytes | None = b"raw",
           flexible: bool = False) -> bytes:
    """A request header: api key, version, correlation id, nullable client id; v2 (flexible) adds an empty
    tagged-field section."""
    cid = struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return struct.pack(">hhi", api_key, version, correlation_id) + cid + (b"\x00" if flexible else b"")


def string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def commit_body(version, group, generation, member, offsets, metadata=""):
    topics: dict[str, list] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(nested(OFFSET_COMMIT, version, "OffsetCommitRequestPartition",
                                               partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                                               committed_metadata=metadata, commit_timestamp=-1))
    return body(OFFSET_COMMIT, version, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                group_instance_id=None, retention_time=-1,
                topics=tuple(nested(OFFSET_COMMIT, version, "OffsetCommitRequestTopic", name=t, partitions=tuple(ps))
                             for t, ps in topics.items()))


def test_join_sync_heartbeat_errors(conformance):
    def scenario(run):
        group = run.group()
        seen: dict[str, Any] = {}
        j = lambda **kw: join_answer(run.wire().request(JOIN, 5, join_body(5, **kw)))  # noqa: E731
        seen["join.empty_group_id"] = j(group="")
        seen["join.empty_protocol_type"] = j(group=group, protocol_type="")
        seen["join.no_protocols"] = j(group=group, protocols=())
        seen["join.session_below_min"] = j(group=group, session_ms=500)
        seen["join.session_above_max"] = j(group=group, session_ms=2_000_000)
        seen["join.unknown_member_new_group"] = j(group=group, member_id="ghost")
        # Not compared: a JoinGroup listing one protocol name twice gets no answer at all from Kafka 4.4.0 (the
        # member is added, the group stays PreparingRebalance, the connection waits for ever).
        # A real member, generation 1.
        a = run.wire()
        first = a.request(JOIN, 5, join_body(5, group))
        joined = a.request(JOIN, 5, join_body(5, group, member_id=first.member_id))
        ma, gen = joined.member_id, joined.generation_id
        seen["join.a"] = join_answer(joined)
        seen["join.unknown_member_existing_group"] = j(group=group, member_id="ghost")
        seen["join.pending_id_with_instance"] = j(group=group, member_id=ma + "x", instance="i")
        seen["sync.stale_generation"] = plain(a.request(SYNC, 5, sync_body(5, group, gen + 5, ma)))
        seen["sync.unknown_member"] = plain(a.request(SYNC, 5, sync_body(5, group, gen, "ghost")))
        seen["sync.wrong_protocol_name"] = plain(a.request(SYNC, 5, sync_body(5, group, gen, ma,
                                                                              protocol_name="roundrobin")))
        seen["sync.wrong_protocol_type"] = plain(a.request(SYNC, 5, sync_body(5, group, gen, ma,
                                                                              protocol_type="connect")))
        seen["sync.duplicate_assignments"] = plain(a.request(SYNC, 5, sync_body(
            5, group, gen, ma, assignments=((ma, b"one"), (ma, b"two")))))
        seen["sync.unknown_group"] = plain(a.request(SYNC, 5, sync_body(5, run.group("none"), 1, "m")))
        seen["describe.after_sync"] = describe_group(a, group)
        seen["heartbeat.ok"] = plain(a.request(HEARTBEAT, 4, heartbeat_body(4, group, gen, ma)))
        seen["heartbeat.stale_generation"] = plain(a.request(HEARTBEAT, 4, heartbeat_body(4, group, gen - 1, ma)))
        seen["heartbeat.unknown_member"] = plain(a.request(HEARTBEAT, 4, heartbeat_body(4, group, gen, "ghost")))
        seen["heartbeat.unknown_group"] = plain(a.request(HEARTBEAT, 4, heartbeat_body(4, run.group("none"), 1, "m")))
        seen["heartbeat.empty_group_id"] = plain(a.request(HEARTBEAT, 4, heartbeat_body(4, "", 1, "m")))
        # Offsets against the live group.
        c = lambda g, gen_, m, offs, md="": [  # noqa: E731
            [t.name, p.partition_index, plain(p.error_code)]
            for t in a.request(OFFSET_COMMIT, 8, commit_body(8, g, gen_, m, offs, md)).topics for p in t.partitions]
        seen["commit.ok"] = c(group, gen, ma, {("c.one", 0): 3})
        seen["commit.stale_generation"] = c(group, gen + 1, ma, {("c.one", 0): 4})
        seen["commit.unknown_member"] = c(group, gen, "ghost", {("c.one", 0): 4})
        seen["commit.simple_on_live_group"] = c(group, -1, "", {("c.one", 0): 4})
        seen["commit.metadata_too_large"] = c(group, gen, ma, {("c.one", 0): 5}, "m" * 5000)
        seen["commit.empty_group_id"] = c("", -1, "", {("c.one", 0): 5})
        seen["fetch.after"] = fetch_offsets(a, group)
        seen["fetch.unknown_group"] = fetch_offsets(a, run.group("none"), [("c.one", 0)])
        seen["fetch.unknown_group_all"] = fetch_offsets(a, run.group("none"))
        seen["delete.non_empty"] = plain(a.request(DELETE_GROUPS, 2, body(DELETE_GROUPS, 2, groups_names=(group,))))
        seen["delete.unknown"] = plain(a.request(DELETE_GROUPS, 2, body(DELETE_GROUPS, 2,
                                                                        groups_names=(run.group("none"),))))
        for v in (5, 6):                 # v6: an unknown group is GROUP_ID_NOT_FOUND, with a message
            seen[f"describe.v{v}.unknown"] = plain(a.request(DESCRIBE, v, body(
                DESCRIBE, v, groups=(run.group("none"), group), include_authorized_operations=False)))
        seen["describe.empty_id"] = plain(a.request(DESCRIBE, 5, body(DESCRIBE, 5, groups=("",),
                                                                      include_authorized_operations=False)))
        return seen

    conformance(scenario)


def test_bad_requests(conformance):
    def scenario(run):
        seen: dict[str, Any] = {}
        group = run.group()
        seen["find.group"] = ask(run, FIND_COORDINATOR, 3, body(FIND_COORDINATOR, 3, key=group, key_type=0))
        seen["find.empty_key"] = ask(run, FIND_COORDINATOR, 3, body(FIND_COORDINATOR, 3, key="", key_type=0))
        seen["find.bad_key_type"] = ask(run, FIND_COORDINATOR, 3, body(FIND_COORDINATOR, 3, key=group, key_type=7))
        seen["find.v4_two_keys"] = ask(run, FIND_COORDINATOR, 4, body(FIND_COORDINATOR, 4, key_type=0,
                                                                     coordinator_keys=(group, "")))
        # ApiVersions at a version it does not have: Kafka answers v0 with UNSUPPORTED_VERSION.
        # Kafka reads its header as the newest version's (v2): with a v1 header it closes the connection.
        seen["api_versions.v99"] = api_versions_v0(ask_frame(run, header(API_VERSIONS, 99, flexible=True)))
        seen["api_versions.v99_body"] = api_versions_v0(ask_frame(run, header(API_VERSIONS, 99, flexible=True)
                                                                  + b"\x02a\x021\x00"))
        seen["api_versions.v99_v1_header"] = ask_frame(run, header(API_VERSIONS, 99))
        # Other APIs at a version they do not have, and an unknown key.
        seen["join.v99"] = ask_frame(run, header(JOIN, 99) + string(group))
        seen["heartbeat.v99"] = ask_frame(run, header(HEARTBEAT, 99) + string(group))
        seen["api_key.9999"] = ask_frame(run, header(9999, 0))
        # Nulls where the schema has a non-nullable string (Heartbeat v0: group_id, generation, member_id).
        seen["heartbeat.null_group"] = ask_frame(run, header(HEARTBEAT, 0) + string(None) + struct.pack(">i", 1)
                                                 + string("m"))
        seen["heartbeat.null_member"] = ask_frame(run, header(HEARTBEAT, 0) + string(group) + struct.pack(">i", 1)
                                                  + string(None))
        seen["heartbeat.null_client_id"] = ask_frame(run, header(HEARTBEAT, 0, client_id=None) + string(group)
                                                     + struct.pack(">i", 1) + string("m"))
        # A negative array length where the schema's array is not nullable (DescribeGroups v0 groups).
        seen["describe.null_groups"] = ask_frame(run, header(DESCRIBE, 0) + struct.pack(">i", -1))
        # OffsetFetch v1 with a null topic array (only v2+ means "all topics").
        seen["offset_fetch.v1_null_topics"] = ask_frame(run, header(OFFSET_FETCH, 1) + string(group)
                                                        + struct.pack(">i", -1))
        # A request whose body stops early.
        seen["heartbeat.truncated"] = ask_frame(run, header(HEARTBEAT, 0) + string(group))
        return seen

    conformance(scenario)
