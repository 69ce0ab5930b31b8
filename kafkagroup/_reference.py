"""Pure-Python reference assignors: Kafka's procedures restated over names, slowly and plainly.

They exist to be compared with the native engine (tests run both on random groups); they share no
code with it beyond the Java string order. Each takes ``topics`` (name -> partition count or replica
racks per partition) and ``members`` (member id -> dict with topics, rack, instance) and returns
member id -> sorted list of (topic, partition).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkagroup.model import java_string_key

Assignment = dict[str, list[tuple[str, int]]]


def _member_info_order(members: Mapping[str, Any]) -> list[str]:
    """Kafka's MemberInfo.compareTo: static members by instance id first, then by member id."""
    def key(mid: str) -> tuple[int, bytes]:
        inst = members[mid].get("instance")
        return (0, java_string_key(inst)) if inst else (1, java_string_key(mid))
    return sorted(members, key=key)


def _count(spec: Any) -> int:
    return spec if isinstance(spec, int) else len(spec)


def roundrobin(topics: Mapping[str, Any], members: Mapping[str, Any]) -> Assignment:
    order = _member_info_order(members)
    out: Assignment = {m: [] for m in members}
    subscribed = sorted({t for m in members.values() for t in m["topics"]}, key=java_string_key)
    cursor = 0
    for t in subscribed:
        if t not in topics:
            continue
        for p in range(_count(topics[t])):
            while t not in members[order[cursor]]["topics"]:
                cursor = (cursor + 1) % len(order)
            out[order[cursor]].append((t, p))
            cursor = (cursor + 1) % len(order)
    return {m: sorted(v) for m, v in out.items()}


class _TopicState:
    """Kafka's RangeAssignor.TopicAssignmentState."""

    def __init__(self, topic: str, spec: Any, consumers: list[str], racks: Mapping[str, str | None]) -> None:
        self.topic = topic
        self.consumers = consumers
        self.rack = {c: racks.get(c) for c in consumers}
        n = _count(spec)
        self.unassigned = list(range(n))
        self.taken = {c: 0 for c in consumers}
        self.per = n // len(consumers)
        self.extra = n % len(consumers)
        consumer_racks = {r for r in self.rack.values() if r}
        self.partition_racks: dict[int, set[str]] = {}
        if consumer_racks:
            replica_lists = spec if not isinstance(spec, int) else [[] for _ in range(n)]
            self.partition_racks = {p: {r for r in (replica_lists[p] or []) if r is not None} for p in range(n)}
        all_partition_racks = set().union(*self.partition_racks.values()) if self.partition_racks else set()
        self.needs_racks = bool(consumer_racks) and not consumer_racks.isdisjoint(all_partition_racks) and \
            not all(r == all_partition_racks for r in self.partition_racks.values())

    def racks_match(self, c: str, p: int) -> bool:
        r = self.rack[c]
        return r is None or r in self.partition_racks.get(p, set())

    def max_assignable(self, c: str) -> int:
        return max(0, self.per + (1 if self.extra > 0 else 0) - self.taken[c])

    def on_assigned(self, c: str, parts: list[int], out: Assignment) -> None:
        out[c].extend((self.topic, p) for p in parts)
        self.taken[c] += len(parts)
        if self.taken[c] > self.per:
            self.extra -= 1
        self.unassigned = [p for p in self.unassigned if p not in parts]


def _assign_ranges(state: _TopicState, may_assign: Any, out: Assignment) -> None:
    for c in state.consumers:
        if not state.unassigned:
            break
        parts = [p for p in state.unassigned if may_assign(c, p)][:state.max_assignable(c)]
        if parts:
            state.on_assigned(c, parts, out)


def range_(topics: Mapping[str, Any], members: Mapping[str, Any]) -> Assignment:
    order = _member_info_order(members)
    racks = {m: (members[m].get("rack") or None) for m in members}
    out: Assignment = {m: [] for m in members}
    states = []
    for t in {t for m in members.values() for t in m["topics"]}:
        if t in topics and _count(topics[t]) > 0:
            states.append(_TopicState(t, topics[t], [c for c in order if t in members[c]["topics"]], racks))
    if any(s.needs_racks for s in states):
        groups: dict[tuple[tuple[str, ...], int], list[_TopicState]] = {}
        for s in states:
            groups.setdefault((tuple(s.consumers), len(s.partition_racks)), []).append(s)
        for (consumers, n), group in groups.items():
            if len(group) > 1:
                remaining = list(consumers)
                for p in range(n):
                    match = next((c for c in remaining
                                  if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in group)), None)
                    if match is None:
                        continue
                    for s in group:
                        s.on_assigned(match, [p], out)
                    if all(s.max_assignable(match) == 0 for s in group):
                        remaining.remove(match)
                        if not remaining:
                            break
            elif group[0].needs_racks:
                _assign_ranges(group[0], group[0].racks_match, out)
    for s in states:
        _assign_ranges(s, lambda c, p: True, out)
    return {m: sorted(v) for m, v in out.items()}


REFERENCE = {"range": range_, "roundrobin": roundrobin}
