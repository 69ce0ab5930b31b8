"""End-to-end groups: real GroupCoordinator + GroupMembers + native assignors on one ManualClock.

Every test runs through :class:`kafkagroup.sim.harness.GroupHarness`, whose ``advance`` checks after each
100 ms step -- and the ledger at each callback -- that no partition is owned by two members at once.
"""
from __future__ import annotations

import pytest

from kafkagroup.client import MemberState, RebalanceProtocol
from kafkagroup.sim.harness import GroupHarness
from kafkagroup.coordinator.group import GroupState
from kafkagroup.structs import TopicPartition

FAST = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000, "max.poll.interval.ms": 30_000}
COORD = {"group.initial.rebalance.delay.ms": 100}
EAGER_AND_COOP = pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])


def harness(strategy, topics=None, **kw) -> GroupHarness:
    return GroupHarness(
        topics or {"t0": 12, "t1": 6},
        coordinator_config=COORD,
        member_config={**FAST, "partition.assignment.strategy": strategy},
        network_latency_ms=kw.pop("latency", 1),
        poll_delay_ms=kw.pop("poll_delay", 5),
        **kw,
    )


def settled_group(strategy: str, members: int, **member_kw) -> GroupHarness:
    """A harness on ``strategy`` whose ``members`` members (each added with ``member_kw``) formed a stable group."""
    h = harness(strategy)
    for _ in range(members):
        h.add(**member_kw)
    assert h.settle() is not None
    return h


def assert_complete_and_balanced(h: GroupHarness) -> None:
    owned = h.assignment()
    every = [tp for parts in owned.values() for tp in parts]
    assert len(every) == len(set(every)), "a partition is assigned twice"
    expected = {TopicPartition(t, p) for t, n in h.cluster.partitions_per_topic.items() for p in range(n)}
    assert set(every) == expected
    # the coordinator's view agrees with the members'
    g = h.coordinator.group(h.group_id)
    assert g.state is GroupState.STABLE
    assert {m.member_id for m in h.running} == set(g.members)
    loads = [len(p) for p in owned.values()]
    if h.members and next(iter(h.members.values())).config.assignor_names[0] != "range":
        assert max(loads) - min(loads) <= 1, loads


def generations(h: GroupHarness) -> set[int]:
    return {m.generation.generation_id for m in h.running}


# ------------------------------------------------------------------------------------------ join
@EAGER_AND_COOP
@pytest.mark.parametrize("n", [3, 17])
def test_group_forms(strategy, n):
    h = harness(strategy)
    for _ in range(n):
        h.add()
    took = h.settle()
    assert took is not None
    assert generations(h) == {1} and h.generation() == 1
    leaders = [m for m in h.running if m.is_leader]
    assert len(leaders) == 1 and leaders[0].member_id == h.coordinator.group(h.group_id).leader_id
    assert all(m.state is MemberState.STABLE for m in h.running)
    assert_complete_and_balanced(h)
    assert h.ledger.violations == []


def test_protocol_is_selected_per_configuration():
    h = harness(["range", "cooperative-sticky"])
    h.add()
    assert h.running[0].rebalance_protocol is RebalanceProtocol.EAGER
    h2 = harness("cooperative-sticky")
    h2.add()
    assert h2.running[0].rebalance_protocol is RebalanceProtocol.COOPERATIVE


# ------------------------------------------------------------------------------------------ leave
@EAGER_AND_COOP
def test_member_leaves_cleanly(strategy):
    h = settled_group(strategy, 4)
    before = h.assignment()
    gen = h.generation()
    h.stop("member-3")
    h.remove("member-3")
    assert h.settle(60_000) is not None
    assert h.generation() > gen
    assert_complete_and_balanced(h)
    if strategy in ("sticky", "cooperative-sticky"):
        for name, parts in h.assignment().items():
            assert before[name] <= parts, f"{name} lost partitions although a sticky assignor only added"
    if strategy == "cooperative-sticky":
        # nobody revoked anything: only the leaver's partitions moved
        for name in h.members:
            assert h.ledger.members[name].revoked == 0


