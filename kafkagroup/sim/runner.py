"""Run a scenario: build the group, let it settle, play the steps, measure.

    report = simulate({"topics": {"orders": 96}, "members": 40, "strategy": "range",
                       "steps": [{"action": "scale", "members": 48}]})
    print(report.summary())

The initial members start at seeded instants spread over ``start_spread_ms`` (a deployment: their heartbeats
are out of phase) and run Kafka's poll loop (:mod:`kafkagroup.sim.app`).  Measuring starts once that first
group is stable (time 0 of the report).  A scenario always produces the same report.
"""
from __future__ import annotations

import gc
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from kafkagroup.client.rebalance_protocol import RebalanceProtocol, select_rebalance_protocol
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.sim.errors import SimulationError
from kafkagroup.sim.harness import GroupHarness
from kafkagroup.sim.report import MemberReport, PartitionPause, Refusal, SimulationReport, StepReport
from kafkagroup.sim.scenario import Scenario, parse_scenario

__all__ = ["simulate", "ScenarioWarning"]

WORST_PARTITIONS = 10


class ScenarioWarning(UserWarning):
    """An ignored scenario key (the CLI prints these on stderr)."""


def simulate(scenario: Scenario | Mapping[str, Any],
             on_progress: Callable[[], None] | None = None) -> SimulationReport:
    """Run a scenario (a :class:`Scenario` or its JSON object, see :mod:`kafkagroup.sim.scenario`).

    ``on_progress`` is called once the initial group has settled and after each step (``1 + len(steps)``
    calls): the command line's progress bar."""
    if not isinstance(scenario, Scenario):
        scenario = parse_scenario(scenario)
        for w in scenario.warnings:
            warnings.warn(w, ScenarioWarning, stacklevel=2)
    with _collector_for_long_runs():
        return _simulate(scenario, on_progress or (lambda: None))


