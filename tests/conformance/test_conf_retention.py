"""Offsets retention (spec §3.9) on a server pair of its own with offsets.retention.minutes=1 (Kafka's minimum)
and a one-second check interval: an Empty consumer group's offsets and a simple (no protocol type) group's
commits expire after the retention period, and the groups go with them; a Stable consumer group keeps the
offsets of the topics its members subscribe to and loses the others (KIP-496). Both servers run the scenario
at once (it is mostly a wait of about a minute); extended set only."""
from __future__ import annotations

import time

import pytest

from conformance_support import (HEARTBEAT, JOIN, LEAVE, OFFSET_COMMIT, SYNC, describe_group, fetch_offsets,
                                 heartbeat_body, join_body, leave_body, list_groups, plain, sync_body)
from server_wire import body, nested

from kafkagroup.protocol.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription

RETENTION = {"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}


def commit(wire, group, offsets, generation=-1, member=""):
    topics: dict[str, list] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(nested(OFFSET_COMMIT, 8, "OffsetCommitRequestPartition", partition_index=p,
                                               committed_offset=o, committed_leader_epoch=-1, committed_metadata="",
                                               commit_timestamp=-1))
    answer = wire.request(OFFSET_COMMIT, 8, body(
        OFFSET_COMMIT, 8, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=None, retention_time=-1,
        topics=tuple(nested(OFFSET_COMMIT, 8, "OffsetCommitRequestTopic", name=t, partitions=tuple(ps))
                     for t, ps in topics.items())))
    return sorted([t.name, p.partition_index, plain(p.error_code)] for t in answer.topics for p in t.partitions)


def member(wire, group, topics):
    """A static consumer-protocol member subscribed to `topics`, alone in `group`: (member id, generation)."""
    meta = encode_subscription(Subscription(topics))
    joined = wire.request(JOIN, 7, join_body(7, group, instance="m", protocols=(("range", meta),),
                                             session_ms=30_000))
    assignment = encode_assignment(Assignment([]))
    wire.request(SYNC, 5, sync_body(5, group, joined.generation_id, joined.member_id, "m",
                                    ((joined.member_id, assignment),)))
    return joined.member_id, joined.generation_id


@pytest.mark.conformance_extended
def test_retention_of_empty_simple_and_stable_groups(conformance_with):
    check = conformance_with(RETENTION)

    def scenario(run):
        seen = {}
        wire = run.wire()
        empty, simple, stable = run.group("empty"), run.group("simple"), run.group("stable")
        m, gen = member(wire, empty, ["c.one"])
        seen["commit.empty"] = commit(wire, empty, {("c.one", 0): 5}, gen, m)
        wire.request(LEAVE, 4, leave_body(4, empty, [(m, "m")]))
        seen["commit.simple"] = commit(wire, simple, {("c.one", 0): 6})
        hb = run.wire()
        sm, sgen = member(hb, stable, ["c.one"])
        seen["commit.stable"] = commit(hb, stable, {("c.one", 0): 7, ("c.two", 0): 8}, sgen, sm)
        seen["before"] = {g: fetch_offsets(wire, g) for g in (empty, simple, stable)}
        seen["described.before"] = [describe_group(wire, g)["group_state"] for g in (empty, simple, stable)]
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:          # heartbeats keep `stable` alive through the retention period
            assert plain(hb.request(HEARTBEAT, 4, heartbeat_body(4, stable, sgen, sm, "m")))["error_code"] == 0
            if all(not fetch_offsets(wire, g)["offsets"] for g in (empty, simple)) and \
                    len(fetch_offsets(wire, stable)["offsets"]) < 2:
                break
            time.sleep(1)
        seen["after"] = {g: fetch_offsets(wire, g) for g in (empty, simple, stable)}
        seen["described.after"] = [describe_group(wire, g)["group_state"] for g in (empty, simple, stable)]
        seen["listed.after"] = list_groups(wire, run.group(""))
        return seen

    check(scenario, parallel=True)