# ------------------------------------------------------------------------------------------ write failure
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_group_recovers_after_a_failed_group_metadata_write(strategy):
    """§2.9: the leader's SyncGroup write fails with MESSAGE_TOO_LARGE -> every member of the round gets
    UNKNOWN_SERVER_ERROR (-1); §6.9: that is not fatal, the members rejoin and the group becomes Stable."""
    from kafkagroup.client import UnexpectedCoordinatorError
    from kafkagroup.messages.error_codes import ErrorCode

    h = settled_group(strategy, 3)
    gen = h.generation()
    h.coordinator.store.inject_failure(ErrorCode.MESSAGE_TOO_LARGE, kind="group")
    h.add()
    assert h.settle(60_000) is not None
    assert h.generation() > gen + 1                     # the failed generation, then the one that completed
    assert all(m.fatal_error is None for m in h.members.values()) and len(h.running) == 4
    failed = [e for m in h.members.values() for e in m.errors if isinstance(e, UnexpectedCoordinatorError)]
    assert failed and {e.code for e in failed} == {ErrorCode.UNKNOWN_SERVER_ERROR}
    assert_complete_and_balanced(h)
    assert h.ledger.violations == []


# ------------------------------------------------------------------------------------------ crash
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_crash_is_noticed_by_session_expiry(strategy):
    h = settled_group(strategy, 3)
    gen = h.generation()
    crash_at = h.clock.now_ms()
    h.crash("member-1")
    h.remove("member-1")
    h.advance(9_000)                                   # before the 10 s session timeout: nothing happens
    assert h.generation() == gen and h.coordinator.group(h.group_id).state is GroupState.STABLE
    assert h.ledger.unowned()                         # the dead member's partitions are not consumed
    took = h.settle(60_000)
    assert took is not None
    assert h.generation() > gen
    assert_complete_and_balanced(h)
    # the rebalance could not start before the session expired
    first_new = min(t for m in h.running for t, g in m.generation_history if g > gen)
    assert first_new >= crash_at + 10_000


# ------------------------------------------------------------------------------------------ static bounce
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_static_member_bounce_within_session_timeout_keeps_generation(strategy):
    h = settled_group(strategy, 3, static=True)
    gen = h.generation()
    before = h.assignment()
    revoked_before = {n: h.ledger.members[n].revoked for n in h.members}
    h.crash("member-1")
    h.advance(4_000)
    h.restart("member-1")
    assert h.settle(30_000) is not None
    assert h.generation() == gen                        # no rebalance at all
    assert h.assignment() == before                     # the new incarnation got the same partitions
    assert h.members["member-1"].member_id != ""        # under a new member id
    assert {n: h.ledger.members[n].revoked for n in h.members} == revoked_before
    assert_complete_and_balanced(h)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_static_member_bounce_outside_session_timeout_rebalances_twice(strategy):
    h = settled_group(strategy, 3, static=True)
    gen = h.generation()
    h.crash("member-1")
    h.advance(10_500)                                   # session expired: removed, rebalance
    assert h.settle(30_000) is not None
    gen_without = h.generation()
    assert gen_without > gen and len(h.coordinator.group(h.group_id).members) == 2
    h.restart("member-1")
    assert h.settle(30_000) is not None
    assert h.generation() > gen_without
    assert_complete_and_balanced(h)


def test_static_member_clean_restart_returns_its_partitions():
    """A static member's close() sends no LeaveGroup: a restart inside the session gets the same partitions."""
    h = harness("cooperative-sticky")
    for _ in range(3):
        h.add(static=True)
    h.settle()
    gen, before = h.generation(), h.assignment()
    h.stop("member-0")
    assert h.coordinator.group(h.group_id).state is GroupState.STABLE   # nothing told the coordinator
    h.advance(2_000)
    h.restart("member-0")
    h.settle(30_000)
    assert h.generation() == gen and h.assignment() == before