@contextmanager
def _collector_for_long_runs() -> Iterator[None]:
    """Python's cyclic collector, tuned for a run that holds millions of long-lived objects.

    A simulation allocates small objects at every event (timers, requests, responses) next to a large, stable
    heap (members, the ownership ledger, the coordinator's group): with the default thresholds the collector's
    older generations walk that heap again and again, which measured as half the cost of a heartbeat at
    300 members.  Here the youngest generation is collected every 50,000 allocations (not 700), and the
    settled initial group is frozen (``gc.freeze``: never scanned again; reference counting still frees it).
    Both are process-wide settings, restored on exit.  Limit: a reference cycle among the frozen objects that
    becomes garbage during the run is only freed by the first full collection after the run.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, thresholds[1], thresholds[2])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _simulate(sc: Scenario, on_progress: Callable[[], None]) -> SimulationReport:
    member_cfg = {**sc.config, "max.poll.records": sc.processing.max_poll_records,
                  "partition.assignment.strategy": sc.strategy}
    h = GroupHarness(
        sc.topics, group_id=sc.group_id, coordinator_config=sc.coordinator, member_config=member_cfg,
        network_latency_ms=sc.network_latency_ms, seed=sc.seed, exclusive=False,   # reported, not raised
        check_every_ms=sc.check_every_ms, application=sc.processing,
    )
    starts = np.sort(np.random.default_rng([sc.seed, 1]).integers(0, sc.start_spread_ms + 1, sc.members))
    for at in starts:
        h.advance(int(at) - h.clock.now_ms())
        _add(h, sc)
    if h.settle(sc.settle_timeout_ms) is None:
        raise SimulationError(f"{sc.name}: the initial group of {sc.members} members did not settle within "
                              f"{sc.settle_timeout_ms} ms")
    gc.freeze()   # the settled initial group (see _collector_for_long_runs)
    on_progress()
    h.ledger.reset_window()
    for m in h.running:
        m.stats["rebalances"] = 0
        m.generation_history.clear()
    t0 = h.clock.now_ms()
    requests0 = _requests(h)
    start_gen = h.generation()
    current = list(sc.strategy)
    steps: list[StepReport] = []
    for step in sc.steps:
        begun, gen0 = h.clock.now_ms(), h.generation()
        current = _run_step(h, step, current, sc)
        settled = h.settle(sc.settle_timeout_ms)
        steps.append(StepReport(step["action"], begun - t0,
                                None if settled is None else h.clock.now_ms() - begun, h.generation() - gen0))
        on_progress()
    h.ledger.close_window()
    report = _report(h, sc, current, t0, start_gen, steps)
    report.requests = {api: n - requests0.get(api, 0) for api, n in sorted(_requests(h).items())}
    return report


def _requests(h: GroupHarness) -> dict[str, int]:
    """Requests sent by every member incarnation so far, by API (each transport counts its own)."""
    total: dict[str, int] = {}
    for m in [*h._retired, *h.members.values()]:
        for api, n in getattr(m.transport, "requests_sent", {}).items():
            total[api] = total.get(api, 0) + n
    return total


def _running(h: GroupHarness) -> list[str]:
    return [n for n, m in h.members.items() if m.alive]


def _run_step(h: GroupHarness, step: Mapping[str, Any], current: list[str], sc: Scenario) -> list[str]:
    action = step["action"]
    if action == "scale":
        names = _running(h)
        for _ in range(step["members"] - len(names)):
            _add(h, sc, partition_assignment_strategy=current)
        for name in names[step["members"]:]:
            h.stop(name)
            h.remove(name)
    elif action == "add_members":
        for _ in range(step["count"]):
            _add(h, sc, partition_assignment_strategy=current)
    elif action in ("remove_members", "crash"):
        names = _running(h)
        for name in names[len(names) - step["count"]:]:
            (h.stop if action == "remove_members" else h.crash)(name)
            h.remove(name)
    elif action == "roll_restart":
        _roll(h, step["downtime_ms"], step["interval_ms"], current)
    elif action == "switch_strategy":
        new = list(step["strategy"])
        old_proto, new_proto = select_rebalance_protocol(current), select_rebalance_protocol(new)
        if old_proto is RebalanceProtocol.EAGER and new_proto is RebalanceProtocol.COOPERATIVE:
            # KIP-429 upgrade: the first bounce lists the new assignor first and keeps the old ones (the group
            # still agrees on EAGER), the second drops the old ones.
            _roll(h, step["downtime_ms"], step["interval_ms"], new + [s for s in current if s not in new])
            h.settle(sc.settle_timeout_ms)
        _roll(h, step["downtime_ms"], step["interval_ms"], new)
        return new
    elif action == "switch_protocol":
        _switch_protocol(h, step, current, sc)
    elif action == "add_partitions":
        h.set_partitions(step["topic"], step["partitions"], refresh=step["refresh"])
    elif action == "wait":
        h.advance(step["ms"])
    else:   # parse_scenario refuses unknown actions; a Scenario built by hand may still hold one
        raise SimulationError(f"unknown scenario action {action!r}")
    return current


def _add(h: GroupHarness, sc: Scenario, **config: Any) -> None:
    """Start the next member on the protocol the scenario gives it."""
    name = h.new_name()
    protocol = sc.protocol_of(name)
    if protocol == "consumer":
        config["remote_assignor"] = sc.remote_assignor
    h.add(name, static=sc.static, protocol=protocol, **config)


def _switch_protocol(h: GroupHarness, step: Mapping[str, Any], current: list[str], sc: Scenario) -> None:
    """Rolling migration (scenario docstring): bounce members one at a time onto ``step["protocol"]``.

    Nothing here decides whether the group may change protocol: the restarted member asks the coordinator, and
    a refusal (the member ends with a fatal error, :attr:`GroupHarness.refusals`) stops the rollout; that member
    comes back on its previous protocol after the downtime, as an operator rolls a failed pod back."""
    new = step["protocol"]
    if "members" in step:
        names = list(step["members"])
        for name in names:
            if name not in h.members or not h.members[name].alive:
                raise SimulationError(f"switch_protocol: member {name!r} is not running "
                                      f"(running: {', '.join(_running(h)) or 'none'})")
    else:
        names = [n for n in _running(h) if h.protocol_of(n) != new]
        names = names[:step.get("count", len(names))]
    extra = {"remote_assignor": sc.remote_assignor} if new == "consumer" else {}
    for name in names:
        old = h.protocol_of(name)
        refused = len(h.refusals)
        h.stop(name)
        h.advance(step["downtime_ms"])
        h.restart(name, protocol=new, partition_assignment_strategy=list(current), **extra)
        h.advance(step["interval_ms"] - step["downtime_ms"])
        if len(h.refusals) > refused or not h.members[name].alive:
            h.advance(step["downtime_ms"])
            back = {"remote_assignor": sc.remote_assignor} if old == "consumer" else {}
            h.restart(name, protocol=old, partition_assignment_strategy=list(current), **back)
            return


def _roll(h: GroupHarness, downtime_ms: int, interval_ms: int, strategy: Sequence[str]) -> None:
    """Rolling bounce: each running member in turn stops cleanly and comes back ``downtime_ms`` later."""
    for name in _running(h):
        h.stop(name)
        h.advance(downtime_ms)
        h.restart(name, partition_assignment_strategy=list(strategy))
        h.advance(interval_ms - downtime_ms)


def _report(h: GroupHarness, sc: Scenario, strategy: list[str], t0: int, start_gen: int,
            steps: list[StepReport]) -> SimulationReport:
    ledger = h.ledger
    every = list(h._retired) + list(h.members.values())
    by_name: dict[str, list[Any]] = {}
    for m in every:
        by_name.setdefault(m.name, []).append(m)
    reports = []
    for name in sorted(by_name, key=lambda n: (len(n), n)):
        incarnations = by_name[name]
        st = ledger.members.get(name)
        gens = [g for m in incarnations for t, g in m.generation_history if t >= t0]
        live = h.members.get(name)
        down = h.down_ms.get(name, 0) + (h.clock.now_ms() - h.down_since[name] if name in h.down_since else 0)
        timeouts = sum(loop.poll_timeouts for loop in h.all_loops.get(name, ()))
        reports.append(MemberReport(
            name=name, protocol=getattr(incarnations[-1], "protocol", "classic"),
            incarnations=len(incarnations), down_ms=down,
            owned_nothing_ms=st.owned_nothing_ms if st else 0, partition_wait_ms=st.waited_ms if st else 0,
            gained=st.gained if st else 0, moved_in=st.moved_in if st else 0,
            revoked=st.revoked if st else 0, lost=st.lost if st else 0,
            rebalances=len(gens), generations=gens,
            final_partitions=len(live.assignment) if live is not None and live.alive else 0,
            poll_timeouts=timeouts,
        ))
    loads = [len(m.assignment) for m in h.running] or [0]
    # sorted by (topic, partition), so that ties among the worst partitions come out the same in every process
    topic_names, topic, partition, unowned, max_pause, moves = ledger.partition_figures()
    worst_idx = np.argsort(-unowned, kind="stable")[:WORST_PARTITIONS]
    worst = [PartitionPause(f"{topic_names[topic[i]]}-{partition[i]}", int(unowned[i]), int(max_pause[i]),
                            int(moves[i]))
             for i in worst_idx if unowned[i] > 0]
    protocols = sorted({getattr(m, "protocol", "classic") for m in h.running}) or sorted(sc.protocols)
    return SimulationReport(
        name=sc.name, description=sc.description, strategy=list(strategy),
        rebalance_protocol=("KIP-848" if protocols == ["consumer"] else
                            select_rebalance_protocol(strategy).name + ("+KIP-848" if "consumer" in protocols else "")),
        group_protocol="+".join(protocols), remote_assignor=sc.remote_assignor if sc.uses_consumer_protocol else None,
        group_kind=h.group_kind(), refusals=[Refusal(r.at_ms - t0, r.member, r.protocol, r.api, r.error, r.message)
                                             for r in h.refusals if r.at_ms >= t0],
        members=len(h.running), partitions=sum(h.cluster.partitions_per_topic.values()),
        duration_ms=h.clock.now_ms() - t0, stable=h.is_stable(),
        start_generation=start_gen, end_generation=h.generation(),
        moved_partitions=int(moves.sum()),
        partition_unowned_ms=int(unowned.sum()),
        max_partition_pause_ms=int(max_pause.max()) if len(max_pause) else 0,
        paused_partitions=int((unowned > 0).sum()),
        pause_p50_ms=int(np.percentile(unowned, 50)) if len(unowned) else 0,
        pause_p99_ms=int(np.percentile(unowned, 99)) if len(unowned) else 0,
        double_ownership=ledger.violation_count,
        final_min_load=min(loads), final_max_load=max(loads),
        settings=_settings(sc),
        steps=steps, worst_partitions=worst, member_reports=reports,
        timeline=h.timeline.window(t0, h.clock.now_ms()),
    )


def _settings(sc: Scenario) -> dict[str, Any]:
    """The values that shape the answer, so a report says what it assumed."""
    p = sc.processing
    consumer = {}
    if sc.uses_consumer_protocol:
        cc = CoordinatorConfig.from_mapping(sc.coordinator)   # the coordinator's values (KIP-848 members take them)
        consumer = {"group.consumer.heartbeat.interval.ms": cc.group_consumer_heartbeat_interval_ms,
                    "group.consumer.session.timeout.ms": cc.group_consumer_session_timeout_ms,
                    "group.consumer.assignment.interval.ms": cc.group_consumer_assignment_interval_ms}
    return {
        **consumer,
        **{k: sc.config[k] for k in ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms")},
        "max.poll.records": p.max_poll_records,
        "record_processing_ms": {"median": p.record_ms_median, "sigma": p.record_ms_sigma, "per": p.per},
        "batch_ms_mean": round(p.batch_ms_mean, 1),
        "group.initial.rebalance.delay.ms": sc.coordinator.get("group.initial.rebalance.delay.ms"),
        "start_spread_ms": sc.start_spread_ms, "network_latency_ms": sc.network_latency_ms,
        "static": sc.static, "seed": sc.seed,
    }
