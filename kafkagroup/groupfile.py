"""The group file of ``kafkagroup assign``: JSON in, a checked group out, every mistake named.

The format (``kafkagroup assign --example-json`` prints a complete example)::

    {"topics":  {"orders": 6, "payments": [["r0", "r1"], ["r1"]]},   # partition count, or replica racks
     "members": {"C0": {"topics": ["orders", "payments"],
                        "owned_partitions": [["orders", 0], {"topic": "payments", "partitions": [1]}],
                        "generation_id": 3, "group.instance.id": "host-0", "client.rack": "r0"}}}

Member keys are Kafka's names; the short names of earlier releases and the Spark columns are aliases
(``owned``, ``generation``, ``instance`` / ``instance_id``, ``rack``). Keys starting with ``_`` at the
top level or in a member are comments. What Kafka would accept but is probably a mistake is a warning
(:attr:`GroupFile.warnings`): a subscribed topic missing from ``topics`` (skipped, as Kafka's assignors
do), an unknown member key, a partition claimed by two members (the higher generation keeps it; a tie
voids both claims), a claim on a topic the member does not subscribe to (it does not count).
Everything else wrong is a :class:`GroupFileError` naming the member, topic or key.
"""
from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkagroup.errors import GroupFileError   # re-exported: its old home

# The CLI builds Python objects per assigned partition and per strategy (~100 bytes each), so a group
# file is bounded before anything is allocated: 2M partitions is twice DESIGN.md's large reference
# shape (1M) and needs ~1 GB over all strategies. The engine's own bound is far higher
# (kafkagroup.engine.MAX_PARTITIONS, 2^28 per call): larger groups go through kafkagroup.assign_arrays.
MAX_FILE_PARTITIONS = 2_000_000

# canonical (Kafka's) key -> accepted spellings, canonical first
MEMBER_KEYS: dict[str, tuple[str, ...]] = {
    "topics": ("topics",),
    "owned_partitions": ("owned_partitions", "owned"),
    "generation_id": ("generation_id", "generation"),
    "group.instance.id": ("group.instance.id", "instance_id", "instance"),
    "client.rack": ("client.rack", "rack"),
}
_ALIAS = {alias: key for key, aliases in MEMBER_KEYS.items() for alias in aliases}
TOP_KEYS = ("topics", "members")


