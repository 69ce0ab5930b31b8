"""The simulator against outcomes Kafka users know, on the real coordinator and members (ManualClock)."""
from __future__ import annotations

import pytest

from kafkagroup.sim import SimulationReport, simulate
from kafkagroup.sim.scenario import parse_scenario

BASE = {"topics": {"orders": 96}, "members": 40}
SCALE = [{"action": "wait", "ms": 2_000}, {"action": "scale", "members": 48}]


def scale(strategy: str, **extra) -> SimulationReport:
    return simulate({**BASE, "name": f"scale-{strategy}", "strategy": strategy, "steps": SCALE, **extra})


def transitions(series: list[tuple[int, int]]) -> tuple[int, int]:
    """(time it first owned nothing, time it owned something again) in a member's ownership series."""
    dropped = next(t for t, c in series if c == 0)
    back = next(t for t, c in series if t > dropped and c > 0)
    return dropped, back


def test_simulation_is_deterministic():
    sc = {**BASE, "strategy": "cooperative-sticky",
          "steps": [{"action": "scale", "members": 44}, {"action": "crash", "count": 1}]}
    assert simulate(sc).to_dict() == simulate(sc).to_dict()
    other_seed = simulate({**sc, "seed": 5}).to_dict()
    assert other_seed != simulate(sc).to_dict()          # the seed really drives the draws


def test_eager_stops_every_member_until_the_slowest_reaches_its_next_poll():
    r = scale("range")
    assert r.stable and r.members == 48 and r.rebalance_protocol == "EAGER" and r.generations == 1
    owned = r.timeline.owned
    old = [f"member-{i}" for i in range(40)]
    dropped, back = zip(*(transitions(owned[n]) for n in old))
    slowest = max(dropped)                 # the last member to reach a poll (and so to revoke and rejoin)
    assert max(dropped) - min(dropped) > 300          # polls are out of step: members revoke at different times
    assert min(back) >= slowest                        # nobody consumes again before the slowest rejoined
    for n, d, b in zip(old, dropped, back):            # ... so each one idles at least until then
        assert b - d >= slowest - d
        assert next(m for m in r.member_reports if m.name == n).owned_nothing_ms >= slowest - d
    assert r.max_partition_pause_ms >= slowest - min(dropped)
    assert r.paused_partitions == 96                    # every partition stopped
    assert r.double_ownership == 0 and (r.final_min_load, r.final_max_load) == (2, 2)


def test_cooperative_keeps_unaffected_partitions_consuming():
    r = scale("cooperative-sticky")
    eager = scale("range")
    assert r.stable and r.rebalance_protocol == "COOPERATIVE" and r.generations == 2
    assert r.moved_partitions == 16 and r.double_ownership == 0
    # only moved partitions were ever without an owner; the other 80 were consumed throughout
    assert r.paused_partitions == r.moved_partitions
    assert min(c for _, c, n in r.timeline.consuming) >= 96 - 16
    assert all(m.owned_nothing_ms == 0 for m in r.member_reports if int(m.name.split("-")[1]) < 40)
    assert r.partition_unowned_ms < eager.partition_unowned_ms
    # the moved partitions wait for the follow-up rebalance: a heartbeat interval plus a batch, not an instant
    assert r.max_partition_pause_ms > 1_000


def test_static_member_restarting_within_session_timeout_causes_no_rebalance():
    r = simulate({**BASE, "members": 10, "strategy": "range", "static": True,
                  "steps": [{"action": "roll_restart", "downtime_ms": 8_000, "interval_ms": 12_000}]})
    assert r.generations == 0 and r.moved_partitions == 0 and r.stable
    assert all(m.incarnations == 2 and m.down_ms == 8_000 for m in r.member_reports)
    # each member's partitions wait for it to come back: downtime plus its rejoin, no more than a second more
    assert 8_000 <= r.max_partition_pause_ms <= 9_000
    assert r.partition_unowned_ms >= 96 * 8_000


def test_dynamic_rolling_restart_rebalances_for_every_bounce():
    r = simulate({**BASE, "members": 10, "strategy": "cooperative-sticky",
                  "steps": [{"action": "roll_restart", "downtime_ms": 5_000, "interval_ms": 20_000}]})
    assert r.generations >= 20 and r.double_ownership == 0 and r.stable
    assert all(m.lost == 0 for m in r.member_reports)


@pytest.mark.parametrize("session_ms", [10_000, 45_000])
def test_a_crash_costs_the_session_timeout(session_ms):
    r = simulate({**BASE, "members": 6, "strategy": "cooperative-sticky",
                  "config": {"session.timeout.ms": session_ms},
                  "steps": [{"action": "crash", "count": 1}]})
    crashed_partitions = 16
    assert r.steps[0].settled_ms >= session_ms
    assert session_ms <= r.max_partition_pause_ms <= session_ms + 3_000 + 4_000   # + heartbeat + batches
    assert r.partition_unowned_ms >= crashed_partitions * session_ms
    assert r.members == 5 and r.paused_partitions >= crashed_partitions


