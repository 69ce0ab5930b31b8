"""The simulator with consumer-protocol (KIP-848) members: the real coordinator's ConsumerGroupHeartbeat on a
ManualClock, side by side with classic groups, and rolling migrations between the two protocols.

The ownership checks replay every ownership change the members made (their rebalance callbacks, stops, crashes)
in order, as the simulator's ledger received them."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from kafkagroup.cli import main
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.sim import ScenarioError, parse_scenario, simulate
from kafkagroup.sim.ownership import PartitionLedger
from kafkagroup.structs import TopicPartition

ROLL = {"name": "roll", "topics": {"orders": 40, "payments": 20}, "members": 10, "start_spread_ms": 5_000,
        "steps": [{"action": "roll_restart", "downtime_ms": 10_000, "interval_ms": 30_000}]}
LATENCY = 1      # the scenarios' default network_latency_ms


@pytest.fixture
def events(monkeypatch):
    """Every ownership change in order: (time, member, "assign" | "release", partitions)."""
    log: list[tuple[int, str, str, frozenset]] = []

    def wrap(name, kind, all_owned=False):
        original = getattr(PartitionLedger, name)

        def recorded(self, member, *args):
            parts = self.owned_by(member) if all_owned else frozenset(TopicPartition(*tp) for tp in args[0])
            log.append((self.clock.now_ms(), member, kind, parts))
            return original(self, member, *args)
        monkeypatch.setattr(PartitionLedger, name, recorded)

    wrap("assigned", "assign")
    wrap("released", "release")
    wrap("stopped", "release", all_owned=True)
    wrap("crashed", "release", all_owned=True)
    return log


def replay(log) -> tuple[dict[TopicPartition, str | None], dict[TopicPartition, list[tuple[int, str, str]]]]:
    """Replay the changes: no partition is ever given to a member while another owns it (revoke before assign).
    Returns the owner of each partition at the end and each partition's history."""
    owner: dict[TopicPartition, str | None] = {}
    history: dict[TopicPartition, list[tuple[int, str, str]]] = {}
    for t, member, kind, parts in log:
        for tp in parts:
            history.setdefault(tp, []).append((t, member, kind))
            if kind == "assign":
                assert owner.get(tp) in (None, member), f"t={t}: {tp} given to {member} while {owner[tp]} owns it"
                owner[tp] = member
            elif owner.get(tp) == member:
                owner[tp] = None
    return owner, history


def all_partitions(scenario) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, n in scenario["topics"].items() for p in range(n)}


def test_consumer_protocol_rolling_restart_keeps_one_owner_per_partition(events):
    sc = {**ROLL, "protocol": "consumer"}
    r = simulate(sc)
    assert r.rebalance_protocol == "KIP-848" and r.group_protocol == "consumer" and r.group_kind == "consumer"
    assert r.label == "consumer/uniform" and r.stable and r.refusals == []
    assert r.double_ownership == 0
    owner, history = replay(events)
    # every partition owned at the end, by a running member, and the load is even (uniform assignor)
    assert set(owner) == all_partitions(sc) and all(owner.values())
    assert (r.final_min_load, r.final_max_load) == (6, 6)
    assert all(m.protocol == "consumer" and m.incarnations == 2 for m in r.member_reports)
    # a rolling restart moves partitions: to the others when a member stops, back when it returns
    assert r.moved_partitions > 0
    moved = [tp for tp, h in history.items() if len({m for _, m, k in h if k == "assign"}) > 1]
    assert moved


