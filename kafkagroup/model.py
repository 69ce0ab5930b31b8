"""Names to the compact problem: intern topics, members and racks into dense int32 ids (DESIGN.md).

A group is described the way the vectors describe it::

    topics  = {"t0": 3, "t1": [["r0"], ["r1", "r0"]]}      # partition count, or replica racks per partition
    members = {"C0": {"topics": ["t0", "t1"], "owned": [("t0", 0)], "generation": 2,
                      "rack": "r0", "instance": "i-0"}}

:func:`build_group` turns that into a :class:`CompactGroup`: numpy arrays the engine reads without
copying, plus the name tables needed to turn ``owner[]`` back into names.

Ordering follows Java: topic names, member ids and group.instance.ids compare as ``String.compareTo``
does (UTF-16 code units, which differs from Python's code-point order above the BMP). Members are
ordered as Kafka's ``MemberInfo``: static members (with a group.instance.id) first, by instance id,
then dynamic members by member id.

Kafka's rules for what members send:
- a subscribed topic missing from the metadata is skipped (AbstractPartitionAssignor does the same);
- an owned claim on a topic nobody subscribes to any more is dropped;
- an owned claim on a topic missing from the metadata, or past the topic's partition count, is an
  error naming the member, topic and partition (``strict=True``, the default for users), or dropped and
  counted in ``CompactGroup.dropped_claims`` (``strict=False``, what a group leader does).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from kafkagroup.engine import MAX_PARTITIONS
from kafkagroup.errors import InvalidGroupError
from kafkagroup.java_order import java_string_key

# A topic's metadata: a partition count, or one list of replica racks per partition.
TopicSpec = int | Sequence[Sequence[str | None] | None]


@dataclass(frozen=True)
class Member:
    """One member's subscription as the assignors see it."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...] = ()
    generation: int = -1
    rack: str | None = None
    instance_id: str | None = None


def _field(spec: Any, *names: str, default: Any = None) -> Any:
    """First present field among `names` of a dict or an object (kafkagroup or Kafka spellings)."""
    if type(spec) is dict:  # the usual case; the Mapping ABC check below costs ~1 us a call
        for name in names:
            value = spec.get(name)
            if value is not None:
                return value
        return default
    for name in names:
        if isinstance(spec, Mapping):
            if name in spec and spec[name] is not None:
                return spec[name]
        elif getattr(spec, name, None) is not None:
            return getattr(spec, name)
    return default


def normalize_member(member_id: str, spec: Any, *, check_elements: bool = True) -> Member:
    """A :class:`Member` from a dict (scenario format), a Subscription-like object, or a topic list.

    ``check_elements=False`` leaves the per-topic and per-claim checks to the caller (build_group checks
    each distinct topic list once and every claim in bulk, with the same messages); ``owned`` is then the
    caller's sequence as given.
    """
    if not isinstance(member_id, str) or member_id == "":
        raise InvalidGroupError(f"member id must be a non-empty string, got {member_id!r}")
    if isinstance(spec, Member):
        return spec if spec.member_id == member_id else Member(member_id, spec.topics, spec.owned,
                                                              spec.generation, spec.rack, spec.instance_id)
    if isinstance(spec, (list, tuple)):
        spec = {"topics": spec}
    topics = _field(spec, "topics", default=())
    if isinstance(topics, str):
        raise InvalidGroupError(f"member {member_id!r}: topics must be a list of names, got a string")
    owned_raw = _field(spec, "owned", "owned_partitions", default=())
    if check_elements:
        owned: tuple[Any, ...] = tuple(check_claim(member_id, claim) for claim in owned_raw)
    else:
        owned = owned_raw if isinstance(owned_raw, (list, tuple)) else tuple(owned_raw)
    generation = _field(spec, "generation", "generation_id", default=-1)
    if isinstance(generation, bool) or not isinstance(generation, (int, np.integer)) or not -2**31 <= generation < 2**31:
        raise InvalidGroupError(f"member {member_id!r}: generation must be a 32-bit integer, got {generation!r}")
    rack = _field(spec, "rack", "rack_id", "client.rack", "client_rack")
    instance = _field(spec, "instance", "instance_id", "group_instance_id", "group.instance.id")
    for label, value in (("rack", rack), ("group.instance.id", instance)):
        if value is not None and not isinstance(value, str):
            raise InvalidGroupError(f"member {member_id!r}: {label} must be a string, got {value!r}")
    topics = tuple(topics)
    if check_elements:
        check_topics(member_id, topics)
    return Member(member_id, topics, owned, int(generation), rack or None, instance or None)


