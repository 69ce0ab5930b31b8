"""Scenario files: the format, its defaults, and validation with one-line errors.

A scenario is a JSON object (every key optional except ``topics``; Kafka config keys as Kafka spells them)::

    {"name": "scale-out", "description": "40 -> 48 members",
     "topics": {"orders": 96}, "members": 40, "strategy": "range",
     "steps": [{"action": "scale", "members": 48}]}

==========================  ===========================================================================
``name``, ``description``   labels of the report
``group_id``                default ``"sim-group"``
``topics``                  ``{topic: partition count}`` (1 .. 1,000,000 each, 2,000,000 in all)
``members``                 initial member count (default 3; 1 .. 100,000)
``strategy``                ``partition.assignment.strategy``: a name, a comma list or a JSON list
                            (default ``"range"``; the CLI runs every strategy unless told otherwise)
``static``                  members get ``group.instance.id`` ``member-<i>`` (KIP-345), default false
``protocol``                the group protocol the members speak (Kafka's ``group.protocol``):
                            ``"classic"`` (default: JoinGroup/SyncGroup, the client-side ``strategy``) or
                            ``"consumer"`` (KIP-848: heartbeats, the coordinator assigns with
                            ``config["group.remote.assignor"]``, ``uniform`` or ``range``); or per member:
                            ``{"default": "classic", "member-2": "consumer"}`` (members are named
                            ``member-0``, ``member-1``, ... in start order)
``config``                  consumer config; defaults are Kafka's: ``session.timeout.ms`` 45000,
                            ``heartbeat.interval.ms`` 3000, ``max.poll.interval.ms`` 300000,
                            ``max.poll.records`` 500; ``group.remote.assignor`` (consumer protocol only;
                            default: the coordinator's, ``uniform``).  Consumer-protocol members take their
                            session timeout and heartbeat interval from the coordinator
                            (``group.consumer.session.timeout.ms`` 45000, ``group.consumer.heartbeat.interval.ms``
                            5000 in ``coordinator``), as in Kafka
``coordinator``             broker config, default ``group.initial.rebalance.delay.ms`` 3000 (classic groups)
``record_processing_ms``    time to process one record: log-normal ``{"median": 2.0, "sigma": 0.5,
                            "per": "batch"}`` -- one draw for all records of a batch (a batch of 500
                            then takes 1 s at the median, 3.2 s at the 99th percentile); ``"per":
                            "record"`` draws each record; ``sigma`` 0 = a fixed time
``start_spread_ms``         the initial members start at seeded instants within this window
                            (default 10000: a deployment, so heartbeats are out of phase)
``network_latency_ms``      one-way request latency, default 1
``seed``                    seed of every draw (start instants, processing times), default 0
``settle_timeout_ms``       bound on waiting for a stable group after each step, default 600000
``check_every_ms``          how often (simulated time) no partition having two owners is checked, default 100
``steps``                   list of actions, run in order, each followed by waiting for a stable group
==========================  ===========================================================================

Steps (``count``/``members`` are member counts; the last-started running members are the ones removed):

- ``{"action": "scale", "members": N}`` -- start or cleanly stop members until N run;
- ``{"action": "add_members", "count": k}``, ``{"action": "remove_members", "count": k}`` (clean close);
- ``{"action": "crash", "count": k}`` -- kill k members (no LeaveGroup: the coordinator waits for the
  session timeout);
- ``{"action": "roll_restart", "downtime_ms": 10000, "interval_ms": 30000}`` -- every member in turn
  stops cleanly and comes back ``downtime_ms`` later; the next one stops ``interval_ms`` after the previous
  (defaults: 10000, and the larger of 30000 and ``downtime_ms``; ``interval_ms`` may not be shorter);
- ``{"action": "switch_strategy", "strategy": s, "downtime_ms": d, "interval_ms": i}`` -- rolling bounce
  onto new assignors, same defaults (eager -> cooperative runs KIP-429's two bounces);
- ``{"action": "add_partitions", "topic": t, "partitions": n, "refresh": true}`` -- grow an existing topic
  to n partitions; the members see it at once, or with ``"refresh": false`` at their next metadata refresh;
- ``{"action": "switch_protocol", "protocol": "consumer", "count": k, "members": [names], "downtime_ms": d,
  "interval_ms": i}`` -- rolling migration: members in turn (the named ones, or the first ``count`` running
  members on the other protocol, default all of them) stop cleanly and come back ``downtime_ms`` later
  speaking ``protocol``, the next one ``interval_ms`` later (defaults as ``roll_restart``).  ``"classic"``
  downgrades.  The coordinator decides what happens: if it refuses a member for good (today's coordinator
  refuses a consumer-protocol member while classic members hold the group, and a classic one while consumer
  members do), the rollout stops there and that member comes back on its previous protocol after
  ``downtime_ms`` (an operator's rollback); the report lists the refusal;
- ``{"action": "wait", "ms": n}``.

Unknown keys are reported as warnings (:attr:`Scenario.warnings`), not errors; everything else that is
wrong raises :class:`~kafkagroup.sim.errors.ScenarioError` naming the key or step, before anything is
allocated.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kafkagroup.client.config import MemberConfig
from kafkagroup.assignors.base import assignor_names
from kafkagroup.client.rebalance_protocol import select_rebalance_protocol
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.consumer.target import SERVER_ASSIGNORS
from kafkagroup.engine import strategies
from kafkagroup.errors import InvalidGroupError
from kafkagroup.sim.app import ProcessingModel
from kafkagroup.sim.errors import ScenarioError

__all__ = ["Scenario", "parse_scenario", "MAX_PARTITIONS_PER_TOPIC", "MAX_PARTITIONS", "MAX_MEMBERS",
           "KNOWN_STRATEGIES", "PROTOCOLS", "REMOTE_ASSIGNORS"]

MAX_PARTITIONS_PER_TOPIC = 1_000_000
MAX_PARTITIONS = 2_000_000
MAX_MEMBERS = 100_000
MAX_MS = 10 * 24 * 3600 * 1000          # ten days of simulated time in any one duration
# The built-in assignors the members can run: the engine's client-side ones (server-uniform / server-range
# are Kafka 4's broker-side assignors of KIP-848 groups, which a classic member cannot name).
KNOWN_STRATEGIES = tuple(n for n in strategies() if n in set(assignor_names()))

PROTOCOLS = ("classic", "consumer")                 # Kafka's group.protocol values
REMOTE_ASSIGNORS = tuple(SERVER_ASSIGNORS)          # Kafka's group.remote.assignor values the coordinator has

DEFAULT_CONFIG = {"session.timeout.ms": 45_000, "heartbeat.interval.ms": 3_000,
                  "max.poll.interval.ms": 300_000}
DEFAULT_MAX_POLL_RECORDS = 500

_TOP_KEYS = {
    "name", "description", "group_id", "topics", "members", "strategy", "static", "config", "coordinator",
    "network_latency_ms", "record_processing_ms", "start_spread_ms", "seed", "settle_timeout_ms", "steps",
    "check_every_ms", "protocol",
}
_STEP_KEYS: dict[str, dict[str, bool]] = {      # action -> {key: required}
    "scale": {"members": True},
    "add_members": {"count": True},
    "remove_members": {"count": True},
    "crash": {"count": True},
    "roll_restart": {"downtime_ms": False, "interval_ms": False},
    "switch_strategy": {"strategy": True, "downtime_ms": False, "interval_ms": False},
    "add_partitions": {"topic": True, "partitions": True, "refresh": False},
    "switch_protocol": {"protocol": True, "count": False, "members": False, "downtime_ms": False,
                        "interval_ms": False},
    "wait": {"ms": True},
}


@dataclass
class Scenario:
    """A validated scenario (module docstring); ``steps`` keep their JSON form, already checked."""

    name: str
    description: str
    group_id: str
    topics: dict[str, int]
    members: int
    strategy: list[str]
    static: bool
    config: dict[str, Any]
    coordinator: dict[str, Any]
    processing: ProcessingModel
    start_spread_ms: int
    network_latency_ms: int
    seed: int
    settle_timeout_ms: int
    check_every_ms: int
    steps: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    protocol: str = "classic"                              # of every member not named in member_protocols
    member_protocols: dict[str, str] = field(default_factory=dict)
    remote_assignor: str | None = None                     # group.remote.assignor (None: the coordinator's)

    def with_strategy(self, strategy: str | list[str]) -> "Scenario":
        copy = Scenario(**{**self.__dict__, "strategy": strategy_list(strategy, "strategy"),
                           "warnings": list(self.warnings)})
        return copy

    def with_protocol(self, protocol: str, remote_assignor: str | None = None) -> "Scenario":
        """The same scenario with every member on ``protocol`` (and, for "consumer", that remote assignor)."""
        if protocol not in PROTOCOLS:
            raise ScenarioError(f"protocol: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        if remote_assignor is not None and remote_assignor not in REMOTE_ASSIGNORS:
            raise ScenarioError(f"group.remote.assignor: unknown assignor {remote_assignor!r} "
                                f"(known: {', '.join(REMOTE_ASSIGNORS)})")
        return Scenario(**{**self.__dict__, "protocol": protocol, "member_protocols": {},
                           "remote_assignor": remote_assignor if remote_assignor is not None else self.remote_assignor,
                           "warnings": list(self.warnings)})

    def protocol_of(self, member: str) -> str:
        """The protocol ``member`` starts with."""
        return self.member_protocols.get(member, self.protocol)

    @property
    def protocols(self) -> set[str]:
        """The protocols members start with."""
        return {self.protocol, *self.member_protocols.values()}

    @property
    def uses_consumer_protocol(self) -> bool:
        """Some member speaks the consumer protocol at some point (at start, or after a switch_protocol)."""
        return "consumer" in self.protocols or any(
            s["action"] == "switch_protocol" and s["protocol"] == "consumer" for s in self.steps)

    @property
    def consumer_only(self) -> bool:
        """Every member speaks the consumer protocol throughout (the classic strategies do not apply)."""
        return self.protocols == {"consumer"} and not any(s["action"] == "switch_protocol" for s in self.steps)


def strategy_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        names = [s.strip() for s in value.split(",") if s.strip()]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = list(value)
    else:
        raise ScenarioError(f"{where}: expected a strategy name or a list of names, got {value!r}")
    for n in names:
        if n not in KNOWN_STRATEGIES:
            raise ScenarioError(f"{where}: unknown assignor {n!r} (known: {', '.join(KNOWN_STRATEGIES)})")
    try:
        select_rebalance_protocol(names)
    except InvalidGroupError as e:
        raise ScenarioError(f"{where}: {e}") from None
    return names


def _int(value: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
        isinstance(value, float) and (not math.isfinite(value) or not value.is_integer())
    ):
        raise ScenarioError(f"{where}: expected a whole number, got {value!r:.60}")
    if not lo <= int(value) <= hi:
        raise ScenarioError(f"{where}: {int(value)} is out of range {lo:,} .. {hi:,}")
    return int(value)


def _number(value: Any, where: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= float(value) <= hi:  # NaN fails too
        raise ScenarioError(f"{where}: expected a number in {lo} .. {hi}, got {value!r}")
    return float(value)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: expected a JSON object, got {type(value).__name__} {value!r:.60}")
    return value


def parse_scenario(data: Any) -> Scenario:
    """Validate a scenario object (module docstring) into a :class:`Scenario`."""
    data = _object(data, "scenario")
    warnings = [f"unknown scenario key {k!r} ignored (known: {', '.join(sorted(_TOP_KEYS))})"
                for k in data if k not in _TOP_KEYS]
    if "topics" not in data:
        raise ScenarioError("scenario needs 'topics': {topic: partition count}")
    topics_raw = _object(data["topics"], "topics")
    if not topics_raw:
        raise ScenarioError("topics: give at least one topic")
    topics: dict[str, int] = {}
    for t, n in topics_raw.items():
        if not t.strip():
            raise ScenarioError("topics: a topic name is blank")
        topics[t] = _int(n, f"topics[{t!r}]", 1, MAX_PARTITIONS_PER_TOPIC)
    if sum(topics.values()) > MAX_PARTITIONS:
        raise ScenarioError(f"topics: {sum(topics.values()):,} partitions in all; the limit is {MAX_PARTITIONS:,}")
    members = _int(data.get("members", 3), "members", 1, MAX_MEMBERS)
    strategy = strategy_list(data.get("strategy", "range"), "strategy")
    static = data.get("static", False)
    if not isinstance(static, bool):
        raise ScenarioError(f"static: expected true or false, got {static!r}")
    config = {**DEFAULT_CONFIG, **_object(data.get("config", {}), "config")}
    if "partition.assignment.strategy" in config:
        raise ScenarioError("config: set the strategy with the scenario's 'strategy' key, not "
                            "partition.assignment.strategy")
    if "group.protocol" in config:
        raise ScenarioError("config: set the group protocol with the scenario's 'protocol' key, not group.protocol")
    remote_assignor = config.pop("group.remote.assignor", None)
    if remote_assignor is not None and remote_assignor not in REMOTE_ASSIGNORS:
        raise ScenarioError(f"config['group.remote.assignor']: unknown assignor {remote_assignor!r} "
                            f"(known: {', '.join(REMOTE_ASSIGNORS)})")
    protocol, member_protocols = _protocols(data.get("protocol", "classic"), members)
    mpr = _int(config.pop("max.poll.records", DEFAULT_MAX_POLL_RECORDS), "config['max.poll.records']", 1, 1_000_000)
    for key in ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms"):
        config[key] = _int(config[key], f"config[{key!r}]", 1, MAX_MS)
    if config["heartbeat.interval.ms"] >= config["session.timeout.ms"]:
        raise ScenarioError("config: heartbeat.interval.ms must be lower than session.timeout.ms")
    try:   # the members' own check of every key and value, before anything runs
        MemberConfig.from_kafka({**config, "group.id": "sim-group"})
    except (InvalidGroupError, TypeError, ValueError) as e:
        raise ScenarioError(f"config: {e}") from None
    coordinator = {"group.initial.rebalance.delay.ms": 3_000,
                   **_object(data.get("coordinator", {}), "coordinator")}
    try:   # the coordinator's own check, before anything runs
        CoordinatorConfig.from_mapping(coordinator)
    except (InvalidGroupError, TypeError, ValueError) as e:
        raise ScenarioError(f"coordinator: {e}") from None
    rp = _object(data.get("record_processing_ms", {}), "record_processing_ms")
    for k in rp:
        if k not in ("median", "sigma", "per"):
            warnings.append(f"record_processing_ms: unknown key {k!r} ignored (known: median, sigma, per)")
    per = rp.get("per", "batch")
    if per not in ("batch", "record"):
        raise ScenarioError(f"record_processing_ms.per: expected 'batch' or 'record', got {per!r}")
    processing = ProcessingModel(
        mpr, _number(rp.get("median", 2.0), "record_processing_ms.median", 0.001, 60_000.0),
        _number(rp.get("sigma", 0.5), "record_processing_ms.sigma", 0.0, 3.0), per,
    )
    if processing.batch_ms_mean > MAX_MS:
        raise ScenarioError(f"record_processing_ms: a batch of {mpr} records would take "
                            f"{processing.batch_ms_mean / 1000:,.0f} s")
    steps_raw = data.get("steps", [])
    if not isinstance(steps_raw, list):
        raise ScenarioError(f"steps: expected a list of step objects, got {type(steps_raw).__name__}")
    scenario = Scenario(
        name=str(data.get("name", "scenario")),
        description=str(data.get("description", "")),
        group_id=str(data.get("group_id", "sim-group")),
        topics=topics,
        members=members,
        strategy=strategy,
        static=static,
        config=config,
        coordinator=coordinator,
        processing=processing,
        start_spread_ms=_int(data.get("start_spread_ms", 10_000), "start_spread_ms", 0, MAX_MS),
        network_latency_ms=_int(data.get("network_latency_ms", 1), "network_latency_ms", 0, 60_000),
        seed=_int(data.get("seed", 0), "seed", 0, 2**63 - 1),
        settle_timeout_ms=_int(data.get("settle_timeout_ms", 600_000), "settle_timeout_ms", 1, MAX_MS),
        check_every_ms=_int(data.get("check_every_ms", 100), "check_every_ms", 1, MAX_MS),
        steps=[],
        warnings=warnings,
        protocol=protocol,
        member_protocols=member_protocols,
        remote_assignor=remote_assignor,
    )
    scenario.steps = _check_steps(steps_raw, scenario)
    return scenario


def _protocol(value: Any, where: str) -> str:
    if value not in PROTOCOLS:
        raise ScenarioError(f"{where}: expected one of {', '.join(PROTOCOLS)}, got {value!r:.60}")
    return value


def _member_name(value: Any, where: str) -> str:
    """A member name as the simulator gives them: ``member-<i>``."""
    if not isinstance(value, str) or not value.startswith("member-") or not value[7:].isdigit() \
            or str(int(value[7:])) != value[7:]:
        raise ScenarioError(f"{where}: {value!r:.60} is not a member name (members are named member-0, "
                            "member-1, ... in start order)")
    return value


def _protocols(value: Any, members: int) -> tuple[str, dict[str, str]]:
    """The ``protocol`` key: one protocol for every member, or ``{"default": p, "member-<i>": p, ...}``."""
    if isinstance(value, str):
        return _protocol(value, "protocol"), {}
    value = _object(value, "protocol")
    default = _protocol(value.get("default", "classic"), "protocol.default")
    per = {}
    for k, v in value.items():
        if k != "default":
            per[_member_name(k, "protocol")] = _protocol(v, f"protocol[{k!r}]")
    return default, per


def _check_steps(steps: list[Any], sc: Scenario) -> list[dict[str, Any]]:
    """Check every step, following the member count and the partition counts through the steps."""
    running = sc.members
    partitions = dict(sc.topics)
    out = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        step = _object(step, where)
        action = step.get("action")
        if action not in _STEP_KEYS:
            raise ScenarioError(f"{where}: unknown action {action!r} (known: {', '.join(_STEP_KEYS)})")
        where = f"steps[{i}] ({action})"
        keys = _STEP_KEYS[action]
        for k in step:
            if k != "action" and k not in keys:
                sc.warnings.append(f"{where}: unknown key {k!r} ignored (known: {', '.join(keys) or 'none'})")
        for k, required in keys.items():
            if required and k not in step:
                raise ScenarioError(f"{where}: needs {k!r}")
        clean: dict[str, Any] = {"action": action}
        if action == "scale":
            running = clean["members"] = _int(step["members"], f"{where}.members", 0, MAX_MEMBERS)
        elif action == "add_members":
            clean["count"] = _int(step["count"], f"{where}.count", 0, MAX_MEMBERS - running)
            running += clean["count"]
        elif action in ("remove_members", "crash"):
            count = _int(step["count"], f"{where}.count", 0, MAX_MEMBERS)
            if count > running:
                raise ScenarioError(f"{where}: cannot stop {count} of the {running} running member(s)")
            clean["count"] = count
            running -= count
        elif action in ("roll_restart", "switch_strategy"):
            down = _int(step.get("downtime_ms", 10_000), f"{where}.downtime_ms", 0, MAX_MS)
            interval = _int(step.get("interval_ms", max(30_000, down)), f"{where}.interval_ms", 0, MAX_MS)
            if interval < down:
                raise ScenarioError(f"{where}: interval_ms ({interval}) is shorter than downtime_ms ({down}): "
                                    "a member would stop before the previous one is back")
            clean.update(downtime_ms=down, interval_ms=interval)
            if action == "switch_strategy":
                clean["strategy"] = strategy_list(step["strategy"], f"{where}.strategy")
        elif action == "add_partitions":
            topic = step["topic"]
            if not isinstance(topic, str):
                raise ScenarioError(f"{where}.topic: expected a topic name, got {topic!r:.60}")
            if topic not in partitions:
                raise ScenarioError(f"{where}: unknown topic {topic!r} (topics: {', '.join(partitions)})")
            n = _int(step["partitions"], f"{where}.partitions", 1, MAX_PARTITIONS_PER_TOPIC)
            if n <= partitions[topic]:
                raise ScenarioError(f"{where}: topic {topic!r} has {partitions[topic]} partitions; "
                                    f"Kafka only adds partitions (asked for {n})")
            if sum(partitions.values()) - partitions[topic] + n > MAX_PARTITIONS:
                raise ScenarioError(f"{where}: more than {MAX_PARTITIONS:,} partitions in all")
            partitions[topic] = n
            clean.update(topic=topic, partitions=n, refresh=bool(step.get("refresh", True)))
        elif action == "switch_protocol":
            down = _int(step.get("downtime_ms", 10_000), f"{where}.downtime_ms", 0, MAX_MS)
            interval = _int(step.get("interval_ms", max(30_000, down)), f"{where}.interval_ms", 0, MAX_MS)
            if interval < down:
                raise ScenarioError(f"{where}: interval_ms ({interval}) is shorter than downtime_ms ({down}): "
                                    "a member would stop before the previous one is back")
            clean.update(protocol=_protocol(step["protocol"], f"{where}.protocol"), downtime_ms=down,
                         interval_ms=interval)
            if "members" in step and "count" in step:
                raise ScenarioError(f"{where}: give 'members' or 'count', not both")
            if "members" in step:
                names = step["members"]
                if not isinstance(names, list) or not names:
                    raise ScenarioError(f"{where}.members: expected a non-empty list of member names")
                clean["members"] = [_member_name(n, f"{where}.members") for n in names]
                if len(set(clean["members"])) != len(names):
                    raise ScenarioError(f"{where}.members: a member is named twice")
            elif "count" in step:
                clean["count"] = _int(step["count"], f"{where}.count", 1, MAX_MEMBERS)
                if clean["count"] > running:
                    raise ScenarioError(f"{where}: cannot switch {clean['count']} of the {running} running "
                                        "member(s)")
        elif action == "wait":
            clean["ms"] = _int(step["ms"], f"{where}.ms", 0, MAX_MS)
        out.append(clean)
    return out