def test_kip848_hands_a_partition_over_only_after_its_owner_revoked_and_acknowledged(events):
    """Scale-out: an owner revokes at its poll, acknowledges with a heartbeat, and only the coordinator's answer
    to a later heartbeat of the newcomer gives the partition: at least a round trip after the revocation."""
    sc = {"topics": {"orders": 24}, "members": 4, "protocol": "consumer", "start_spread_ms": 2_000,
          "steps": [{"action": "wait", "ms": 1_000}, {"action": "add_members", "count": 2}]}
    r = simulate(sc)
    assert r.stable and r.double_ownership == 0 and (r.final_min_load, r.final_max_load) == (4, 4)
    owner, history = replay(events)
    handed_over = 0
    for tp, h in history.items():
        for (t0, m0, k0), (t1, m1, k1) in zip(h, h[1:]):
            if k0 == "release" and k1 == "assign" and m1 != m0:
                assert t1 >= t0 + 2 * LATENCY, (tp, h)
                handed_over += m1 in ("member-4", "member-5")     # the newcomers (the rest: initial settling)
    assert handed_over == r.moved_partitions == 8          # 24/4 -> 24/6: each old member gives up 2
    # the old members never stopped consuming the partitions they kept (no stop-the-world)
    old = [m for m in r.member_reports if int(m.name.split("-")[1]) < 4]
    assert all(m.owned_nothing_ms == 0 and m.revoked == 2 for m in old)
    assert r.paused_partitions == 8


def test_kip848_moves_fewer_partitions_and_pauses_less_than_eager_on_a_rolling_restart():
    eager = simulate({**ROLL, "strategy": "range"})
    coop = simulate({**ROLL, "strategy": "cooperative-sticky"})
    kip848 = simulate({**ROLL, "protocol": "consumer"})
    for r in (eager, coop, kip848):
        assert r.stable and r.double_ownership == 0 and r.paused_partitions == 60
    assert kip848.moved_partitions < eager.moved_partitions
    assert kip848.partition_unowned_ms < eager.partition_unowned_ms
    assert kip848.pause_p50_ms < eager.pause_p50_ms
    # eager members stop everything at every rebalance; a consumer-protocol member only while it is down/new
    idle = {r.label: sum(m.owned_nothing_ms for m in r.member_reports) for r in (eager, kip848)}
    assert idle[kip848.label] < idle[eager.label]
    assert kip848.requests.get("consumer_group_heartbeat", 0) > 0 and "join_group" not in kip848.requests


def test_range_remote_assignor_and_per_member_protocols_are_parsed():
    sc = parse_scenario({**ROLL, "protocol": {"default": "consumer", "member-3": "classic"},
                         "config": {"group.remote.assignor": "range"}})
    assert sc.protocol_of("member-0") == "consumer" and sc.protocol_of("member-3") == "classic"
    assert sc.remote_assignor == "range" and sc.protocols == {"consumer", "classic"}
    r = simulate({**ROLL, "protocol": "consumer", "config": {"group.remote.assignor": "range"}})
    assert r.label == "consumer/range" and r.stable and r.double_ownership == 0


def test_consumer_protocol_run_is_deterministic():
    sc = {**ROLL, "protocol": "consumer", "members": 5, "steps": [{"action": "crash", "count": 1}]}
    a, b = simulate(sc).to_dict(), simulate(sc).to_dict()
    assert a == b
    # the crashed member's partitions wait for the coordinator's session timeout (45 s by default)
    assert a["max_partition_pause_ms"] >= 45_000


@pytest.mark.parametrize("bad, message", [
    ({"protocol": "kip848"}, "protocol: expected one of classic, consumer"),
    ({"protocol": {"member-x": "consumer"}}, "'member-x' is not a member name"),
    ({"config": {"group.remote.assignor": "sticky"}}, "unknown assignor 'sticky' (known: uniform, range)"),
    ({"config": {"group.protocol": "consumer"}}, "with the scenario's 'protocol' key"),
    ({"steps": [{"action": "switch_protocol"}]}, "needs 'protocol'"),
    ({"steps": [{"action": "switch_protocol", "protocol": "consumer", "count": 11}]}, "cannot switch 11 of the 10"),
    ({"steps": [{"action": "switch_protocol", "protocol": "consumer", "members": ["member-1"], "count": 1}]},
     "give 'members' or 'count', not both"),
])
def test_bad_protocol_keys_are_one_line_errors(bad, message):
    with pytest.raises(ScenarioError, match=None) as exc:
        parse_scenario({**ROLL, **bad})
    assert message in str(exc.value)