# ------------------------------------------------------------------------------------------ upgrade
def test_eager_to_cooperative_two_step_rolling_upgrade():
    """KIP-429: bounce 1 with [cooperative-sticky, range] (still EAGER: range is common), bounce 2 with
    [cooperative-sticky] only; no partition has two owners at any step, and the group ends COOPERATIVE."""
    h = harness("range")
    for _ in range(5):
        h.add()
    h.settle()
    for step in (["cooperative-sticky", "range"], ["cooperative-sticky"]):
        for name in list(h.members):
            h.stop(name)
            h.advance(1_500)
            h.restart(name, partition_assignment_strategy=step)
            h.advance(2_000)
        assert h.settle(120_000) is not None
        protocol = h.coordinator.group(h.group_id).protocol_name
        assert protocol == "cooperative-sticky"          # voted as soon as every member lists it first
        assert_complete_and_balanced(h)
    assert {m.rebalance_protocol for m in h.running} == {RebalanceProtocol.COOPERATIVE}
    assert h.ledger.violations == []
    # once cooperative, a member leaving revokes nothing from the others
    revoked = {n: h.ledger.members[n].revoked for n in h.members}
    h.stop("member-4")
    h.remove("member-4")
    h.settle(60_000)
    assert {n: h.ledger.members[n].revoked for n in h.members} == {n: revoked[n] for n in h.members}


def test_mixed_eager_and_cooperative_members_never_share_a_partition():
    h = harness("cooperative-sticky")
    for i in range(6):
        h.add(partition_assignment_strategy=["cooperative-sticky"] if i % 2 else ["cooperative-sticky", "range"])
    h.settle()
    assert {m.rebalance_protocol for m in h.running} == {RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE}
    h.add(partition_assignment_strategy=["cooperative-sticky"])
    h.stop("member-1")
    h.remove("member-1")
    assert h.settle(60_000) is not None
    assert_complete_and_balanced(h)
    assert h.ledger.violations == []


# ------------------------------------------------------------------------------------------ metadata
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_partitions_added_trigger_a_rebalance_from_the_leader(strategy):
    h = settled_group(strategy, 3, metadata_max_age_ms=5_000)
    gen = h.generation()
    h.set_partitions("t1", 12)                         # members see it at their next refresh (<= 5 s)
    assert h.settle(60_000) is not None
    assert h.generation() > gen
    owned = set().union(*h.assignment().values())
    assert {TopicPartition("t1", p) for p in range(12)} <= owned
    assert_complete_and_balanced(h)


def test_new_topic_matching_a_pattern_subscription():
    h = harness("cooperative-sticky")
    for _ in range(2):
        m = h.add(start=False, topics=[])
        m.subscribe(pattern=r"t\d")
        m.start()
    h.settle()
    h.set_partitions("t7", 4, refresh=True)
    assert h.settle(60_000) is not None
    assert {tp.topic for parts in h.assignment().values() for tp in parts} == {"t0", "t1", "t7"}


# ------------------------------------------------------------------------------------------ larger groups
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_fifty_members_join_churn_and_crash(strategy):
    h = harness(strategy, topics={"orders": 200, "audit": 50})
    for _ in range(50):
        h.add()
    assert h.settle(120_000) is not None
    assert h.generation() == 1
    assert_complete_and_balanced(h)
    for name in ("member-3", "member-17", "member-40"):
        h.stop(name)
        h.remove(name)
    for _ in range(5):
        h.add()
    h.crash("member-10")
    h.remove("member-10")
    assert h.settle(120_000) is not None
    assert len(h.running) == 51
    assert_complete_and_balanced(h)
    assert h.ledger.violations == []
    if strategy == "cooperative-sticky":
        # only partitions of leavers, the crashed member and what the 5 newcomers need moved
        moved = sum(p.moves for p in h.ledger.partitions.values())
        assert moved <= 4 * 5 + 5 * 5 + 10


def test_leader_leaving_elects_a_new_leader():
    h = harness("cooperative-sticky")
    for _ in range(4):
        h.add()
    h.settle()
    leader = next(n for n, m in h.members.items() if m.is_leader)
    h.stop(leader)
    h.remove(leader)
    h.settle(60_000)
    leaders = [m for m in h.running if m.is_leader]
    assert len(leaders) == 1 and leaders[0].member_id == h.coordinator.group(h.group_id).leader_id


