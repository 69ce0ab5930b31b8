"""The group and offset APIs through the wire, at every advertised version, fed back into each other.

Each JoinGroup version drives one group's whole life: join (two-step from v4), sync, heartbeat, commit,
fetch, describe, leave, a simple commit when Empty, OffsetDelete, DeleteGroups; the other APIs take a
different version each round so that every advertised version of every group API is exercised.
"""
from __future__ import annotations

import socket
import threading

import pytest

from server_wire import KafkaWire, body, nested

JOIN, HEARTBEAT, LEAVE, SYNC, COMMIT, FETCH, FIND, DESCRIBE, LIST, DELETE, OFFSET_DELETE = (
    11, 12, 13, 14, 8, 9, 10, 15, 16, 42, 47)
NONE, UNKNOWN_TOPIC, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED, INVALID_REQUEST = 0, 3, 27, 79, 42


def join(wire: KafkaWire, version: int, group: str, member_id: str = "", instance: str | None = None,
         session_ms: int = 10_000, protocols=(("range", b"sub"),)):
    protos = tuple(nested(JOIN, version, "JoinGroupRequestProtocol", name=n, metadata=m) for n, m in protocols)
    return wire.request(JOIN, version, body(
        JOIN, version, group_id=group, session_timeout=session_ms, rebalance_timeout=session_ms,
        member_id=member_id, group_instance_id=instance, protocol_type="consumer", protocols=protos,
        reason=None))


def join_fully(wire: KafkaWire, version: int, group: str, **kw):
    first = join(wire, version, group, **kw)
    if version >= 4 and kw.get("instance") is None:
        assert first.error_code == MEMBER_ID_REQUIRED, first
        assert first.member_id
        return join(wire, version, group, member_id=first.member_id, **kw)
    return first


def sync(wire, version, group, generation, member, assignments=()):
    items = tuple(nested(SYNC, version, "SyncGroupRequestAssignment", member_id=m, assignment=a) for m, a in assignments)
    return wire.request(SYNC, version, body(SYNC, version, group_id=group, generation_id=generation, member_id=member,
                                            group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                            assignments=items))


def commit(wire, version, group, offsets, generation=-1, member=""):
    topics = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(nested(COMMIT, version, "OffsetCommitRequestPartition", partition_index=p,
                                               committed_offset=o, committed_leader_epoch=-1,
                                               committed_metadata="m", commit_timestamp=-1))
    return wire.request(COMMIT, version, body(
        COMMIT, version, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=None, retention_time=-1,
        topics=tuple(nested(COMMIT, version, "OffsetCommitRequestTopic", name=t, partitions=tuple(ps))
                     for t, ps in topics.items())))


def fetch_offsets(wire, version, group, partitions):
    """{(topic, partition): (offset, metadata, error)} from OffsetFetch of any version."""
    if version >= 8:
        topics = tuple(nested(FETCH, version, "OffsetFetchRequestTopics", name=t, partition_indexes=(p,))
                       for t, p in partitions)
        groups = (nested(FETCH, version, "OffsetFetchRequestGroup", group_id=group, member_id=None, member_epoch=-1,
                         topics=topics),)
        r = wire.request(FETCH, version, body(FETCH, version, groups=groups, require_stable=False))
        assert len(r.groups) == 1 and r.groups[0].group_id == group and r.groups[0].error_code == NONE
        topics_out = r.groups[0].topics
    else:
        topics = tuple(nested(FETCH, version, "OffsetFetchRequestTopic", name=t, partition_indexes=(p,))
                       for t, p in partitions)
        r = wire.request(FETCH, version, body(FETCH, version, group_id=group, topics=topics, require_stable=False))
        if version >= 2:
            assert r.error_code == NONE
        topics_out = r.topics
    return {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
            for t in topics_out for p in t.partitions}