# ------------------------------------------------------------------------------------------ rolling migration
MIGRATE = {**ROLL, "members": 4, "topics": {"orders": 24},
           "steps": [{"action": "switch_protocol", "protocol": "consumer", "downtime_ms": 5_000,
                      "interval_ms": 20_000}]}
DOWNGRADE = {"action": "switch_protocol", "protocol": "classic", "downtime_ms": 5_000, "interval_ms": 20_000}

#: whether the coordinator has mixed groups (classic members inside a consumer group: issue 23), known by its
#: group.consumer.migration.policy setting.  Without them (main before issue 23) a live group cannot change
#: protocol at all; with them, policy "disabled" refuses exactly as that coordinator did.
MIXED_GROUPS = "group_consumer_migration_policy" in CoordinatorConfig.__dataclass_fields__
NO_MIGRATION = {"coordinator": {"group.consumer.migration.policy": "disabled"}} if MIXED_GROUPS else {}


def test_rolling_migration_reports_the_coordinators_refusal(events):
    """A coordinator that cannot upgrade a live classic group refuses the first member restarted on the consumer
    protocol (GROUP_ID_NOT_FOUND) while classic members hold the group.  The simulator reports that, stops the
    rollout and brings the member back on the classic protocol."""
    sc = {**MIGRATE, **NO_MIGRATION}
    r = simulate(sc)
    assert [(x.member, x.protocol, x.api, x.error) for x in r.refusals] == [
        ("member-0", "consumer", "ConsumerGroupHeartbeat", "GROUP_ID_NOT_FOUND")]
    assert r.group_kind == "classic" and r.group_protocol == "classic" and r.stable
    assert [m.incarnations for m in r.member_reports] == [3, 1, 1, 1]    # bounced, refused, rolled back
    assert r.double_ownership == 0
    owner, _ = replay(events)
    assert set(owner) == all_partitions(sc) and all(owner.values())
    assert "refused at" in r.summary() and "GROUP_ID_NOT_FOUND" in r.summary()


def test_a_group_whose_members_all_left_changes_protocol_both_ways(events):
    """Every coordinator changes the kind of an empty group: a one-member group migrates (the member leaves, the
    group is empty, the member returns on the consumer protocol), then downgrades the same way."""
    sc = {**MIGRATE, **NO_MIGRATION, "members": 1}
    up = simulate(sc)
    assert up.refusals == [] and up.group_kind == "consumer" and up.group_protocol == "consumer" and up.stable
    events.clear()
    down = simulate({**sc, "steps": sc["steps"] + [DOWNGRADE]})
    assert down.refusals == [] and down.group_kind == "classic" and down.group_protocol == "classic" and down.stable
    owner, _ = replay(events)
    assert set(owner) == all_partitions(sc) and set(owner.values()) == {"member-0"}


def test_rolling_downgrade_of_a_live_consumer_group():
    """Without mixed groups the coordinator refuses a classic member while consumer members hold the group
    (INCONSISTENT_GROUP_PROTOCOL).  With them, Kafka 4.4 lets classic members join a consumer group unless the
    migration policy is "disabled" (``throwIfClassicMemberCannotJoinConsumerGroup``: INCONSISTENT_GROUP_PROTOCOL
    then too); with "upgrade" (no downgrade) the members roll over to the classic protocol inside a group that
    stays a consumer group."""
    no_downgrade = {"coordinator": {"group.consumer.migration.policy": "upgrade"}} if MIXED_GROUPS else {}
    r = simulate({**MIGRATE, **no_downgrade, "protocol": "consumer", "steps": [DOWNGRADE]})
    assert r.stable and r.double_ownership == 0
    if MIXED_GROUPS:
        assert r.refusals == [] and r.group_kind == "consumer" and r.group_protocol == "classic"
        disabled = simulate({**MIGRATE, **NO_MIGRATION, "protocol": "consumer", "steps": [DOWNGRADE]})
        assert [(x.member, x.protocol, x.api, x.error) for x in disabled.refusals] == [
            ("member-0", "classic", "JoinGroup", "INCONSISTENT_GROUP_PROTOCOL")]
    else:
        assert [(x.member, x.protocol, x.api, x.error) for x in r.refusals] == [
            ("member-0", "classic", "JoinGroup", "INCONSISTENT_GROUP_PROTOCOL")]
        assert r.group_kind == "consumer" and r.group_protocol == "consumer"