def test_a_batch_longer_than_max_poll_interval_makes_the_member_leave():
    # batches of 500 records at 100 ms each (50 s at the median, log-normal) against a 30 s poll interval
    r = simulate({**BASE, "members": 4, "strategy": "range", "start_spread_ms": 0,
                  "config": {"max.poll.interval.ms": 30_000, "session.timeout.ms": 10_000},
                  "record_processing_ms": {"median": 100, "sigma": 0.3},
                  "settle_timeout_ms": 60_000, "steps": [{"action": "wait", "ms": 300_000}]})
    assert sum(m.poll_timeouts for m in r.member_reports) >= 4
    assert r.generations >= 2                     # members leave (LeaveGroup) and come back at their next poll
    assert sum(m.lost for m in r.member_reports) > 0   # they find their partitions lost when they poll again


def test_add_partitions_rebalances_once():
    r = simulate({**BASE, "members": 8, "strategy": "cooperative-sticky",
                  "steps": [{"action": "add_partitions", "topic": "orders", "partitions": 104}]})
    assert r.partitions == 104 and r.generations == 1 and r.moved_partitions == 0
    assert (r.final_min_load, r.final_max_load) == (13, 13)
    assert r.paused_partitions == 8               # only the new partitions waited


def test_switch_to_cooperative_sticky_two_step():
    r = simulate({**BASE, "members": 6, "strategy": "range",
                  "steps": [{"action": "switch_strategy", "strategy": "cooperative-sticky",
                             "downtime_ms": 2_000, "interval_ms": 6_000}]})
    assert r.strategy == ["cooperative-sticky"] and r.rebalance_protocol == "COOPERATIVE"
    assert r.stable and r.double_ownership == 0
    assert all(m.incarnations == 3 for m in r.member_reports)   # two rolling bounces


def test_report_serialises_and_prints():
    r = simulate({**BASE, "members": 4, "strategy": "sticky", "steps": [{"action": "wait", "ms": 1_000}]})
    d = r.to_dict()
    assert d["generations"] == 0 and len(d["member_reports"]) == 4 and "timeline" not in d
    assert d["settings"]["max.poll.records"] == 500 and d["settings"]["session.timeout.ms"] == 45_000
    assert "member-3" in r.summary() and "partition-s without a consuming owner" in r.summary()


def test_per_record_draws_keep_polls_nearly_in_step():
    """The documented reason for per-batch draws: with independent per-record costs, 40 members that started
    together keep polling nearly together, so an eager group stops for far less time."""
    per_batch = scale("range")
    per_record = scale("range", record_processing_ms={"median": 2.0, "sigma": 0.5, "per": "record"})
    assert per_record.max_partition_pause_ms < per_batch.max_partition_pause_ms
    assert parse_scenario({**BASE, "record_processing_ms": {"per": "record"}}).processing.per == "record"


def test_an_eager_member_revokes_exactly_at_its_next_poll():
    """Fixed 2 s batches (500 records x 4 ms): each member revokes at a whole number of batches after it
    started consuming, never in the middle of a batch, although it heard of the rebalance mid-batch.
    (After an eager rebalance every member restarts its batches at the same instant, so with fixed batch
    times they stay in step; the seeded log-normal default is what spreads them.)"""
    from kafkagroup.sim.app import ProcessingModel
    from kafkagroup.sim.harness import GroupHarness

    h = GroupHarness({"orders": 12}, coordinator_config={"group.initial.rebalance.delay.ms": 0},
                     member_config={"partition.assignment.strategy": "range"}, network_latency_ms=1,
                     exclusive=False, application=ProcessingModel(500, 4.0, 0.0))
    for i in range(4):
        h.advance(700)                 # start 700 ms apart: polls out of step
        h.add()
    assert h.settle() is not None
    h.advance(5_000)
    started = {n: s[-1][0] for n, s in h.timeline.owned.items()}   # when each began its current run of batches
    joined_at = h.clock.now_ms()
    h.add()                            # a fifth member: an eager rebalance
    assert h.settle() is not None
    revoked = {n: next(t for t, c in h.timeline.owned[n] if t > started[n] and c == 0) for n in started}
    for n in started:
        assert (revoked[n] - started[n]) % 2_000 == 0, (n, started[n], revoked[n])
    heard = joined_at + 3_000 + 2     # within a heartbeat interval (+ round trip) of the JoinGroup
    assert all(joined_at < t <= heard + 2_000 for t in revoked.values())