@pytest.mark.parametrize("jv", range(10))
def test_group_life_at_every_version(server, jv):
    sv, hv, cv, fv, lv, dv = jv % 6, jv % 5, 2 + jv % 8, 1 + jv % 9, jv % 6, jv % 6
    group = f"life-{jv}"
    with KafkaWire(server.address) as wire:
        found = wire.request(FIND, jv % 7, body(FIND, jv % 7, key=group, key_type=0, coordinator_keys=(group,)))
        if jv % 7 >= 4:
            (found,) = found.coordinators
        assert (found.error_code, found.node_id, found.host, found.port) == (NONE, 0, *server.address)

        joined = join_fully(wire, jv, group)
        assert joined.error_code == NONE and joined.generation_id == 1 and joined.leader == joined.member_id
        assert [m.metadata for m in joined.members] == [b"sub"]
        member, gen = joined.member_id, joined.generation_id

        synced = sync(wire, sv, group, gen, member, [(member, b"assignment-bytes")])
        assert synced.error_code == NONE and synced.assignment == b"assignment-bytes"
        assert wire.request(HEARTBEAT, hv, body(HEARTBEAT, hv, group_id=group, generation_id=gen, member_id=member,
                                                group_instance_id=None)).error_code == NONE

        committed = commit(wire, cv, group, {("t", 0): 5, ("t", 1): 7}, gen, member)
        assert {(t.name, p.partition_index): p.error_code for t in committed.topics for p in t.partitions} == {
            ("t", 0): NONE, ("t", 1): NONE}
        assert fetch_offsets(wire, fv, group, [("t", 0), ("t", 1), ("t", 2)]) == {
            ("t", 0): (5, "m", NONE), ("t", 1): (7, "m", NONE), ("t", 2): (-1, "", NONE)}

        described = wire.request(DESCRIBE, dv, body(DESCRIBE, dv, groups=(group,), include_authorized_operations=False))
        (g,) = described.groups
        assert (g.error_code, g.group_state, g.protocol_data) == (NONE, "Stable", "range")
        assert [(m.member_id, m.client_id, m.member_assignment) for m in g.members] == [
            (member, "test", b"assignment-bytes")]

        if lv >= 3:
            leave = body(LEAVE, lv, group_id=group, members=(
                nested(LEAVE, lv, "MemberIdentity", member_id=member, group_instance_id=None, reason="bye"),))
        else:
            leave = body(LEAVE, lv, group_id=group, member_id=member)
        left = wire.request(LEAVE, lv, leave)
        assert left.error_code == NONE
        if lv >= 3:
            assert [(m.member_id, m.error_code) for m in left.members] == [(member, NONE)]

        # Empty now: a simple commit (no generation) is accepted and read back
        assert commit(wire, cv, group, {("t", 2): 11}).topics[0].partitions[0].error_code == NONE
        assert fetch_offsets(wire, fv, group, [("t", 2)])[("t", 2)][0] == 11

        deleted = wire.request(OFFSET_DELETE, 0, body(OFFSET_DELETE, 0, group_id=group, topics=(
            nested(OFFSET_DELETE, 0, "OffsetDeleteRequestTopic", name="t", partitions=(
                nested(OFFSET_DELETE, 0, "OffsetDeleteRequestPartition", partition_index=0),)),)))
        assert deleted.error_code == NONE and deleted.topics[0].partitions[0].error_code == NONE
        assert fetch_offsets(wire, fv, group, [("t", 0), ("t", 1)]) == {
            ("t", 0): (-1, "", NONE), ("t", 1): (7, "m", NONE)}

        listed = wire.request(LIST, jv % 6, body(LIST, jv % 6, states_filter=(), types_filter=()))
        assert group in {g.group_id for g in listed.groups}
        result = wire.request(DELETE, jv % 3, body(DELETE, jv % 3, groups_names=(group,)))
        assert [(r.group_id, r.error_code) for r in result.results] == [(group, NONE)]
        listed = wire.request(LIST, jv % 6, body(LIST, jv % 6, states_filter=(), types_filter=()))
        assert group not in {g.group_id for g in listed.groups}


def test_parked_join_holds_only_its_connection(server):
    """Member B's JoinGroup waits for A to rejoin; meanwhile other connections are answered, A learns of the
    rebalance from its heartbeat, and both joins complete once A rejoins."""
    a, b, c = (KafkaWire(server.address) for _ in range(3))
    try:
        first = join_fully(a, 9, "parked")
        ma = first.member_id
        assert sync(a, 5, "parked", 1, ma, [(ma, b"x")]).error_code == NONE

        b_first = join(b, 9, "parked")
        assert b_first.error_code == MEMBER_ID_REQUIRED
        b.send(JOIN, 9, body(JOIN, 9, group_id="parked", session_timeout=10_000, rebalance_timeout=10_000,
                             member_id=b_first.member_id, group_instance_id=None, protocol_type="consumer",
                             protocols=(nested(JOIN, 9, "JoinGroupRequestProtocol", name="range", metadata=b"b"),),
                             reason=None))
        # the loop is free while B is parked: another connection is answered
        state = c.request(DESCRIBE, 5, body(DESCRIBE, 5, groups=("parked",), include_authorized_operations=False))
        assert state.groups[0].group_state == "PreparingRebalance"
        hb = a.request(HEARTBEAT, 4, body(HEARTBEAT, 4, group_id="parked", generation_id=1, member_id=ma,
                                          group_instance_id=None))
        assert hb.error_code == REBALANCE_IN_PROGRESS
        rejoined = join(a, 9, "parked", member_id=ma)
        b_joined = b.receive()
        assert rejoined.error_code == NONE and b_joined.error_code == NONE
        assert rejoined.generation_id == b_joined.generation_id == 2
        assert {m.member_id for m in rejoined.members} == {ma, b_first.member_id}
    finally:
        for w in (a, b, c):
            w.close()


def test_pipelined_requests_answered_in_order(server):
    with KafkaWire(server.address) as wire:
        joined = join_fully(wire, 9, "pipe")
        sync(wire, 5, "pipe", 1, joined.member_id, [(joined.member_id, b"")])
        hb = body(HEARTBEAT, 4, group_id="pipe", generation_id=1, member_id=joined.member_id, group_instance_id=None)
        batch = bytearray()
        from server_wire import encode_request
        for i in range(200):
            wire.correlation_id += 1
            wire.pending.append((HEARTBEAT, 4, wire.correlation_id))
            batch += encode_request(HEARTBEAT, 4, wire.correlation_id, hb)
        wire.send_raw(bytes(batch))
        # receive() checks every correlation id against the order sent
        assert all(wire.receive().error_code == NONE for _ in range(200))


