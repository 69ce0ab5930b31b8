"""The rebalance simulator: deterministic reports of the product's three questions (scale, roll, switch)."""
from __future__ import annotations

import pytest

from kafkagroup.client.sim import SimulationReport, simulate
from kafkagroup.errors import InvalidGroupError

BASE = {"topics": {"orders": 96}, "members": 40}


def scale(strategy: str) -> SimulationReport:
    return simulate({**BASE, "name": f"scale-{strategy}", "strategy": strategy,
                     "steps": [{"action": "scale", "members": 48}]})


def test_simulation_is_deterministic():
    sc = {**BASE, "strategy": "cooperative-sticky",
          "steps": [{"action": "scale", "members": 44}, {"action": "crash", "count": 1}]}
    assert simulate(sc).to_dict() == simulate(sc).to_dict()


def test_scale_40_to_48_eager_stops_everyone():
    r = scale("range")
    assert r.stable and r.members == 48 and r.rebalance_protocol == "EAGER"
    assert r.generations == 1
    assert r.double_ownership == 0
    old = [m for m in r.member_reports if int(m.name.split("-")[1]) < 40]
    assert len(old) == 40
    assert all(m.owned_nothing_ms > 0 and m.revoked >= 2 for m in old)      # stop-the-world
    assert (r.final_min_load, r.final_max_load) == (2, 2)


def test_scale_40_to_48_cooperative_moves_the_minimum_and_stops_nobody():
    r = scale("cooperative-sticky")
    eager = scale("range")
    assert r.stable and r.rebalance_protocol == "COOPERATIVE"
    assert r.generations == 2                                   # revoke round + follow-up
    assert r.moved_partitions == 16                             # 8 newcomers x 2 partitions each
    assert r.double_ownership == 0
    old = [m for m in r.member_reports if int(m.name.split("-")[1]) < 40]
    assert all(m.owned_nothing_ms == 0 and m.lost == 0 for m in old)
    assert sum(m.revoked for m in old) == 16
    # the eager group stopped every old member; the cooperative one none (its cost: 16 partitions wait for
    # the follow-up rebalance, which the members that revoked nothing only notice at their next heartbeat)
    assert sum(m.owned_nothing_ms for m in eager.member_reports[:40]) > 0
    assert r.moved_partitions < eager.moved_partitions
    assert r.max_partition_pause_ms <= 3_000 + 1_000          # <= heartbeat interval + round trips
    assert (r.final_min_load, r.final_max_load) == (2, 2)


def test_roll_restart_static_inside_session_timeout_has_no_rebalance():
    r = simulate({**BASE, "members": 10, "strategy": "range", "static": True,
                  "steps": [{"action": "roll_restart", "downtime_ms": 5_000, "interval_ms": 8_000}]})
    assert r.generations == 0 and r.moved_partitions == 0 and r.stable
    assert all(m.incarnations == 2 and m.down_ms == 5_000 for m in r.member_reports)
    assert r.max_partition_pause_ms >= 5_000                    # a restarting member's partitions wait


def test_roll_restart_dynamic_rebalances_for_every_bounce():
    r = simulate({**BASE, "members": 10, "strategy": "cooperative-sticky",
                  "steps": [{"action": "roll_restart", "downtime_ms": 5_000, "interval_ms": 20_000}]})
    assert r.generations >= 20 and r.double_ownership == 0 and r.stable
    assert all(m.lost == 0 for m in r.member_reports)


def test_switch_to_cooperative_sticky_two_step():
    r = simulate({**BASE, "members": 8, "strategy": "range",
                  "steps": [{"action": "switch_strategy", "strategy": "cooperative-sticky",
                             "downtime_ms": 2_000, "interval_ms": 6_000}]})
    assert r.strategy == ["cooperative-sticky"] and r.rebalance_protocol == "COOPERATIVE"
    assert r.stable and r.double_ownership == 0
    assert all(m.incarnations == 3 for m in r.member_reports)   # two rolling bounces


def test_add_partitions_rebalances_once():
    r = simulate({**BASE, "members": 8, "strategy": "cooperative-sticky",
                  "steps": [{"action": "add_partitions", "topic": "orders", "partitions": 104}]})
    assert r.partitions == 104 and r.generations == 1 and r.moved_partitions == 0
    assert (r.final_min_load, r.final_max_load) == (13, 13)


def test_crash_waits_for_the_session_timeout():
    r = simulate({**BASE, "members": 6, "strategy": "cooperative-sticky",
                  "config": {"session.timeout.ms": 20_000},
                  "steps": [{"action": "crash", "count": 1}]})
    assert r.steps[0].settled_ms >= 20_000
    assert r.max_partition_pause_ms >= 20_000 and r.members == 5


def test_report_serialises_and_prints():
    r = simulate({**BASE, "members": 4, "strategy": "sticky", "steps": [{"action": "wait", "ms": 1_000}]})
    d = r.to_dict()
    assert d["generations"] == 0 and len(d["member_reports"]) == 4
    assert "member-3" in r.summary()


@pytest.mark.parametrize("scenario, match", [
    ({"topics": {"t": 1}, "memberz": 3}, "unknown scenario key"),
    ({"members": 3}, "needs 'topics'"),
    ({"topics": {"t": 1}, "steps": [{"action": "explode"}]}, "unknown scenario action"),
    ({"topics": {"t": 1}, "strategy": "bogus"}, "unknown assignor"),
])
def test_bad_scenarios_are_rejected(scenario, match):
    with pytest.raises(InvalidGroupError, match=match):
        simulate(scenario)


def test_slow_pollers_stretch_the_eager_stop_the_world():
    steps = [{"action": "scale", "members": 24}]
    fast = simulate({**BASE, "members": 20, "strategy": "range", "steps": steps})
    slow = simulate({**BASE, "members": 20, "strategy": "range", "steps": steps,
                     "poll_delay_ms": [100, 2_000], "seed": 7})
    coop = simulate({**BASE, "members": 20, "strategy": "cooperative-sticky", "steps": steps,
                     "poll_delay_ms": [100, 2_000], "seed": 7})
    def idle(r):   # time the 20 original members spent owning nothing
        return sum(m.owned_nothing_ms for m in r.member_reports if int(m.name.split("-")[1]) < 20)

    assert idle(slow) > idle(fast) > 0
    assert idle(coop) == 0
    # (partition-ms without an owner are not always lower under COOPERATIVE: its few moved partitions wait
    # for the follow-up rebalance, which members that revoked nothing join only after a heartbeat + a poll)
    assert coop.moved_partitions < slow.moved_partitions
    assert simulate({**BASE, "members": 20, "strategy": "range", "steps": steps,
                     "poll_delay_ms": [100, 2_000], "seed": 7}).to_dict() == slow.to_dict()