def check_topics(member_id: str, topics: tuple[Any, ...]) -> None:
    """A member's topic list: names (strings), none listed twice."""
    for topic in topics:
        if not isinstance(topic, str):
            raise InvalidGroupError(f"member {member_id!r}: topic names must be strings, got {topic!r}")
    if len(set(topics)) != len(topics):
        raise InvalidGroupError(f"member {member_id!r} lists a topic twice: {list(topics)}")


def check_claim(member_id: str, claim: Any) -> tuple[str, int]:
    """One owned claim as (topic, partition), or an error naming the member and the claim."""
    try:
        topic, partition = claim
    except (TypeError, ValueError):
        raise InvalidGroupError(f"member {member_id!r}: owned partition {claim!r} is not (topic, partition)") from None
    if not isinstance(topic, str) or isinstance(partition, bool) or not isinstance(partition, (int, np.integer)):
        raise InvalidGroupError(f"member {member_id!r}: owned partition {claim!r} is not (topic, partition)")
    return topic, int(partition)


@dataclass
class CompactGroup:
    """The compact problem plus the name tables that map its ids back to names.

    ``arrays()`` gives the keyword arguments of :func:`kafkagroup.assign_arrays`.
    """

    topics: list[str]                      # topic id -> name (Java order)
    members: list[str]                     # member id -> member id string (MemberInfo order)
    racks: list[str | None]                # rack id -> name; racks[0] is None ("no rack")
    partition_count: np.ndarray            # int32[T]
    topic_base: np.ndarray                 # int64[T+1]
    sub_offsets: np.ndarray                # int64[M+1]
    sub_topics: np.ndarray                 # int32[]
    owned_offsets: np.ndarray | None = None
    owned_partitions: np.ndarray | None = None
    generation: np.ndarray | None = None
    member_rack: np.ndarray | None = None
    replica_offsets: np.ndarray | None = None
    replica_racks: np.ndarray | None = None
    unknown_topics: list[str] = field(default_factory=list)   # subscribed, missing from the metadata
    dropped_claims: int = 0                # owned claims dropped (strict=False)

    def arrays(self) -> dict[str, np.ndarray | None]:
        return {
            "partition_count": self.partition_count,
            "sub_offsets": self.sub_offsets,
            "sub_topics": self.sub_topics,
            "owned_offsets": self.owned_offsets,
            "owned_partitions": self.owned_partitions,
            "generation": self.generation,
            "member_rack": self.member_rack,
            "replica_offsets": self.replica_offsets,
            "replica_racks": self.replica_racks,
        }

    def partition_names(self, global_ids: np.ndarray) -> tuple[list[str], list[int]]:
        """(topic names, partition numbers) of global partition ids, vectorised."""
        topic_idx = np.searchsorted(self.topic_base, global_ids, side="right") - 1
        partitions = np.asarray(global_ids, dtype=np.int64) - self.topic_base[topic_idx]
        names = self.topics
        return [names[t] for t in topic_idx.tolist()], partitions.tolist()


def _offsets(lengths: Iterable[int], count: int) -> np.ndarray:
    out = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=count), out=out[1:])
    return out


def topic_specs(partitions_per_topic: Mapping[str, TopicSpec],
                 partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None
                 ) -> dict[str, tuple[int, Sequence[Sequence[str | None] | None] | None]]:
    specs: dict[str, tuple[int, Any]] = {}
    for topic, spec in partitions_per_topic.items():
        if not isinstance(topic, str):
            raise InvalidGroupError(f"topic names must be strings, got {topic!r}")
        if isinstance(spec, bool):
            raise InvalidGroupError(f"topic {topic!r}: partition count must be an integer, got {spec!r}")
        if isinstance(spec, (int, np.integer)):
            if spec < 0:
                raise InvalidGroupError(f"topic {topic!r}: negative partition count {spec}")
            if spec >= 2**31:
                raise InvalidGroupError(f"topic {topic!r}: partition count {spec} exceeds 2^31-1")
            specs[topic] = (int(spec), None)
        elif isinstance(spec, Sequence) and not isinstance(spec, (str, bytes)):
            _check_replica_lists(topic, spec)
            specs[topic] = (len(spec), spec)
        else:
            raise InvalidGroupError(f"topic {topic!r}: expected a partition count or a list of replica racks, got {spec!r}")
    for topic, racks in (partition_racks or {}).items():
        if topic not in specs:
            raise InvalidGroupError(f"partition_racks names topic {topic!r}, which is not in the metadata")
        count = specs[topic][0]
        if len(racks) != count:
            raise InvalidGroupError(f"topic {topic!r}: {len(racks)} replica rack lists for {count} partitions")
        _check_replica_lists(topic, racks)
        specs[topic] = (count, racks)
    return specs