def test_stalled_member_is_removed_and_loses_its_partitions_when_it_leaves():
    """A stuck application: after max.poll.interval.ms the member leaves the group, and reports its partitions
    lost as it sends the LeaveGroup (Java reports them at the next poll, after the group has handed them on:
    a zombie owner).  Nobody owns a partition twice."""
    h = harness("cooperative-sticky", exclusive=False)
    for _ in range(3):
        h.add()
    h.settle()
    gen = h.generation()
    stuck = h.members["member-2"]
    held = stuck.assignment
    assert held
    stuck.stall()
    h.advance(30_000)                                   # max.poll.interval.ms: it leaves the group
    h.advance(10_000)
    assert h.generation() > gen and len(h.coordinator.group(h.group_id).members) == 2
    assert stuck.assignment == frozenset() and h.ledger.members["member-2"].lost > 0
    assert h.ledger.violations == []
    stuck.resume()
    h.clock.advance(0)
    assert h.settle(60_000) is not None
    assert_complete_and_balanced(h)
    assert h.ledger.double_owned() == {}


@pytest.mark.parametrize("strategy", ["range", "sticky", "cooperative-sticky"])
def test_scale_out_moves_partitions_from_existing_members(strategy):
    """3 -> 6 members on 12+6 partitions: each newcomer takes partitions that existing members must give up."""
    h = settled_group(strategy, 3)
    gen = h.generation()
    for _ in range(3):
        h.add()
    assert h.settle(60_000) is not None
    assert_complete_and_balanced(h)
    assert all(len(p) == 3 for p in h.assignment().values())
    old = ("member-0", "member-1", "member-2")
    if strategy == "cooperative-sticky":
        # KIP-429: one round revokes (withheld partitions), the follow-up round assigns them
        assert h.generation() == gen + 2
        assert all(h.ledger.members[n].revoked == 3 for n in old)
        assert all(h.ledger.members[n].lost == 0 for n in old)
        assert sum(p.moves for p in h.ledger.partitions.values()) == 9
    else:
        assert h.generation() == gen + 1
        assert all(h.ledger.members[n].revoked == 6 for n in old)   # eager: everything, every time
    assert h.ledger.violations == []


def test_static_leader_restart_does_not_notice_partitions_added_meanwhile():
    """Faithful to Kafka (KIP-814 onLeaderElected with skipAssignment: assignmentSnapshot = current metadata):
    a partition added while the static leader was down stays unassigned until the next metadata change."""
    h = harness("cooperative-sticky")
    for _ in range(3):
        h.add(static=True, metadata_max_age_ms=5_000)
    h.settle()
    leader = next(n for n, m in h.members.items() if m.is_leader)
    gen = h.generation()
    h.crash(leader)
    h.set_partitions("t1", 7)                    # while the leader is down; followers never check counts
    h.advance(2_000)
    h.restart(leader)
    assert h.members[leader].is_leader is False
    h.advance(20_000)
    assert h.members[leader].is_leader and h.generation() == gen
    assert TopicPartition("t1", 6) in h.ledger.unowned()
    h.set_partitions("t1", 8)                     # the next change is noticed and fixes both
    assert h.settle(60_000) is not None and h.generation() > gen
    assert_complete_and_balanced(h)


def test_harness_stability_follows_the_cluster_even_when_changed_directly():
    """is_stable() counts partitions without a single owner per topic in the ledger; the ledger follows the
    cluster's partition counts even when a test changes ``h.cluster`` directly (grow, shrink, delete)."""
    h = harness("range", topics={"t": 6, "u": 2})
    for _ in range(2):
        h.add()
    assert h.settle() is not None
    for change in (lambda c: c.set_partitions("t", 9), lambda c: c.set_partitions("t", 3),
                   lambda c: c.delete_topic("u")):
        grows = h.cluster.partitions_per_topic["t"] == 6
        change(h.cluster)
        if grows:
            assert not h.is_stable()                   # t-6..t-8 have no owner yet
        for m in h.running:
            m.refresh_metadata()
        assert h.settle(60_000) is not None
        owned = sorted(tp for parts in h.assignment().values() for tp in parts)
        assert owned == sorted(TopicPartition(t, p) for t, n in h.cluster.partitions_per_topic.items()
                               for p in range(n))