@pytest.mark.xfail(not MIXED_GROUPS, strict=True,
                   reason="this coordinator has no mixed groups (issue 23, branch 'mixed'): it refuses the first "
                          "consumer-protocol member of a non-empty classic group")
def test_rolling_migration_upgrades_then_downgrades_a_live_group(events):
    up = simulate(MIGRATE)
    assert up.refusals == []
    assert up.group_kind == "consumer" and up.group_protocol == "consumer" and up.stable
    assert up.double_ownership == 0
    assert all(m.protocol == "consumer" and m.incarnations == 2 for m in up.member_reports)
    owner, _ = replay(events)
    assert set(owner) == all_partitions(MIGRATE) and all(owner.values())
    events.clear()
    down = simulate({**MIGRATE, "steps": MIGRATE["steps"] + [DOWNGRADE]})
    assert down.refusals == [] and down.group_kind == "classic" and down.group_protocol == "classic"
    assert down.stable and down.double_ownership == 0
    owner, _ = replay(events)
    assert set(owner) == all_partitions(MIGRATE) and all(owner.values())


# ------------------------------------------------------------------------------------------------- the CLI
def test_compare_protocols_on_the_cli(tmp_path, capsys):
    path = tmp_path / "roll.json"
    path.write_text(json.dumps({**ROLL, "members": 5, "topics": {"orders": 20}}))
    assert main(["simulate", str(path), "--strategies", "range,cooperative-sticky", "--compare-protocols",
                 "--remote-assignors", "uniform,range", "--format", "json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [(r["group_protocol"], r["rebalance_protocol"], r["remote_assignor"]) for r in reports] == [
        ("classic", "EAGER", None), ("classic", "COOPERATIVE", None),
        ("consumer", "KIP-848", "uniform"), ("consumer", "KIP-848", "range")]
    assert all(r["stable"] and r["double_ownership"] == 0 for r in reports)
    assert reports[2]["moved_partitions"] < reports[0]["moved_partitions"]
    assert main(["simulate", str(path), "--remote-assignors", "sticky", "--compare-protocols"]) == 2
    assert "--remote-assignors: unknown assignor 'sticky'" in capsys.readouterr().err


def test_migration_example_shows_what_the_coordinator_did(capsys):
    assert main(["simulate", "--example", "rolling-migration", "--members", "6", "--strategies",
                 "cooperative-sticky", "--format", "json"]) == 0
    [r] = json.loads(capsys.readouterr().out)
    assert r["stable"] and r["double_ownership"] == 0
    if MIXED_GROUPS:          # upgraded member by member
        assert r["refusals"] == [] and r["group_kind"] == "consumer" and r["group_protocol"] == "consumer"
    else:                     # refused at the first member, rolled back
        assert [x["error"] for x in r["refusals"]] == ["GROUP_ID_NOT_FOUND"] and r["group_kind"] == "classic"
    if not MIXED_GROUPS:
        assert main(["simulate", "--example", "rolling-migration", "--members", "6", "--strategies",
                     "cooperative-sticky"]) == 0
        assert "refused member-0 (consumer protocol)" in capsys.readouterr().out


def test_the_readme_commands_of_the_section_run_as_written(capsys):
    """The ```sh commands of the README's KIP-848 simulator section, through the CLI's entry point."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("#### The consumer protocol (KIP-848) beside the classic one")[1].split("\n#### ")[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = [shlex.split(line) for line in block.splitlines() if line.startswith("kafkagroup simulate")]
    assert len(commands) == 3
    for argv in commands:
        assert main(argv[1:]) == 0, argv
    out = capsys.readouterr().out
    assert "consumer/uniform" in out and "consumer/range" in out and "GROUP_ID_NOT_FOUND" in out


def test_static_consumer_members_restart_without_moving_anything():
    """A static member leaving with epoch -2 keeps its partitions at the coordinator; back under a new member id
    within the session timeout it gets them again: no group epoch, nothing moved (as classic static members)."""
    r = simulate({**ROLL, "members": 5, "protocol": "consumer", "static": True})
    assert r.stable and r.moved_partitions == 0 and r.generations == 0 and r.double_ownership == 0
    assert r.max_partition_pause_ms == 10_000 + 2 * LATENCY      # each member's own partitions, while it is down


def test_added_partitions_reach_a_consumer_group_through_the_coordinator():
    """The coordinator sees the topic grow (its topics view), bumps the group epoch and assigns the new
    partitions; the members never refresh anything themselves."""
    r = simulate({**ROLL, "members": 5, "protocol": "consumer",
                  "steps": [{"action": "add_partitions", "topic": "orders", "partitions": 50, "refresh": False}]})
    assert r.stable and r.partitions == 70 and (r.final_min_load, r.final_max_load) == (14, 14)
    assert r.moved_partitions == 0 and r.paused_partitions == 10 and r.generations == 1


def test_plot_marks_refusals_and_labels_lanes(tmp_path):
    from kafkagroup.sim.plot import _lane_label, plot_reports

    r = simulate({**MIGRATE, **NO_MIGRATION})
    assert _lane_label(r, "member-0").startswith("member-0  moved ") and _lane_label(r, "member-0").endswith(
        "[classic]")
    out = plot_reports([r, simulate({**MIGRATE, "protocol": "consumer", "steps": []})], tmp_path / "m.png")
    assert out.stat().st_size > 20_000


def test_a_batch_longer_than_max_poll_interval_makes_a_consumer_protocol_member_leave_and_rejoin(events):
    """Batches of 500 records at 50 ms each (25 s at the median, a third of them over 30 s) against a 30 s poll
    interval: a member's poll timer expires, it loses its partitions and leaves (heartbeat epoch -1), and joins
    again at the poll that ends the batch.  The coordinator hands its partitions to the others meanwhile, never
    to two at once."""
    r = simulate({"topics": {"orders": 24}, "members": 4, "protocol": "consumer", "start_spread_ms": 0,
                  "config": {"max.poll.interval.ms": 30_000}, "record_processing_ms": {"median": 50, "sigma": 0.5},
                  "steps": [{"action": "wait", "ms": 300_000}]})
    assert sum(m.poll_timeouts for m in r.member_reports) >= 4
    assert sum(m.lost for m in r.member_reports) > 0 and r.generations >= 2
    assert r.double_ownership == 0
    replay(events)


def test_an_assignment_that_changes_back_before_the_member_applied_it_is_acknowledged():
    """A member is given a partition (a member left) and, before its next poll applies it, the partition is taken
    back (the member returned).  The coordinator still counts the partition as the member's until the member
    says it does not own it; Kafka's client acknowledges such an answer at once.  Without that acknowledgement
    the coordinator waits for the rebalance timeout (max.poll.interval.ms, 300 s), fences the member and hands
    its partitions on while it still consumes them (two owners)."""
    from kafkagroup.sim.app import ProcessingModel
    from kafkagroup.sim.harness import GroupHarness

    h = GroupHarness({"t": 6}, application=ProcessingModel(500, 40.0, 0.0), network_latency_ms=1)  # 20 s batches
    for _ in range(3):
        h.add(protocol="consumer")
    assert h.settle(600_000) is not None
    members = [h.members[f"member-{i}"] for i in range(3)]
    before = {m.name: m.assignment for m in members}
    h.stop("member-2")
    for _ in range(2_000):      # until a remaining member has been given member-2's partition, not yet applied
        h.advance(10)
        if any(m._target is not None and m._target != m.assignment for m in members[:2]):
            break
    else:
        pytest.fail("no member was given member-2's partitions while in a batch")
    h.restart("member-2")       # the coordinator takes the partitions back before that member's poll
    took = h.settle(600_000)    # exclusive harness: two owners at any instant raise here
    assert took is not None and took < 60_000
    assert {n: m.assignment for n, m in h.members.items()} == before
    assert int(h.ledger.partition_figures()[4].max()) < 60_000
