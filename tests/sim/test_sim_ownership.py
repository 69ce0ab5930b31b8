"""The simulator's array ledger (kafkagroup.sim.ownership.PartitionLedger) against the client's per-partition
OwnershipLedger as an independent tracker: a long seeded stream of callbacks -- assignments that overlap
(double ownership), revocations and losses naming partitions not owned, crashes, clean stops, restarts,
partitions added and removed, measuring windows reset and closed -- fed to both, every figure compared after
every event."""
from __future__ import annotations

import random

import pytest

from kafkagroup.client.ledger import OwnershipLedger
from kafkagroup.client.ownership import AssignedPartitions
from kafkagroup.errors import InvariantError
from kafkagroup.messages.clock import ManualClock
from kafkagroup.protocol import Assignment, decode_assignment, encode_assignment
from kafkagroup.sim.ownership import PartitionLedger
from kafkagroup.structs import TopicPartition as TP


def _same(a: PartitionLedger, b: OwnershipLedger, where: str) -> None:
    assert a.violation_count == b.violation_count, where
    # the incidents of one callback come in partition order here, in set order there
    key = lambda v: (v.time_ms, v.partition, v.owners)  # noqa: E731
    assert sorted(a.violations, key=key) == sorted(b.violations, key=key), where
    assert a.double_owned() == b.double_owned(), where
    assert a.unowned() == b.unowned(), where
    for topic in {tp.topic for tp in b.owners}:
        assert a.partition_count(topic) == b.partition_count(topic), where
        assert a.unsettled(topic) == b.unsettled(topic), where
    assert a.partition_total() == len(b.owners), where
    assert a.owners == b.owners, where
    figures = {tp: (ps.unowned_ms, ps.max_pause_ms, ps.moves) for tp, ps in b.partitions.items()}
    assert {tp: (ps.unowned_ms, ps.max_pause_ms, ps.moves) for tp, ps in a.partitions.items()} == figures, where
    for name, st in b.members.items():
        mine = a.members[name]
        assert (mine.owned_nothing_ms, mine.waited_ms, mine.gained, mine.moved_in, mine.revoked, mine.lost,
                mine.empty_since, mine.alive) == (st.owned_nothing_ms, st.waited_ms, st.gained, st.moved_in,
                                                  st.revoked, st.lost, st.empty_since, st.alive), (where, name)
        assert a.owned_by(name) == b.owned_by(name), (where, name)
        assert a.owned_count(name) == len(st.owned) == a.members[name].owned, (where, name)


@pytest.mark.parametrize("seed,exclusive", [(0, True), (1, True), (2, True), (3, False), (4, False)])
def test_array_ledger_matches_the_per_partition_ledger_over_seeded_churn(seed: int, exclusive: bool) -> None:
    rng = random.Random(seed)
    clock = ManualClock()
    mine, ref = PartitionLedger(clock, exclusive=exclusive), OwnershipLedger(clock, exclusive=exclusive)
    # which incidents of one callback are kept past the cap depends on iteration order: keep them all here
    mine.KEPT_VIOLATIONS = ref.KEPT_VIOLATIONS = 10**6
    counts = {"a": 40, "b": 7, "c": 1}
    for topic, n in counts.items():
        mine.add_topic_partitions(topic, 0, n)
    ref.add_partitions(TP(t, p) for t, n in counts.items() for p in range(n))
    names = [f"m{i}" for i in range(6)]
    for name in names:
        mine.started(name)
        ref.started(name)
    alive = set(names)

    def some(k: int) -> frozenset[TP]:
        topic = rng.choice(list(counts) + ["new"])
        top = counts.get(topic, 5) + 2          # sometimes a partition nobody registered
        return frozenset(TP(topic, rng.randrange(top)) for _ in range(k))

    def as_member_gets_it(parts: frozenset[TP]) -> frozenset[TP]:
        """Sometimes as a member's decoded assignment (per topic, from the bytes; now and then a partition sent
        twice), which the ledger reads a topic at a time."""
        if rng.random() < 0.5:
            return parts
        sent = list(parts) + rng.sample(list(parts), min(len(parts), rng.randrange(2)))
        return AssignedPartitions.of(decode_assignment(encode_assignment(Assignment(sent))))

    last_assigned: dict[str, frozenset[TP]] = {}
    for step in range(400):
        clock.advance(rng.choice([0, 1, 7, 100]))
        op = rng.random()
        name = rng.choice(names)
        if op < 0.35 and name in alive:
            parts = last_assigned[name] = as_member_gets_it(some(rng.randrange(0, 12)))
            assert mine.assigned(name, parts) == sum(1 for tp in parts if not ref.owners.get(tp))
            ref.assigned(name, parts)
        elif op < 0.6 and name in alive:
            owned = list(ref.owned_by(name))
            parts = frozenset(rng.sample(owned, rng.randrange(len(owned) + 1))) | some(rng.randrange(3))
            if name in last_assigned and rng.random() < 0.3:   # the very set last assigned (eager's revoke)
                parts = last_assigned[name]
            kind = rng.choice(["revoked", "lost"])
            only_owner = sum(1 for tp in parts if ref.owners.get(tp) == {name})
            assert mine.released(name, parts, kind) == only_owner
            ref.released(name, parts, kind)
        elif op < 0.68 and name in alive:
            if rng.random() < 0.5:
                mine.crashed(name)
                ref.crashed(name)
            else:
                mine.stopped(name)
                ref.stopped(name)
            alive.discard(name)
        elif op < 0.76 and name not in alive:
            mine.started(name)
            ref.started(name)
            alive.add(name)
        elif op < 0.8:
            topic = rng.choice(list(counts))
            grown = counts[topic] + rng.randrange(1, 4)
            mine.add_topic_partitions(topic, counts[topic], grown)
            ref.add_partitions(TP(topic, p) for p in range(counts[topic], grown))
            counts[topic] = grown
        elif op < 0.84:
            topic = rng.choice(list(counts))
            gone = [TP(topic, p) for p in range(max(1, counts[topic] - 3), counts[topic])]
            mine.remove_partitions(gone)
            ref.remove_partitions(gone)
            counts[topic] = max(1, counts[topic] - 3)
        elif op < 0.87:
            mine.reset_window()
            ref.reset_window()
        elif op < 0.9:
            mine.close_window()
            ref.close_window()
        _same(mine, ref, f"seed {seed} step {step}")
    assert ref.double_owned() or ref.violation_count or not exclusive
    if exclusive:
        assert ref.violation_count > 0      # the stream did exercise double ownership
        with pytest.raises(InvariantError):
            mine.assert_exclusive()


def test_strict_ledger_raises_at_the_first_double_assignment() -> None:
    clock = ManualClock()
    ledger = PartitionLedger(clock, strict=True)
    ledger.add_topic_partitions("t", 0, 4)
    ledger.assigned("a", frozenset({TP("t", 0), TP("t", 1)}))
    with pytest.raises(InvariantError, match="t-1"):
        ledger.assigned("b", frozenset({TP("t", 1)}))