def test_disconnect_while_parked_is_handled_by_session_timeout(server):
    a = KafkaWire(server.address)
    with KafkaWire(server.address) as b:
        ma = join_fully(a, 9, "gone", session_ms=500).member_id
        sync(a, 5, "gone", 1, ma, [(ma, b"")])
        # B's join parks (A must rejoin); A vanishes; after A's session times out B's join completes alone
        mb = join(b, 9, "gone", session_ms=10_000).member_id
        b.send(JOIN, 9, body(JOIN, 9, group_id="gone", session_timeout=10_000, rebalance_timeout=10_000, member_id=mb,
                             group_instance_id=None, protocol_type="consumer", reason=None,
                             protocols=(nested(JOIN, 9, "JoinGroupRequestProtocol", name="range", metadata=b""),)))
        a.sock.shutdown(socket.SHUT_RDWR)
        a.close()
        done = b.receive()
        assert done.error_code == NONE and done.leader == mb and [m.member_id for m in done.members] == [mb]


def test_many_connections_at_once(server):
    errors = []

    def member(i: int) -> None:
        try:
            w = KafkaWire(server.address)
            r = commit(w, 9, f"many-{i}", {("t", i % 3): i})
            assert r.topics[0].partitions[0].error_code == NONE
            assert fetch_offsets(w, 8, f"many-{i}", [("t", i % 3)])[("t", i % 3)][0] == i
            w.close()
        except Exception as e:   # reported below
            errors.append(e)

    threads = [threading.Thread(target=member, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


def test_find_coordinator_batched_and_transaction_keys(server):
    with KafkaWire(server.address) as wire:
        r = wire.request(FIND, 6, body(FIND, 6, key_type=0, coordinator_keys=("a", "b", "c")))
        assert [(c.key, c.node_id, c.error_code) for c in r.coordinators] == [("a", 0, NONE), ("b", 0, NONE),
                                                                              ("c", 0, NONE)]
        r = wire.request(FIND, 3, body(FIND, 3, key="txn", key_type=1))
        # TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the answer librdkafka does not retry until its timeout
        assert r.error_code == 53 and "transactions are not supported" in r.error_message


def test_join_naming_one_protocol_twice_keeps_the_server_alive(server):
    """The coordinator answers as Kafka does (tests/coordinator/test_coord_duplicate_protocols.py: both entries
    kept, the first one read); over the wire the join completes the same way, and the server keeps serving
    other groups and connections."""
    wire = KafkaWire(server.address, timeout=3)
    try:
        r = join_fully(wire, 9, "dup", protocols=(("range", b"a"), ("range", b"b")))
        assert (r.error_code, r.generation_id, r.protocol_name) == (NONE, 1, "range")
        assert [m.metadata for m in r.members] == [b"a"]
    finally:
        wire.close()
    with KafkaWire(server.address) as other:
        assert join_fully(other, 9, "after-dup").error_code == NONE
        assert commit(other, 9, "after-dup-offsets", {("t", 0): 1}).topics[0].partitions[0].error_code == NONE


def test_stopping_answers_parked_joins_not_coordinator_and_keeps_commits(tmp_path):
    from server_wire import ServerThread
    store = str(tmp_path / "g.sqlite")
    s = ServerThread(topics={"t": 1}, store=store, config={"group.initial.rebalance.delay.ms": 0})
    a, b = KafkaWire(s.address), KafkaWire(s.address)
    try:
        ma = join_fully(a, 9, "stop").member_id
        sync(a, 5, "stop", 1, ma, [(ma, b"")])
        assert commit(a, 9, "stop", {("t", 0): 99}, 1, ma).topics[0].partitions[0].error_code == NONE
        described = a.request(DESCRIBE, 5, body(DESCRIBE, 5, groups=("stop",), include_authorized_operations=False))
        assert described.groups[0].members[0].client_host == "/127.0.0.1"      # as Kafka records it
        mb = join(b, 9, "stop").member_id
        b.send(JOIN, 9, body(JOIN, 9, group_id="stop", session_timeout=10_000, rebalance_timeout=10_000, member_id=mb,
                             group_instance_id=None, protocol_type="consumer", reason=None,
                             protocols=(nested(JOIN, 9, "JoinGroupRequestProtocol", name="range", metadata=b""),)))
        s.stop()
        assert b.receive().error_code in (15, 16)   # the coordinator's retriable answer: clients look for it again
    finally:
        a.close()
        b.close()
    again = ServerThread(topics={"t": 1}, store=store)
    w = KafkaWire(again.address)
    try:
        assert fetch_offsets(w, 8, "stop", [("t", 0)])[("t", 0)][0] == 99
    finally:
        w.close()
        again.stop()