def _check_replica_lists(topic: str, racks: Sequence[Any]) -> None:
    """Each partition's replica racks: None or a list (a bare string would read as one rack per character)."""
    for p, replicas in enumerate(racks):
        if replicas is not None and (isinstance(replicas, (str, bytes)) or not isinstance(replicas, Sequence)):
            raise InvalidGroupError(f"topic {topic!r} partition {p}: replica racks must be a list of rack "
                                    f"names or None, got {replicas!r}")


def build_group(partitions_per_topic: Mapping[str, TopicSpec],
                subscriptions: Mapping[str, Any] | Iterable[Member],
                *,
                partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None = None,
                strict: bool = True) -> CompactGroup:
    """Intern a group into a :class:`CompactGroup` (see the module docstring for the rules).

    >>> g = build_group({"t0": 3}, {"C1": {"topics": ["t0"]}, "C0": {"topics": ["t0"]}})
    >>> g.members, g.topics, g.partition_count.tolist()
    (['C0', 'C1'], ['t0'], [3])
    """
    specs = topic_specs(partitions_per_topic, partition_racks)
    if isinstance(subscriptions, Mapping):
        members = [normalize_member(mid, spec, check_elements=False) for mid, spec in subscriptions.items()]
    else:
        members = list(subscriptions)
        if not all(isinstance(m, Member) for m in members):
            raise InvalidGroupError("subscriptions must be a mapping member_id -> subscription, or Members")
        seen: set[str] = set()
        for m in members:
            if m.member_id in seen:
                raise InvalidGroupError(f"duplicate member id {m.member_id!r}")
            seen.add(m.member_id)
    instances: dict[str, str] = {}
    for m in members:
        if m.instance_id is not None:
            if m.instance_id in instances:
                raise InvalidGroupError(f"members {instances[m.instance_id]!r} and {m.member_id!r} share "
                                        f"group.instance.id {m.instance_id!r}")
            instances[m.instance_id] = m.member_id
    # MemberInfo order: static members by instance id, then dynamic members by member id.
    members.sort(key=lambda m: (0, java_string_key(m.instance_id)) if m.instance_id is not None
                 else (1, java_string_key(m.member_id)))

    # Members of one group mostly send the same topic list: check and intern each distinct list once.
    distinct: set[tuple[str, ...]] = set()
    for m in members:
        if m.topics not in distinct:
            check_topics(m.member_id, m.topics)
            distinct.add(m.topics)
    # Topics: those in the metadata that at least one member subscribes to, in Java order.
    subscribed = set(chain.from_iterable(distinct))
    unknown = sorted((t for t in subscribed if t not in specs), key=java_string_key)
    topics = sorted((t for t in subscribed if t in specs), key=java_string_key)
    topic_id = {t: i for i, t in enumerate(topics)}
    partition_count = np.fromiter((specs[t][0] for t in topics), dtype=np.int32, count=len(topics))
    topic_base = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(partition_count, out=topic_base[1:])
    if topic_base[-1] > MAX_PARTITIONS:  # refused before anything is sized by the total
        t = int(np.searchsorted(topic_base, MAX_PARTITIONS, side="right")) - 1
        raise InvalidGroupError(f"topic {topics[t]!r}: {int(partition_count[t])} partitions bring the total to "
                                f"{int(topic_base[t + 1])}, over the engine's limit of {MAX_PARTITIONS} (2^28) "
                                "partitions")

    # A subscribed topic missing from the metadata is skipped.
    interned = {key: np.fromiter((topic_id[t] for t in key if t in topic_id), dtype=np.int32) for key in distinct}
    ids = [interned[m.topics] for m in members]
    sub_offsets = _offsets(map(len, ids), len(members))
    sub_topics = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32)

    group = CompactGroup(topics=topics, members=[m.member_id for m in members], racks=[None],
                         partition_count=partition_count, topic_base=topic_base,
                         sub_offsets=sub_offsets, sub_topics=sub_topics, unknown_topics=unknown)
    _add_owned(group, members, specs, topic_id, strict)
    if any(m.generation != -1 for m in members):
        group.generation = np.fromiter((m.generation for m in members), dtype=np.int32, count=len(members))
    add_racks(group, members, specs)
    return group