@dataclass
class GroupFile:
    """A checked group: ``topics`` and ``members`` are what :func:`kafkagroup.assign` takes."""

    topics: dict[str, Any]
    members: dict[str, dict[str, Any]]
    partitions: int                                    # partitions of all topics in the file (subscribed or not)
    previous_owner: dict[tuple[str, int], str]         # partition -> the claim that counts (Kafka's rules)
    warnings: list[str] = field(default_factory=list)


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise GroupFileError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def read_group_json(path: str) -> Any:
    """The parsed JSON of `path` ('-': standard input); duplicate keys are an error, not 'last wins'."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise GroupFileError(f"cannot read {path}: {e.strerror if isinstance(e, OSError) else e}") from None
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as e:
        raise GroupFileError(f"{path} is not valid JSON: {e}") from None


def load_group_file(path: str) -> GroupFile:
    return parse_group(read_group_json(path))


def _suggest(key: str, known: Any) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_group(data: Any) -> GroupFile:
    """Check a parsed group file (see the module docstring) and normalise its member keys."""
    if not isinstance(data, dict):
        raise GroupFileError(f"expected a JSON object with 'topics' and 'members', got {type(data).__name__}")
    warnings: list[str] = []
    for key in data:
        if key not in TOP_KEYS and not key.startswith("_"):
            warnings.append(f"ignored top-level key {key!r}{_suggest(key, TOP_KEYS)}")
    for key in TOP_KEYS:
        if key not in data:
            close = difflib.get_close_matches(key, [k for k in data if k not in TOP_KEYS], n=1, cutoff=0.6)
            raise GroupFileError(f"missing top-level key {key!r}" + (f" (found {close[0]!r})" if close else ""))
    topics, partitions = _parse_topics(data["topics"])
    raw_members = data["members"]
    if not isinstance(raw_members, dict):
        raise GroupFileError(f"'members' must be an object mapping member id to its subscription, "
                             f"got {type(raw_members).__name__}")
    members: dict[str, dict[str, Any]] = {}
    for member_id, spec in raw_members.items():
        if member_id == "":
            raise GroupFileError("a member id is the empty string")
        members[member_id] = _parse_member(member_id, spec, warnings)
    _check_size(topics, members)
    warnings.extend(_unknown_topic_warnings(topics, members))
    previous_owner = _previous_owners(topics, members, warnings)
    return GroupFile(topics=topics, members=members, partitions=partitions, previous_owner=previous_owner,
                     warnings=warnings)


def _parse_topics(raw: Any) -> tuple[dict[str, Any], int]:
    if not isinstance(raw, dict):
        raise GroupFileError(f"'topics' must be an object mapping topic name to partition count (or to replica "
                             f"racks per partition), got {type(raw).__name__}: {json.dumps(raw)[:60]}")
    total = 0
    for topic, spec in raw.items():
        if _is_int(spec):
            if spec < 0:
                raise GroupFileError(f"topic {topic!r}: negative partition count {spec}")
            count = spec
        elif isinstance(spec, list):
            count = len(spec)
            for p, racks in enumerate(spec):
                if racks is not None and (not isinstance(racks, list) or not all(isinstance(r, str) for r in racks)):
                    raise GroupFileError(f"topic {topic!r} partition {p}: replica racks must be a list of rack "
                                         f"names (or null), got {json.dumps(racks)}")
        else:
            raise GroupFileError(f"topic {topic!r}: expected a partition count or a list of replica racks per "
                                 f"partition, got {json.dumps(spec)}")
        total += count
    return raw, total


def _check_size(topics: Mapping[str, Any], members: Mapping[str, dict[str, Any]]) -> None:
    """The bound on the partitions of subscribed topics (a topic nobody subscribes to is never sized,
    as in the engine's own bound), checked before the engine allocates anything."""
    subscribed = {t for spec in members.values() for t in spec["topics"] if t in topics}
    sizes = {t: topics[t] if _is_int(topics[t]) else len(topics[t]) for t in subscribed}
    largest = max(sizes, key=sizes.__getitem__, default=None)
    if largest is not None and sizes[largest] > MAX_FILE_PARTITIONS:
        raise GroupFileError(f"topic {largest!r}: {sizes[largest]:,} partitions; kafkagroup assign takes at most "
                             f"{MAX_FILE_PARTITIONS:,} partitions per group (kafkagroup.assign_arrays for larger)")
    total = sum(sizes.values())
    if total > MAX_FILE_PARTITIONS:
        raise GroupFileError(f"{total:,} partitions in subscribed topics; kafkagroup assign takes at most "
                             f"{MAX_FILE_PARTITIONS:,} partitions per group (kafkagroup.assign_arrays for larger)")


def _parse_member(member_id: str, spec: Any, warnings: list[str]) -> dict[str, Any]:
    if isinstance(spec, list):       # shorthand: a bare topic list
        spec = {"topics": spec}
    if not isinstance(spec, dict):
        raise GroupFileError(f"member {member_id!r}: expected an object with 'topics' (and optionally "
                             f"{', '.join(repr(k) for k in list(MEMBER_KEYS)[1:])}), got {json.dumps(spec)}")
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    unknown = []
    for key, value in spec.items():
        if key.startswith("_"):
            continue
        canonical = _ALIAS.get(key)
        if canonical is None:
            unknown.append(key)
            continue
        if canonical in spelled:
            raise GroupFileError(f"member {member_id!r}: {spelled[canonical]!r} and {key!r} are the same key "
                                 f"({canonical!r}); give it once")
        spelled[canonical] = key
        out[canonical] = value
    if "topics" not in out:
        hint = _suggest(unknown[0], _ALIAS) if unknown else ""
        found = f"; found {unknown[0]!r}{hint}" if unknown else ""
        raise GroupFileError(f"member {member_id!r}: missing key 'topics'{found}")
    for key in unknown:
        warnings.append(f"member {member_id!r}: ignored key {key!r}{_suggest(key, _ALIAS)}")
    topics = out["topics"]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise GroupFileError(f"member {member_id!r}: 'topics' must be a list of topic names, got {json.dumps(topics)}")
    if len(set(topics)) != len(topics):
        raise GroupFileError(f"member {member_id!r}: 'topics' lists a topic twice: {json.dumps(topics)}")
    key = spelled.get("owned_partitions", "owned_partitions")
    out["owned_partitions"] = _parse_owned(member_id, key, out.get("owned_partitions", []))
    generation = out.get("generation_id", -1)
    if generation is None:
        generation = -1
    if not _is_int(generation) or not -2**31 <= generation < 2**31:
        raise GroupFileError(f"member {member_id!r}: {spelled['generation_id']!r} must be a 32-bit integer, "
                             f"got {json.dumps(generation)}")
    out["generation_id"] = generation
    for name in ("group.instance.id", "client.rack"):
        value = out.get(name)
        if value is not None and (not isinstance(value, str) or value == ""):
            raise GroupFileError(f"member {member_id!r}: {spelled[name]!r} must be a non-empty string, "
                                 f"got {json.dumps(value)}")
    return out


def _parse_owned(member_id: str, key: str, raw: Any) -> list[tuple[str, int]]:
    """[topic, partition] pairs, {"topic", "partition"} (Spark's owned struct) or {"topic", "partitions"}
    (Kafka's ConsumerProtocol TopicPartition) -> (topic, partition) pairs; a claim listed twice is an error."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise GroupFileError(f"member {member_id!r}: {key!r} must be a list of [topic, partition], got {json.dumps(raw)}")
    claims: list[tuple[str, int]] = []
    for item in raw:
        if isinstance(item, list) and len(item) == 2:
            pairs = [(item[0], item[1])]
        elif isinstance(item, dict) and set(item) == {"topic", "partition"}:
            pairs = [(item["topic"], item["partition"])]
        elif isinstance(item, dict) and set(item) == {"topic", "partitions"} and isinstance(item["partitions"], list):
            pairs = [(item["topic"], p) for p in item["partitions"]]
        else:
            raise GroupFileError(f"member {member_id!r}: {key!r} entry {json.dumps(item)} is not [topic, partition], "
                                 f'{{"topic": ..., "partition": ...}} or {{"topic": ..., "partitions": [...]}}')
        for topic, partition in pairs:
            if not isinstance(topic, str) or not _is_int(partition):
                raise GroupFileError(f"member {member_id!r}: {key!r} entry {json.dumps(item)}: expected a topic "
                                     f"name and an integer partition")
            claims.append((topic, partition))
    if len(set(claims)) != len(claims):
        seen: set[tuple[str, int]] = set()
        twice = next(c for c in claims if c in seen or seen.add(c))  # type: ignore[func-returns-value]
        raise GroupFileError(f"member {member_id!r} claims partition {twice[0]}-{twice[1]} twice")
    return claims


def _unknown_topic_warnings(topics: Mapping[str, Any], members: Mapping[str, dict[str, Any]]) -> list[str]:
    subscribers: dict[str, list[str]] = {}
    for member_id, spec in members.items():
        for topic in spec["topics"]:
            if topic not in topics:
                subscribers.setdefault(topic, []).append(member_id)
    out = []
    for topic, who in sorted(subscribers.items()):
        names = ", ".join(repr(m) for m in who[:3]) + (f" and {len(who) - 3} more" if len(who) > 3 else "")
        out.append(f"topic {topic!r} (subscribed by {names}) is not in 'topics': skipped, as Kafka's assignors "
                   f"do{_suggest(topic, topics)}")
    return out


def _previous_owners(topics: Mapping[str, Any], members: Mapping[str, dict[str, Any]],
                     warnings: list[str]) -> dict[tuple[str, int], str]:
    """Each partition's previous owner by the engine's rule: the highest-generation claim by a member
    subscribed to the topic; a tie at that generation voids the claim. Contested claims are warnings."""
    best: dict[tuple[str, int], tuple[int, list[str]]] = {}
    contested: set[tuple[str, int]] = set()
    not_subscribed: dict[str, list[str]] = {}
    for member_id, spec in members.items():
        subscribed = set(spec["topics"])
        generation = spec["generation_id"]
        for tp in spec["owned_partitions"]:
            if tp[0] not in subscribed:
                if tp[0] in topics:
                    not_subscribed.setdefault(member_id, []).append(f"{tp[0]}-{tp[1]}")
                continue
            held = best.get(tp)
            if held is None:
                best[tp] = (generation, [member_id])
                continue
            contested.add(tp)
            if generation > held[0]:
                best[tp] = (generation, [member_id])
            elif generation == held[0]:
                held[1].append(member_id)
    for member_id, parts in not_subscribed.items():
        shown = ", ".join(parts[:3]) + (f" and {len(parts) - 3} more" if len(parts) > 3 else "")
        warnings.append(f"member {member_id!r} claims {shown} of topics it does not subscribe to: not counted "
                        f"as their previous owner")
    claimants: dict[tuple[str, int], list[tuple[str, int]]] = {}
    if contested:
        for member_id, spec in members.items():
            for tp in spec["owned_partitions"]:
                if tp in contested and tp[0] in spec["topics"]:
                    claimants.setdefault(tp, []).append((member_id, spec["generation_id"]))
    for tp in sorted(contested)[:20]:
        who = ", ".join(f"{m!r} (generation {g})" for m, g in claimants[tp])
        generation, winners = best[tp]
        outcome = (f"{winners[0]!r} keeps it (highest generation)" if len(winners) == 1
                   else "the tie at the highest generation voids every claim")
        warnings.append(f"partition {tp[0]}-{tp[1]} is claimed by {who}: {outcome}")
    if len(contested) > 20:
        warnings.append(f"... {len(contested) - 20} more partitions claimed by more than one member")
    return {tp: winners[0] for tp, (generation, winners) in best.items() if len(winners) == 1}


EXAMPLE_JSON = """\
{
  "_comment": [
    "A consumer group for 'kafkagroup assign FILE'. Keys starting with _ are comments.",
    "topics: topic -> partition count, or one list of replica racks per partition (rack-aware assignors).",
    "members: member id -> its subscription; only 'topics' is required.",
    "  owned_partitions: what the member owns now, [topic, partition] or {topic, partitions: [...]}",
    "  generation_id: the generation those claims come from (the higher wins a contested partition)",
    "  group.instance.id: static membership (static members sort first, as in Kafka)",
    "  client.rack: the member's rack, matched against replica racks (KIP-881)",
    "Short aliases: owned, generation, instance / instance_id, rack (the Spark column names)."
  ],
  "topics": {
    "orders": 6,
    "payments": [["r0", "r1"], ["r1", "r2"], ["r2", "r0"]]
  },
  "members": {
    "consumer-1": {
      "topics": ["orders", "payments"],
      "owned_partitions": [["orders", 0], ["orders", 1], ["orders", 2], ["payments", 0]],
      "generation_id": 7,
      "group.instance.id": "host-a",
      "client.rack": "r0"
    },
    "consumer-2": {
      "topics": ["orders", "payments"],
      "owned_partitions": [{"topic": "orders", "partitions": [3, 4, 5]}, {"topic": "payments", "partitions": [1, 2]}],
      "generation_id": 7,
      "client.rack": "r1"
    },
    "consumer-3": {
      "_comment": "joined just now: owns nothing yet",
      "topics": ["orders"],
      "client.rack": "r2"
    }
  }
}
"""
