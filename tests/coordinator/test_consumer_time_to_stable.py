"""Time to stable of a consumer group (KIP-848) whose clients subscribe together, on the manual clock.

The pacing is librdkafka's (src/rdkafka_cgrp.c): a member heartbeats at once after it has applied a new
assignment (the acknowledgement: the "expedited" heartbeat), otherwise at the interval the last answer named.
A partition moves only when its holder has acknowledged its revocation.  The first member gets every partition
at its join; it hears of its revocations only at a heartbeat after the others joined.

* Kafka 4.4's settings (targets batched per ``group.consumer.assignment.interval.ms`` = 1 s, every answer the
  5 s interval): the first member's acknowledgement still sees the old target, so it revokes at its next
  regular heartbeat -- after the second member's, which waits one more interval: two intervals (the broker
  took ~10 s with 10 and 50 confluent consumers, benches/bench_kip848_clients.py).
* serve's defaults: targets at once (``group.consumer.assignment.interval.ms`` = 0, as franz-go's kfake) with
  Kafka's pacing: the acknowledgement carries the revocation; stable at the first regular heartbeats.
* serve's opt-in ``group.consumer.reconciling.heartbeat.interval.ms`` (e.g. 500: the interval answered while
  the group is not Stable; off by default, Kafka has no such key): stable half a second after the last join.

Fidelity: the default's one departure (no batching) is settable back to Kafka's value (the tests below run
each setting).  A group within ``INLINE_TARGET_COST`` is assigned on the request's own thread, so no
answer is computed from a target that is already outdated."""
from __future__ import annotations

from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.coordinator.consumer.reconcile import MemberState
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


def _scanned_state(group) -> str:
    """The group's state by looking at every member (what the group's O(1) count must agree with)."""
    if group.group_epoch > group.assignment_epoch:
        return "Assigning"
    return "Stable" if all(m.assignment.state is MemberState.STABLE and m.member_epoch == group.assignment_epoch
                           for m in group.members.values()) else "Reconciling"


def _heartbeat(member: Member, members: list[Member]) -> bool:
    """One heartbeat; True when the answer changed what the member holds (the client acknowledges at once)."""
    before = member.partitions("t")
    response = member.heartbeat()
    assert response.error_code == 0, response
    assert all(len(v) == 1 for v in _owners(members).values()), _owners(members)     # never two owners
    group = member.coord.consumer_group(member.group)
    assert group.state_name == _scanned_state(group)
    return member.partitions("t") != before


def _heartbeat_and_ack(member: Member, members: list[Member]) -> None:
    while _heartbeat(member, members):
        pass


def _paced_until_balanced(config: dict, members_count: int = 10, partitions: int = 100) -> tuple[int, int]:
    """Members that subscribe 1 ms apart, paced as librdkafka paces them: a heartbeat at once after an
    assignment changed (the acknowledgement), otherwise at the interval the last answer named.  The first
    member acknowledges its everything-assignment 1 ms after the second member joined (as observed with
    confluent-kafka against serve).  Returns (ms of the last join, ms at which every partition is held once
    with counts within one of each other), in the manual clock's time."""
    clock, offload = ManualClock(), NeverRunOffload()
    coord = GroupCoordinator(config, clock=clock, store=":memory:", topics=StaticTopics({"t": partitions}),
                             enable_offset_expiration=False, target_offload=offload)
    members = [Member(coord, "g", f"m{i}", topics=["t"]) for i in range(members_count)]
    due: dict[str, int] = {}

    def beat(m: Member) -> None:
        while _heartbeat(m, members):                 # acknowledge a change at once
            pass
        due[m.member_id] = clock.now_ms() + m.last.heartbeat_interval_ms

    def balanced() -> bool:
        counts = [len(m.partitions("t")) for m in members]
        return sorted(_owners(members)) == list(range(partitions)) and max(counts) - min(counts) <= 1

    assert _heartbeat(members[0], members) and members[0].partitions("t") == set(range(partitions))
    due[members[0].member_id] = 1 + 1                 # its acknowledgement, right after the next join
    for i, m in enumerate(members[1:], start=1):
        clock.advance_to(i)
        beat(m)
        if i == 1:
            clock.advance_to(2)
            beat(members[0])
    last_join = members_count - 1
    while not balanced():
        t = min(due.values())
        assert t < 60_000, "no stable assignment within a minute"
        clock.advance_to(t)
        for m in members:                             # those due now, in join order
            if due[m.member_id] == t:
                beat(m)
    assert not offload.jobs                           # a group this small is assigned on the request's thread
    return last_join, clock.now_ms()


@needs_server_assignors
def test_with_the_reconciling_interval_set_members_are_stable_well_within_one_heartbeat_interval():
    last_join, stable = _paced_until_balanced({"group.consumer.reconciling.heartbeat.interval.ms": 500})
    # waiting members are answered 500 ms while the group is not Stable
    assert stable - last_join <= 500, stable


@needs_server_assignors
def test_by_default_targets_at_once_with_kafkas_pacing_make_it_one_interval():
    last_join, stable = _paced_until_balanced({})
    assert 5_000 <= stable - last_join + 9 and stable <= last_join + INTERVAL_MS, stable   # the first regular heartbeats


@needs_server_assignors
def test_with_kafkas_batching_and_pacing_it_takes_two_intervals_as_on_kafka():
    """Kafka 4.4's settings (the target batched per second, the interval answered to every member): the
    first member's acknowledgement still sees the old target, it hears of its revocation at its next regular
    heartbeat, after the second member's -- which waits one more interval (Kafka 4.4 measured ~10 s)."""
    last_join, stable = _paced_until_balanced({"group.consumer.assignment.interval.ms": 1_000})
    assert stable > 2 * INTERVAL_MS, stable


@needs_server_assignors
def test_a_lone_consumer_gets_everything_at_its_first_heartbeat_even_with_kafkas_batching():
    clock = ManualClock()
    coord = GroupCoordinator({"group.consumer.assignment.interval.ms": 1_000}, clock=clock, store=":memory:",
                             topics=StaticTopics({"t": 8}), enable_offset_expiration=False,
                             target_offload=NeverRunOffload())
    a = Member(coord, "g", "A", topics=["t"])
    assert a.heartbeat().error_code == 0 and a.partitions("t") == set(range(8))
