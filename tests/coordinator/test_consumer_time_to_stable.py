"""Time to stable of a consumer group (KIP-848) whose clients subscribe together, on serve's defaults.

The pacing is librdkafka's (src/rdkafka_cgrp.c): a member heartbeats at once after it has applied a new
assignment (the acknowledgement: the "expedited" heartbeat), otherwise once per heartbeat interval (5 s).
A partition moves only when its holder has acknowledged its revocation, so the group is stable within one
interval only if the first member -- which got every partition at its join -- hears of the revocation on its
acknowledging heartbeat, a few milliseconds after the others joined, and not at its next regular one.

Fidelity: Kafka 4.4 batches target computations (``group.consumer.assignment.interval.ms``, 1 s by default)
and runs them off the request path, so that acknowledging heartbeat still sees the old target and the group
takes two intervals (~10 s with 10 or 50 confluent consumers, benches/bench_kip848_clients.py).  serve
computes the target at the heartbeat that changes the group (``group.consumer.assignment.interval.ms`` = 0 by
default, as franz-go's kfake does) and on the request's own thread for a group within
``INLINE_TARGET_COST``; with 1,000 set, serve batches as Kafka does (test_consumer_group.py)."""
from __future__ import annotations

from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.messages.topics import StaticTopics

from tests.coordinator.consumer_helpers import Member, needs_server_assignors

INTERVAL_MS = 5_000


class NeverRunOffload:
    """serve's worker thread, as a target_offload whose jobs never finish: any target the coordinator sends
    there is never seen by the members (a group this small must not need it)."""

    def __init__(self) -> None:
        self.jobs: list = []

    def __call__(self, job, done) -> None:
        self.jobs.append(job)


def _owners(members: list[Member]) -> dict[int, list[str]]:
    held: dict[int, list[str]] = {}
    for m in members:
        for p in m.partitions("t"):
            held.setdefault(p, []).append(m.member_id)
    return held


def _heartbeat(member: Member, members: list[Member]) -> bool:
    """One heartbeat; True when the answer changed what the member holds (the client acknowledges at once)."""
    before = member.partitions("t")
    response = member.heartbeat()
    assert response.error_code == 0, response
    assert all(len(v) == 1 for v in _owners(members).values()), _owners(members)     # never two owners
    return member.partitions("t") != before


def _heartbeat_and_ack(member: Member, members: list[Member]) -> None:
    while _heartbeat(member, members):
        pass


@needs_server_assignors
def test_members_subscribing_together_are_stable_within_one_heartbeat_interval():
    clock, offload = ManualClock(), NeverRunOffload()
    coord = GroupCoordinator({}, clock=clock, store=":memory:", topics=StaticTopics({"t": 100}),
                             enable_offset_expiration=False, target_offload=offload)
    members = [Member(coord, "g", f"m{i}", topics=["t"]) for i in range(10)]
    a = members[0]
    assert _heartbeat(a, members) and a.partitions("t") == set(range(100))     # a lone member: all, at once
    # the others join while A's acknowledgement is on its way; each joiner's answer follows its join
    for m in members[1:]:
        _heartbeat(m, members)
    _heartbeat_and_ack(a, members)         # A's expedited heartbeat: told to revoke, revokes, acknowledges
    assert len(a.partitions("t")) == 10
    clock.advance(INTERVAL_MS)             # every member's first regular heartbeat, in join order
    for m in members[1:]:
        _heartbeat_and_ack(m, members)
    group = coord.consumer_group("g")
    assert sorted(_owners(members)) == list(range(100))
    assert sorted(len(m.partitions("t")) for m in members) == [10] * 10
    assert group.state_name == "Stable" and not offload.jobs


@needs_server_assignors
def test_a_lone_consumer_gets_everything_at_its_first_heartbeat_even_with_kafkas_batching():
    clock = ManualClock()
    coord = GroupCoordinator({"group.consumer.assignment.interval.ms": 1_000}, clock=clock, store=":memory:",
                             topics=StaticTopics({"t": 8}), enable_offset_expiration=False,
                             target_offload=NeverRunOffload())
    a = Member(coord, "g", "A", topics=["t"])
    assert a.heartbeat().error_code == 0 and a.partitions("t") == set(range(8))