def _add_owned(group: CompactGroup, members: list[Member], specs: Mapping[str, tuple[int, Any]],
               topic_id: Mapping[str, int], strict: bool) -> None:
    """Owned claims to global partition ids, in bulk (kafkagroup._claims reads the pairs; the rules are here).

    A claim on a topic missing from the metadata, or past its partition count, is an error (``strict``) or
    dropped and counted; a claim on a metadata topic nobody subscribes to any more is dropped (Kafka).
    """
    if not any(m.owned for m in members):
        return
    from kafkagroup._claims import intern_claims

    # Slots: every metadata topic, subscribed ones first (slot = topic id), then the others.
    slot = dict(topic_id)
    others = [t for t in specs if t not in topic_id]
    slot.update((t, len(topic_id) + i) for i, t in enumerate(others))
    slot_count = np.fromiter(chain((specs[t][0] for t in group.topics), (specs[t][0] for t in others)),
                             dtype=np.int64, count=len(slot))
    owned = [m.owned for m in members]
    offsets, slots, partitions, bad = intern_claims(owned, slot)
    if bad >= 0:  # not a (str, int) pair: word the error from the claim itself
        m, k = _member_at(owned, bad)
        check_claim(members[m].member_id, _claim_at(owned[m], k))
        raise AssertionError("kafkagroup._claims refused a claim that check_claim accepts")  # pragma: no cover
    in_metadata = slots >= 0
    count = np.zeros(len(slots), dtype=np.int64)
    count[in_metadata] = slot_count[slots[in_metadata]]
    valid = in_metadata & (partitions >= 0) & (partitions < count)
    if strict and not valid.all():
        i = int(np.argmin(valid))
        m = int(np.searchsorted(offsets, i, side="right")) - 1
        topic, partition = _claim_at(owned[m], i - int(offsets[m]))
        spec = specs.get(topic)
        what = "an unknown topic" if spec is None else f"a topic with {spec[0]} partitions"
        raise InvalidGroupError(f"member {members[m].member_id!r} claims partition {topic}-{partition} of {what}")
    keep = valid & (slots < len(topic_id))
    kept_global = (group.topic_base[slots[keep]] + partitions[keep]).astype(np.int32)
    member_of_claim = np.repeat(np.arange(len(members)), np.diff(offsets))
    group.owned_offsets = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(np.bincount(member_of_claim[keep], minlength=len(members)), out=group.owned_offsets[1:])
    group.owned_partitions = kept_global
    group.dropped_claims = int(len(keep) - np.count_nonzero(keep))


def _member_at(owned: list[Sequence[Any]], flat_index: int) -> tuple[int, int]:
    """(member, index among its claims) of a flattened claim index; used only to word an error."""
    seen = 0
    for m, claims in enumerate(owned):
        if flat_index < seen + len(claims):
            return m, flat_index - seen
        seen += len(claims)
    raise IndexError(flat_index)


def _claim_at(claims: Sequence[Any], k: int) -> Any:
    return claims[k] if isinstance(claims, Sequence) else list(claims)[k]


def add_racks(group: CompactGroup, members: list[Member], specs: Mapping[str, tuple[int, Any]]) -> None:
    has_member_racks = any(m.rack for m in members)
    has_replica_racks = any(specs[t][1] is not None for t in group.topics)
    if not (has_member_racks or has_replica_racks):
        return
    rack_id: dict[str, int] = {}

    def intern(rack: str) -> int:
        if rack not in rack_id:
            rack_id[rack] = len(rack_id) + 1
            group.racks.append(rack)
        return rack_id[rack]

    if has_member_racks:
        group.member_rack = np.fromiter((intern(m.rack) if m.rack else 0 for m in members),
                                        dtype=np.int32, count=len(members))
    if has_replica_racks:
        lengths: list[int] = []
        flat: list[int] = []
        for t in group.topics:
            count, racks = specs[t]
            if racks is None:
                lengths.extend([0] * count)
                continue
            for p, replicas in enumerate(racks):
                replicas = [r for r in (replicas or ()) if r is not None]
                for r in replicas:
                    if not isinstance(r, str):
                        raise InvalidGroupError(f"topic {t!r} partition {p}: rack names must be strings, got {r!r}")
                lengths.append(len(replicas))
                flat.extend(intern(r) for r in replicas)
        group.replica_offsets = _offsets(lengths, len(lengths))
        group.replica_racks = np.asarray(flat, dtype=np.int32)
