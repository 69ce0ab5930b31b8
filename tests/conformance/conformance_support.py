"""One scenario, two servers: the conformance harness.

A scenario is a function ``scenario(run: Run) -> observations`` that drives real clients (and, where no
client can express it, raw requests through kio) against ``run.bootstrap`` and returns what a user can
observe: error codes, DescribeGroups / ListGroups / OffsetFetch answers, assignments, committed offsets,
which callbacks each client saw. :func:`compare` runs it against Apache Kafka 4 and against
`kafkagroup serve` (both started once per test session; each scenario uses its own groups), normalises what
legitimately differs between two servers and fails with both answers side by side if anything else does.

Normalised (by the name of the field that holds a value, wherever it is in the observations):
  * member ids the server generates -> ``member-1``, ``member-2`` ... in order of first appearance (the same
    id gets the same label everywhere in one side's observations, so "the leader is the member that got
    partitions 0-1" still compares);
  * throttle times -> dropped; node ids -> ``node``; the coordinator's / broker's port -> ``port``;
    cluster ids and topic ids -> labels; timestamps -> ``ts`` (or ``-1`` kept);
  * error messages -> ``message`` when present (the text is the server's own; null vs a text is kept).
Everything else, including error codes, states, protocol names, client ids and hosts, must be equal.
"""
from __future__ import annotations

import dataclasses
import datetime
import difflib
import enum
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

import pytest

from server_support import ConsumerProcess, Consumers, wait_until
from server_wire import KafkaWire, body, nested

from kafkagroup.protocol.consumer_protocol import decode_assignment, decode_subscription

# API keys used by the observation helpers.
FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST_GROUPS = 10, 11, 12, 13, 14, 15, 16
OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS, OFFSET_DELETE, LIST_OFFSETS = 8, 9, 42, 47, 2

MEMBER_KEYS = {"member_id", "leader", "memberId", "member", "leader_id_member", "consumer_id"}
NODE_KEYS = {"node_id", "controller_id", "leader_id", "coordinator_id"}
DROP_KEYS = {"throttle_time_ms", "throttle_time", "at"}
PORT_KEYS = {"port"}
TIMESTAMP_KEYS = {"timestamp", "commit_timestamp", "log_append_time_ms", "max_timestamp"}
LABEL_KEYS = {"cluster_id": "cluster", "topic_id": "topic-id"}
MESSAGE_KEYS = {"error_message"}


