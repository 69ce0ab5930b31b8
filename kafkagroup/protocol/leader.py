"""The group leader's bulk codec: JoinGroup member metadata bytes -> engine arrays, ``owner[]`` -> SyncGroup
assignment bytes, with no per-partition Python object on the way.

::

    group = decode_group([("C0", None, b0), ("C1", None, b1)], {"t0": 3}, assignor="range")
    result = kafkagroup.assign_arrays("range", **group.arrays())
    sync = encode_assignments(group, result.owner)          # {"C0": bytes, "C1": bytes}

:func:`decode_group` returns the same :class:`~kafkagroup.model.CompactGroup` that
:func:`kafkagroup.build_group` builds from the decoded subscriptions -- members in Kafka's MemberInfo
order (static members by group.instance.id, then dynamic ones by member id), topics interned once and
numbered in Java ``String.compareTo`` order, owned partitions as global ids ``topic_base[t] + p``,
generation per member (-1 unknown), member racks interned (0 = none) -- and follows its rules:

- a subscribed topic missing from ``partitions_per_topic`` is skipped and listed in ``unknown_topics``;
- an owned claim on a topic nobody subscribes to is dropped and counted in ``dropped_claims``;
- an owned claim on a topic missing from the metadata, or on a partition outside ``0..count-1``, is
  dropped and counted (``strict=False``, the default: what Kafka's leader does) or raises
  :class:`~kafkagroup.errors.InvalidGroupError` naming the member and the partition (``strict=True``);
- a member listing one topic twice raises InvalidGroupError.

Where owned partitions and generation come from is the assignor's ``member_data_rule`` (Java's
``memberData``, :class:`kafkagroup.protocol.user_data.MemberDataRule`): "sticky" reads StickyAssignor user
data (unparsable user data is ignored as Java ignores it, or raises ProtocolError when ``strict``);
"cooperative-sticky" reads the subscription's owned partitions and its generation_id, falling back to
the int32 generation in the user data; every other assignor reads the subscription's fields.

Malformed bytes raise :class:`~kafkagroup.errors.ProtocolError` naming the member, the field and the
byte offset, before any semantic check; checks run members in MemberInfo order, so the error reported
is the first one in that order. Both codecs -- the Cython ``kafkagroup._codec`` and the pure-Python twin
in this module -- give identical results and identical error messages (the tests compare them).

Speed and memory: the Cython decoders are pooled here (at most two, one per concurrent caller) and keep
their working buffers between calls, as a group leader decodes every rebalance; an idle decoder holds
about 4 bytes per subscribed topic entry plus 4 per owned partition of the largest recent group (a buffer
over four times what the last call needed is freed). At 2,000 members x 500 topics with 1M owned
partitions (one per topic and member), decoding reads ~32 MB of metadata in about 8-10 ms and encoding
writes ~21 MB in about 7-9 ms of CPU on the shared 2-core VM (benches/bench_protocol.py).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, Optional

import numpy as np

from kafkagroup.errors import InvalidGroupError, InvariantError
from kafkagroup.java_order import java_sort
from kafkagroup.engine import MAX_PARTITIONS, as_index_array
from kafkagroup.model import (CompactGroup, Member, TopicSpec, add_racks, check_claim, java_string_key,
                              normalize_member, topic_specs)
from kafkagroup.protocol.consumer_protocol import MAX_VERSION, decode_subscription
from kafkagroup.protocol.user_data import MemberDataRule, member_owned_and_generation

try:  # the compiled codec; the pure-Python twin below is the fallback and the reference
    from kafkagroup import _codec
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _codec = None

#: (member_id, group_instance_id or None, metadata bytes) -- one JoinGroupResponse member.
JoinedMember = tuple[str, Optional[str], bytes]


def member_data_rule(assignor: Any) -> MemberDataRule:
    """The ``memberData`` rule of an assignor given as a registered protocol name, an assignor object
    (its ``member_data_rule``; objects without one read the Subscription's fields) or the rule itself."""
    if isinstance(assignor, MemberDataRule):
        return assignor
    if isinstance(assignor, str):
        # the assignor classes state their rule; they import this package, hence the late import
        from kafkagroup.assignors import get_assignor
        assignor = get_assignor(assignor)
    return MemberDataRule(getattr(assignor, "member_data_rule", MemberDataRule.SUBSCRIPTION))


def native_available() -> bool:
    """True when the Cython codec ``kafkagroup._codec`` is built."""
    return _codec is not None


def _member_info_order(members: Sequence[JoinedMember]) -> list[JoinedMember]:
    """Validate ids and sort into MemberInfo order (the messages match kafkagroup.model's)."""
    ordered = _dynamic_members_in_order(members)
    if ordered is not None:
        return ordered
    ordered = []
    seen: set[str] = set()
    instances: dict[str, str] = {}
    for entry in members:
        if not isinstance(entry, tuple) or len(entry) != 3:
            raise InvalidGroupError(f"expected (member_id, group_instance_id, metadata) tuples, got {entry!r}")
        member_id, instance_id, metadata = entry
        instance_id = instance_id or None
        if not isinstance(member_id, str) or member_id == "":
            raise InvalidGroupError(f"member id must be a non-empty string, got {member_id!r}")
        if member_id in seen:
            raise InvalidGroupError(f"duplicate member id {member_id!r}")
        seen.add(member_id)
        if instance_id is not None:
            if not isinstance(instance_id, str):
                raise InvalidGroupError(f"member {member_id!r}: group.instance.id must be a string, got {instance_id!r}")
            if instance_id in instances:
                raise InvalidGroupError(f"members {instances[instance_id]!r} and {member_id!r} share "
                                        f"group.instance.id {instance_id!r}")
            instances[instance_id] = member_id
        if not isinstance(metadata, bytes):
            raise TypeError(f"member {member_id!r}: metadata must be bytes, got {type(metadata).__name__}")
        ordered.append(entry if entry[1] is instance_id else (member_id, instance_id, metadata))
    static = [m for m in ordered if m[1] is not None]
    dynamic = [m for m in ordered if m[1] is None] if static else ordered
    java_sort(static, itemgetter(1))
    java_sort(dynamic, itemgetter(0))
    return static + dynamic if static else dynamic


def _dynamic_members_in_order(members: Sequence[JoinedMember]) -> list[JoinedMember] | None:
    """The common group, checked at C speed: only dynamic members (group_instance_id None), each a
    (non-empty str, None, bytes) tuple with a distinct id; in member-id order. None when anything else
    is present: _member_info_order then checks member by member and names the offender."""
    entries = list(members)
    if set(map(type, entries)) - {tuple} or set(map(len, entries)) - {3}:
        return None
    ids = list(map(itemgetter(0), entries))
    if (set(map(type, ids)) - {str} or set(map(type, map(itemgetter(2), entries))) - {bytes}
            or entries and min(map(len, ids)) == 0 or len(set(ids)) != len(ids)
            or list(map(itemgetter(1), entries)).count(None) != len(entries)):
        return None
    java_sort(entries, itemgetter(0))
    return entries


def decode_group(members: Sequence[JoinedMember], partitions_per_topic: Mapping[str, TopicSpec], *,
                 assignor: Any = "range", strict: bool = False,
                 partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None = None,
                 codec: str = "auto") -> CompactGroup:
    """Decode every member's ConsumerProtocolSubscription into the compact problem (module docstring).

    ``members`` are JoinGroupResponse members ``(member_id, group_instance_id, metadata_bytes)`` in any
    order; ``partitions_per_topic`` is the leader's cluster metadata (a partition count, or one replica
    rack list per partition, per topic); ``assignor`` says how owned partitions are read
    (:func:`member_data_rule`: a registered name, an assignor object or a MemberDataRule). ``codec`` is "auto" (Cython when built), "native" or "python".

    >>> from kafkagroup.protocol import Subscription, encode_subscription
    >>> b = encode_subscription(Subscription(["t0"]))
    >>> g = decode_group([("C1", None, b), ("C0", None, b)], {"t0": 3})
    >>> g.members, g.topics, g.sub_topics.tolist()
    (['C0', 'C1'], ['t0'], [0, 0])
    """
    specs = topic_specs(partitions_per_topic, partition_racks)
    ordered = _member_info_order(members)
    rule = member_data_rule(assignor)
    if codec == "python" or (codec == "auto" and _codec is None):
        return _decode_group_python(ordered, specs, rule, strict, partitions_per_topic, partition_racks)
    if codec not in ("auto", "native"):
        raise ValueError(f"codec must be 'auto', 'native' or 'python', got {codec!r}")
    if _codec is None:
        raise ImportError("kafkagroup._codec is not built (run `make build`)")
    counts = {topic: spec[0] for topic, spec in specs.items()}
    member_ids = [m[0] for m in ordered]
    decoder = _take_decoder()
    try:
        out = decoder.decode(member_ids, [m[2] for m in ordered], counts, int(rule), strict)
    finally:
        _give_back(decoder)
    group = CompactGroup(
        topics=out["topics"], members=[m[0] for m in ordered], racks=[None],
        partition_count=out["partition_count"], topic_base=out["topic_base"],
        sub_offsets=out["sub_offsets"], sub_topics=out["sub_topics"],
        owned_offsets=out["owned_offsets"], owned_partitions=out["owned_partitions"],
        generation=out["generation"], unknown_topics=out["unknown_topics"], dropped_claims=out["dropped_claims"],
    )
    # Racks: the codec interns member racks in member order from 1, as kafkagroup.model does; replica
    # racks (per partition, from the metadata) continue that numbering in model.add_racks.
    if any(specs[t][1] is not None for t in group.topics):
        names = out["rack_names"]
        member_rack = out["member_rack"]
        racks = [None if r == 0 else names[r - 1] for r in
                 (member_rack.tolist() if member_rack is not None else [0] * len(ordered))]
        add_racks(group, [Member(m[0], (), rack=r) for m, r in zip(ordered, racks)], specs)
    elif out["member_rack"] is not None:
        group.racks.extend(out["rack_names"])
        group.member_rack = out["member_rack"]
    return group


# Decoders keep their buffers between calls (a leader decodes every rebalance); a small pool gives each
# concurrent caller its own (list.pop / list.append are atomic under the GIL).
_DECODERS: list = []
_POOL_SIZE = 2


def _take_decoder():
    try:
        return _DECODERS.pop()
    except IndexError:
        return _codec.GroupDecoder()


def _give_back(decoder) -> None:
    if len(_DECODERS) < _POOL_SIZE:
        _DECODERS.append(decoder)


def _decode_group_python(ordered: list[JoinedMember], specs: Mapping[str, Any], rule: MemberDataRule, strict: bool,
                         partitions_per_topic: Mapping[str, TopicSpec],
                         partition_racks: Mapping[str, Any] | None) -> CompactGroup:
    """The reference twin: the object codec per member, then :func:`reference_build_group`."""
    decoded: list[Member] = []
    for member_id, instance_id, metadata in ordered:
        sub = decode_subscription(metadata, f"member {member_id!r} subscription")
        owned, generation = member_owned_and_generation(sub, rule, strict=strict,
                                                        what=f"member {member_id!r} StickyAssignorUserData")
        decoded.append(Member(member_id, tuple(sub.topics), tuple((t, p) for t, p in owned), generation,
                              sub.rack_id, instance_id))
    return reference_build_group(partitions_per_topic, decoded, partition_racks=partition_racks, strict=strict)


def reference_build_group(partitions_per_topic: Mapping[str, TopicSpec], subscriptions: Any, *,
                          partition_racks: Mapping[str, Any] | None = None, strict: bool = True) -> CompactGroup:
    """Pure-Python twin of the native group builder (csrc/kafkagroup/group_builder.hpp), kept as the test
    oracle of :func:`kafkagroup.build_group`: same rules, same arrays, same first error, written with
    dicts and sorts instead of the native single pass (tests/core/test_core_group_builder_oracle.py
    runs both on random groups and compares). Not a hot path."""
    specs = topic_specs(partitions_per_topic, partition_racks)
    if isinstance(subscriptions, Mapping):
        members = [normalize_member(mid, spec, check_elements=False) for mid, spec in subscriptions.items()]
    else:
        members = list(subscriptions)
    for m in members:   # what build_group checks before the native builder runs: types, then claim shapes
        check_types(m)
    members = [Member(m.member_id, m.topics, tuple(check_claim(m.member_id, c) for c in m.owned), m.generation,
                      m.rack, m.instance_id) for m in members]
    # MemberInfo order; then the first of: a shared instance id / repeated member id (adjacent in that
    # order), a member id repeated across static and dynamic members, a topic listed twice (input order)
    static = lambda m: m.instance_id is not None  # noqa: E731
    order = sorted(range(len(members)), key=lambda i: (0, java_string_key(members[i].instance_id)) if static(members[i])
                   else (1, java_string_key(members[i].member_id)))
    ordered = [members[i] for i in order]
    for a, b in zip(ordered, ordered[1:]):
        if static(a) == static(b) and (a.instance_id if static(a) else a.member_id) == (b.instance_id if static(b) else b.member_id):
            if static(a):
                raise InvalidGroupError(f"members {a.member_id!r} and {b.member_id!r} share group.instance.id {a.instance_id!r}")
            raise InvalidGroupError(f"duplicate member id {a.member_id!r}")
    seen: set[str] = set()
    for m in sorted(members, key=lambda m: java_string_key(m.member_id)):
        if m.member_id in seen:
            raise InvalidGroupError(f"duplicate member id {m.member_id!r}")
        seen.add(m.member_id)
    for m in members:
        if len(set(m.topics)) != len(m.topics):
            raise InvalidGroupError(f"member {m.member_id!r} lists a topic twice: {list(m.topics)}")
    subscribed = {t for m in members for t in m.topics}
    topics = sorted((t for t in subscribed if t in specs), key=java_string_key)
    unknown = sorted((t for t in subscribed if t not in specs), key=java_string_key)
    topic_id = {t: i for i, t in enumerate(topics)}
    counts = [specs[t][0] for t in topics]
    base = [0]
    for t, c in zip(topics, counts):
        base.append(base[-1] + c)
        if base[-1] > MAX_PARTITIONS >= base[-2]:
            raise InvalidGroupError(f"topic {t!r}: {c} partitions bring the total to {base[-1]}, over the engine's "
                                    f"limit of {MAX_PARTITIONS} (2^28) partitions")
    sub_lists = [[topic_id[t] for t in m.topics if t in topic_id] for m in ordered]
    owned_lists: list[list[int]] = []
    dropped = 0
    for m in ordered:
        kept = []
        for topic, partition in m.owned:
            count = specs[topic][0] if topic in specs else None
            if count is None or not 0 <= partition < count:
                if strict:
                    what = "an unknown topic" if count is None else f"a topic with {count} partitions"
                    raise InvalidGroupError(f"member {m.member_id!r} claims partition {topic}-{partition} of {what}")
                dropped += 1
            elif topic in topic_id:
                kept.append(base[topic_id[topic]] + partition)
            else:
                dropped += 1
        owned_lists.append(kept)

    def offsets(lists: list[list[int]]) -> np.ndarray:
        return np.cumsum([0] + [len(x) for x in lists]).astype(np.int64)

    def flat(lists: list[list[int]]) -> np.ndarray:
        return np.asarray([v for x in lists for v in x], dtype=np.int32)

    group = CompactGroup(topics=topics, members=[m.member_id for m in ordered], racks=[None],
                         partition_count=np.asarray(counts, dtype=np.int32), topic_base=np.asarray(base, dtype=np.int64),
                         sub_offsets=offsets(sub_lists), sub_topics=flat(sub_lists), unknown_topics=unknown,
                         dropped_claims=dropped)
    if any(m.owned for m in members):
        group.owned_offsets, group.owned_partitions = offsets(owned_lists), flat(owned_lists)
    if any(m.generation != -1 for m in members):
        group.generation = np.asarray([m.generation for m in ordered], dtype=np.int32)
    add_racks(group, ordered, specs)
    return group


def check_types(m: Member) -> None:
    for topic in m.topics:
        if not isinstance(topic, str):
            raise InvalidGroupError(f"member {m.member_id!r}: topic names must be strings, got {topic!r}")


def encode_assignments(group: CompactGroup, owner: Any, *, version: int = MAX_VERSION,
                       user_data: Optional[bytes] = None, codec: str = "auto") -> dict[str, bytes]:
    """One ConsumerProtocolAssignment per member of ``group`` from ``owner[P]`` (member index per global
    partition id, -1 = nobody): each member's partitions grouped by topic, topics in id (Java name)
    order, partitions ascending; ``user_data`` (None = null, as Java's assignors send) for everyone.

    >>> from kafkagroup.model import build_group
    >>> g = build_group({"t0": 2, "t1": 1}, {"C0": ["t0", "t1"], "C1": ["t0"]})
    >>> encode_assignments(g, [0, 1, 0], version=0)["C0"].hex()
    '000000000002000274300000000100000000000274310000000100000000ffffffff'
    """
    try:   # a checked cast: int64 or float owners must not wrap onto another member
        owner = as_index_array("owner[]", owner, np.int32)
    except InvalidGroupError as e:
        raise InvariantError(str(e)) from None
    total = int(group.topic_base[-1])
    if owner.ndim != 1 or owner.shape[0] != total:
        raise InvariantError(f"owner[] has shape {owner.shape}, the group has {total} partitions")
    if not isinstance(version, int) or version < 0:
        raise ValueError(f"ConsumerProtocolAssignment: unsupported version {version!r}")
    version = min(version, MAX_VERSION)
    if user_data is not None:
        user_data = bytes(user_data)
    names = [t.encode("utf-8") for t in group.topics]
    base = np.ascontiguousarray(group.topic_base, dtype=np.int64)
    m = len(group.members)
    if codec == "python" or (codec == "auto" and _codec is None):
        blobs = _encode_assignments_python(owner, base, names, m, version, user_data)
    elif codec in ("auto", "native"):
        if _codec is None:
            raise ImportError("kafkagroup._codec is not built (run `make build`)")
        blobs = _codec.encode_assignments(owner, base, names, m, version, user_data)
    else:
        raise ValueError(f"codec must be 'auto', 'native' or 'python', got {codec!r}")
    return dict(zip(group.members, blobs))


def _check_owner(owner: np.ndarray, members: int) -> None:
    if owner.size and (int(owner.min()) < -1 or int(owner.max()) >= members):
        bad = int(np.flatnonzero((owner < -1) | (owner >= members))[0])
        raise InvariantError(f"owner[{bad}] = {int(owner[bad])} is not a member index in [-1, {members})")


def _encode_assignments_python(owner: np.ndarray, base: np.ndarray, names: list[bytes], members: int,
                               version: int, user_data: Optional[bytes]) -> list[bytes]:
    """The reference twin (numpy grouping, ``struct`` packing per topic group)."""
    import struct

    _check_owner(owner, members)
    assigned = np.flatnonzero(owner >= 0)
    order = assigned[np.argsort(owner[assigned], kind="stable")]  # by member, then ascending partition id
    counts = np.bincount(owner[assigned], minlength=members)
    topic_of = np.searchsorted(base, order, side="right") - 1
    tail = struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    out: list[bytes] = []
    start = 0
    for member in range(members):
        stop = start + int(counts[member])
        ids, topics = order[start:stop], topic_of[start:stop]
        cuts = np.flatnonzero(np.diff(topics)) + 1
        groups = np.split(np.arange(stop - start), cuts) if stop > start else []
        parts = [struct.pack(">hi", version, len(groups))]
        for g in groups:
            t = int(topics[g[0]])
            name = names[t]
            parts.append(struct.pack(">h", len(name)) + name + struct.pack(">i", len(g)))
            parts.append((ids[g] - base[t]).astype(">i4").tobytes())
        parts.append(tail)
        out.append(b"".join(parts))
        start = stop
    return out