# --- turning answers into plain, comparable data ------------------------------------------------------------
def plain(value: Any) -> Any:
    """A kio entity (or anything nested of dataclasses, enums, tuples, bytes) as JSON-able data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=_order) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def _order(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


class Normaliser:
    """Replaces what legitimately differs between two servers (see the module docstring) in one side's
    observations; labels are handed out in order of first appearance, so both sides get the same labels
    when they agree on everything else."""

    def __init__(self) -> None:
        self.labels: dict[tuple[str, Any], str] = {}

    def label(self, kind: str, value: Any) -> Any:
        if value in (None, ""):
            return value
        key = (kind, value)
        if key not in self.labels:
            self.labels[key] = f"{kind}-{sum(1 for k in self.labels if k[0] == kind) + 1}"
        return self.labels[key]

    def member(self, value: Any) -> Any:
        return self.label("member", value)

    def __call__(self, value: Any, key: Optional[str] = None) -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items() if k not in DROP_KEYS}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if key in MEMBER_KEYS and isinstance(value, str):
            return self.member(value)
        if key in NODE_KEYS and isinstance(value, int):
            return "node" if value >= 0 else value
        if key in PORT_KEYS and isinstance(value, int):
            return "port"
        if key in TIMESTAMP_KEYS and isinstance(value, int):
            return "ts" if value >= 0 else value
        if key in LABEL_KEYS and value is not None:
            return self.label(LABEL_KEYS[key], value)
        if key in MESSAGE_KEYS:      # the text is the server's own, except Kafka's "NONE" on success
            return value if value in (None, "", "NONE") else "message"
        return value


def side_by_side(left: Any, right: Any, names: tuple[str, str] = ("Apache Kafka 4", "kafkagroup serve"),
                 width: int = 78) -> str:
    """Both observations as indented JSON in two columns; rows that differ are marked with `|` (changed),
    `<` (only left) or `>` (only right)."""
    a = json.dumps(left, indent=1, sort_keys=False, default=str).splitlines()
    b = json.dumps(right, indent=1, sort_keys=False, default=str).splitlines()
    rows = [f"  {names[0]:<{width}}   {names[1]}", "  " + "-" * width + "   " + "-" * width]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        mark = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}[tag]
        left_rows, right_rows = a[i1:i2], b[j1:j2]
        for k in range(max(len(left_rows), len(right_rows))):
            lt = left_rows[k] if k < len(left_rows) else ""
            rt = right_rows[k] if k < len(right_rows) else ""
            rows.append(f"{mark} {lt[:width]:<{width}} {mark} {rt}")
    return "\n".join(rows)


# --- one scenario on one server --------------------------------------------------------------------------------
@dataclasses.dataclass
class Server:
    """A server under test: what scenarios may know about it."""
    name: str              # "kafka" or "serve"
    bootstrap: str

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.bootstrap.rsplit(":", 1)
        return host, int(port)


class Run:
    """One scenario against one server: names its groups, starts clients, and closes all it started."""

    def __init__(self, server: Server, scenario_id: str, java_classpath: Optional[str]) -> None:
        self.server = server
        self.bootstrap = server.bootstrap
        self.scenario_id = scenario_id
        self.consumers = Consumers(java_classpath)
        self._wires: list[KafkaWire] = []
        self._closers: list[Callable[[], None]] = []
        self.figures: dict[str, Any] = {}    # measured, never compared (timings differ): written beside the dump

    def group(self, name: str = "g") -> str:
        """A group name unique to this scenario (the same on both servers)."""
        return f"{self.scenario_id}.{name}"

    def wire(self) -> KafkaWire:
        w = KafkaWire(self.server.address)
        self._wires.append(w)
        return w

    def start(self, client: str, group: str, topics: Iterable[str], name: Optional[str] = None,
              **settings: Any) -> ConsumerProcess:
        """A real consumer process (tests/server's drivers: java, confluent, kafka-python, aiokafka)."""
        return self.consumers.start(client, self.bootstrap, group, topics, name=name, **settings)

    def on_close(self, fn: Callable[[], None]) -> None:
        self._closers.append(fn)

    def close(self) -> None:
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception:  # a closer must not hide the scenario's own failure
                pass
        self.consumers.stop_all()
        for w in self._wires:
            w.close()


def compare(scenario: Callable[[Run], Any], servers: Iterable[Server], scenario_id: str,
            java_classpath: Optional[str] = None, parallel: bool = False) -> dict[str, Any]:
    """Run `scenario` against each server (in turn, Kafka first; or at once with `parallel`, for scenarios
    that mostly wait, e.g. for a retention period), normalise, and fail with both answers side by side if
    they differ. Returns the normalised observations by server name."""
    figures: dict[str, Any] = {}

    def one(server: Server) -> Any:
        run = Run(server, scenario_id, java_classpath)
        try:
            observed = scenario(run)
        except Exception as e:
            raise AssertionError(f"scenario {scenario_id} failed against {server.name} "
                                 f"({server.bootstrap}): {e}") from e
        finally:
            run.close()
        if run.figures:
            figures[server.name] = run.figures
        return Normaliser()(plain(observed))

    servers = list(servers)
    if parallel:
        with ThreadPoolExecutor(len(servers)) as pool:
            futures = {s.name: pool.submit(one, s) for s in servers}
            seen = {name: f.result() for name, f in futures.items()}
    else:
        seen = {s.name: one(s) for s in servers}
    kafka, serve = seen["kafka"], seen["serve"]
    dump = os.environ.get("KAFKAGROUP_CONFORMANCE_DUMP")
    if dump:                      # a directory: each scenario's normalised observations, for reading
        Path(dump).mkdir(parents=True, exist_ok=True)
        (Path(dump) / f"{scenario_id}.json").write_text(json.dumps(seen, indent=1, default=str))
        if figures:
            (Path(dump) / f"{scenario_id}.figures.json").write_text(json.dumps(figures, indent=1, default=str))
    if kafka != serve:
        pytest.fail(f"{scenario_id}: kafkagroup serve differs from Apache Kafka 4\n"
                    + side_by_side(kafka, serve), pytrace=False)
    return seen


# --- observations a scenario can take --------------------------------------------------------------------------
def describe_group(wire: KafkaWire, group: str, version: int = 5) -> dict[str, Any]:
    """DescribeGroups for one group, members sorted by group.instance.id then client id, with each member's
    subscription and assignment decoded (the consumer protocol) instead of bytes."""
    answer = wire.request(DESCRIBE, version, body(DESCRIBE, version, groups=(group,),
                                                  include_authorized_operations=False))
    (g,) = answer.groups
    members = []
    for m in g.members:
        row: dict[str, Any] = {"member_id": m.member_id, "group_instance_id": getattr(m, "group_instance_id", None),
                               "client_id": m.client_id, "client_host": m.client_host}
        row["subscribed"] = _decoded(m.member_metadata, lambda b: sorted(decode_subscription(b).topics))
        row["assigned"] = _decoded(m.member_assignment,
                                   lambda b: sorted([tp.topic, tp.partition] for tp in decode_assignment(b).partitions))
        members.append(row)
    members.sort(key=lambda r: (r["group_instance_id"] or "", r["client_id"], str(r.get("assigned"))))
    return {"error_code": plain(g.error_code), "group_id": g.group_id, "group_state": g.group_state,
            "protocol_type": g.protocol_type, "protocol_data": g.protocol_data, "members": members}


def _decoded(data: Any, decode: Callable[[bytes], Any]) -> Any:
    """A consumer-protocol field decoded, None when empty, else its bytes as hex (a raw member's metadata)."""
    if not data:
        return None
    try:
        return decode(bytes(data))
    except Exception:
        return bytes(data).hex()


def wait_group(wire: KafkaWire, group: str, state: str, members: Optional[int] = None, timeout: float = 60,
               assigned: bool = True) -> dict[str, Any]:
    """Poll DescribeGroups until the group is in `state` (with `members` members, each holding an assignment
    when `assigned`); returns that answer."""
    last: dict[str, Any] = {}

    def ready() -> Optional[dict[str, Any]]:
        nonlocal last
        last = describe_group(wire, group)
        if last["group_state"] != state:
            return None
        if members is not None and len(last["members"]) != members:
            return None
        if assigned and any(m.get("assigned") is None for m in last["members"]):
            return None
        return last

    return wait_until(ready, timeout, lambda: f"group {group} {state} with {members} members (now {last})")


def list_groups(wire: KafkaWire, prefix: str, version: int = 4) -> list[dict[str, Any]]:
    """ListGroups (v4: with states) restricted to groups whose id starts with `prefix`, sorted."""
    answer = wire.request(LIST_GROUPS, version, body(LIST_GROUPS, version, states_filter=(), types_filter=()))
    rows = [{"group_id": g.group_id, "protocol_type": g.protocol_type,
             "group_state": getattr(g, "group_state", None)}
            for g in answer.groups if g.group_id.startswith(prefix)]
    return [{"error_code": plain(answer.error_code)}] + sorted(rows, key=lambda r: r["group_id"])


def fetch_offsets(wire: KafkaWire, group: str, partitions: Optional[Iterable[tuple[str, int]]] = None,
                  version: int = 8) -> dict[str, Any]:
    """OffsetFetch v8 for one group: all its partitions (None) or the listed ones, sorted."""
    if partitions is None:
        topics = None
    else:
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        topics = tuple(nested(OFFSET_FETCH, version, "OffsetFetchRequestTopics", name=t, partition_indexes=tuple(ps))
                       for t, ps in sorted(by_topic.items()))
    groups = (nested(OFFSET_FETCH, version, "OffsetFetchRequestGroup", group_id=group, member_id=None,
                     member_epoch=-1, topics=topics),)
    answer = wire.request(OFFSET_FETCH, version, body(OFFSET_FETCH, version, groups=groups, require_stable=False))
    (g,) = answer.groups
    rows = sorted([t.name, p.partition_index, p.committed_offset, p.metadata, plain(p.error_code)]
                  for t in g.topics for p in t.partitions)
    return {"error_code": plain(g.error_code), "offsets": rows}


# --- raw group requests (kio), for what no client expresses --------------------------------------------------
def join_body(version: int, group: str, member_id: str = "", instance: Optional[str] = None,
              protocols: Iterable[tuple[str, bytes]] = (("range", b"r"),), protocol_type: str = "consumer",
              session_ms: int = 30_000, rebalance_ms: int = 30_000, reason: Optional[str] = None) -> Any:
    protos = tuple(nested(JOIN, version, "JoinGroupRequestProtocol", name=n, metadata=m) for n, m in protocols)
    return body(JOIN, version, group_id=group, session_timeout=session_ms, rebalance_timeout=rebalance_ms,
                member_id=member_id, group_instance_id=instance, protocol_type=protocol_type, protocols=protos,
                reason=reason)


def join_answer(answer: Any) -> dict[str, Any]:
    """A JoinGroup answer as plain data, members sorted by (instance id, metadata) so that the order in
    which a server lists them does not matter (Kafka's order is a HashMap's)."""
    out = plain(answer)
    out["members"] = sorted(out.get("members", []), key=lambda m: (m.get("group_instance_id") or "",
                                                                     m.get("metadata", "")))
    return out


def sync_body(version: int, group: str, generation: int, member_id: str, instance: Optional[str] = None,
              assignments: Iterable[tuple[str, bytes]] = (), protocol_type: Optional[str] = "consumer",
              protocol_name: Optional[str] = "range") -> Any:
    items = tuple(nested(SYNC, version, "SyncGroupRequestAssignment", member_id=m, assignment=a)
                  for m, a in assignments)
    return body(SYNC, version, group_id=group, generation_id=generation, member_id=member_id,
                group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
                assignments=items)


def heartbeat_body(version: int, group: str, generation: int, member_id: str,
                   instance: Optional[str] = None) -> Any:
    return body(HEARTBEAT, version, group_id=group, generation_id=generation, member_id=member_id,
                group_instance_id=instance)


def leave_body(version: int, group: str, members: Iterable[tuple[str, Optional[str]]] = (),
               member_id: str = "") -> Any:
    """LeaveGroup: v0-2 one `member_id`, v3+ a batch of (member_id, group_instance_id)."""
    items = tuple(nested(LEAVE, version, "MemberIdentity", member_id=m, group_instance_id=i, reason=None)
                  for m, i in members)
    return body(LEAVE, version, group_id=group, member_id=member_id, members=items)


def owned_by(consumers: dict[str, ConsumerProcess]) -> dict[str, list[list[Any]]]:
    """What each consumer's own callbacks say it holds, by name."""
    return {name: sorted([t, p] for t, p in c.owned) for name, c in sorted(consumers.items())}


def callbacks(c: ConsumerProcess) -> list[Any]:
    """The rebalance callbacks a consumer saw, in order: [event, partitions] (no generations or member ids)."""
    return [[e["event"], e["partitions"]] for e in c.events if e["event"] in ("assigned", "revoked", "lost")]


def settled(consumers: Iterable[ConsumerProcess], expected: set[tuple[str, int]]) -> bool:
    owned = [c.owned for c in consumers]
    return all(owned) and sum(map(len, owned)) == len(expected) and set().union(*owned) == expected


def wait_settled(consumers: list[ConsumerProcess], expected: set[tuple[str, int]], timeout: float = 90) -> None:
    wait_until(lambda: settled(consumers, expected), timeout,
               lambda: f"{[c.name for c in consumers]} to share {sorted(expected)} "
                       f"(now {[sorted(c.owned) for c in consumers]}; {[c._context() for c in consumers]})")


def elapsed(since: float) -> float:
    return time.monotonic() - since
