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

Errors come in this order: member ids (empty, repeated, a shared group.instance.id), then malformed
bytes -- :class:`~kafkagroup.errors.ProtocolError` naming the member, the field and the byte offset, the
first in MemberInfo order --, then the group's rules (a topic listed twice, the 2^28 partition bound,
strict claims). Both codecs -- the Cython ``kafkagroup._codec`` and the pure-Python twin in this module --
give identical results and identical error messages (the tests compare them).

One statement of the rules: the native path parses with the Cython codec and leaves every rule to the
native group builder (csrc/kafkagroup/group_builder.hpp, ``kafkagroup._core.build_groups``, the builder
behind :func:`kafkagroup.build_group` and the Spark / fleet batches). The parser reads every member's
topics; the builder takes the ids and those names (MemberInfo order and the id errors, the group's
topics in Java order, its subscription arrays, a topic listed twice, the partition bound) and lays the
topics out; the parser reads the rest of every member (in JoinGroup order, laid out in MemberInfo
order) and writes each claim on a partition of the group's topics straight into that layout; only when a claim was left over (a stale or
invalid one), or there are racks, does the builder run again, to drop or refuse those claims and to
number the racks. Errors are worded by :func:`kafkagroup.model.build_error_text`, as build_group words
them. The pure-Python twin
(:func:`reference_build_group`) states the rules again, as the test oracle.

Speed and memory: the Cython decoders are pooled here (at most two, one per concurrent caller) and keep
their working buffers between calls, as a group leader decodes every rebalance; an idle decoder holds
about 4 bytes per subscribed topic entry plus 4 per owned partition of the largest recent group (a buffer
over four times what the last call needed is freed). At 2,000 members x 500 topics with 1M owned
partitions (one per topic and member), decoding reads ~32 MB of metadata in about 8-10 ms and encoding
writes ~21 MB in about 7-9 ms of CPU on the shared 2-core VM; in instructions, 26 M for the claims and
46 M for the encoding of a range or round-robin rebalance, 18 M for the encoding of a sticky one, whose
assignments come in runs (benches/bench_protocol.py).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from kafkagroup.errors import InvalidGroupError, InvariantError
from kafkagroup.engine import MAX_PARTITIONS, as_index_array
from kafkagroup.model import (E_DUPLICATE_MEMBER, E_MEMBER_ID, E_SHARED_INSTANCE, E_TOPIC_TWICE, CompactGroup, Member, TopicSpec,
                              _offsets, build_error_text, check_claim, java_string_key, normalize_member,
                              topic_catalog, topic_specs)
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


def _checked_members(members: Sequence[JoinedMember]) -> list[JoinedMember]:
    """The JoinGroup members' Python types (the group rules on their values are the builder's); an empty
    group.instance.id reads as None (a dynamic member), as Kafka reads it."""
    out = list(members)
    if not set(map(type, out)) - {tuple} and not set(map(len, out)) - {3}:   # the common group, at C speed
        ids, instances, blobs = zip(*out) if out else ((), (), ())
        if (not set(map(type, ids)) - {str} and not set(map(type, blobs)) - {bytes}
                and not set(map(type, instances)) - {str, type(None)} and "" not in instances):
            return out
    for k, entry in enumerate(out):
        if not isinstance(entry, tuple) or len(entry) != 3:
            raise InvalidGroupError(f"expected (member_id, group_instance_id, metadata) tuples, got {entry!r}")
        member_id, instance_id, metadata = entry
        if not isinstance(member_id, str):
            raise InvalidGroupError(f"member id must be a non-empty string, got {member_id!r}")
        if instance_id is not None and not isinstance(instance_id, str):
            raise InvalidGroupError(f"member {member_id!r}: group.instance.id must be a string, got {instance_id!r}")
        if not isinstance(metadata, bytes):
            raise TypeError(f"member {member_id!r}: metadata must be bytes, got {type(metadata).__name__}")
        if instance_id == "":
            out[k] = (member_id, None, metadata)
    return out


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
    if codec not in ("auto", "native", "python"):
        raise ValueError(f"codec must be 'auto', 'native' or 'python', got {codec!r}")
    specs = topic_specs(partitions_per_topic, partition_racks)
    entries = _checked_members(members)
    rule = member_data_rule(assignor)
    if codec == "python" or (codec == "auto" and _codec is None):
        return _decode_group_python(entries, rule, strict, partitions_per_topic, partition_racks)
    if _codec is None:
        raise ImportError("kafkagroup._codec is not built (run `make build`)")
    return _decode_group_native(entries, specs, rule, strict)


_NO_NAMES = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8), None, np.zeros(0, dtype=np.int32))


class _LeaderNames:
    """build_error_text's view of a JoinGroup (model.BuildErrorNames): members by the builder's row
    (JoinGroup order, or the order _rows_in sets), topic names by code, the claims left to the builder."""

    def __init__(self, ids: list[str], instances: list[str | None], specs: Mapping[str, tuple[int, Any]]) -> None:
        self.ids, self.instances, self.rows = ids, instances, list(specs.items())
        self.names: list[str] = []
        self.sub_offsets = self.sub_codes = self.others = None

    def member(self, i: int) -> Any:
        return self.ids[i]

    def instance(self, i: int) -> Any:
        return self.instances[i]

    def topics(self, i: int) -> Any:
        return [self.names[c] for c in self.sub_codes[self.sub_offsets[i]:self.sub_offsets[i + 1]].tolist()]

    def claim(self, e: int) -> tuple[Any, Any]:
        _, code, partition = self.others
        return self.names[int(code[e])], int(partition[e])

    def topic(self, row: int) -> Any:
        return self.rows[row][0]

    def count(self, row: int) -> int:
        return self.rows[row][1][0]

    def generation(self, i: int) -> Any:   # pragma: no cover - wire generations are int32
        return None


def _decode_group_native(entries: list[JoinedMember], specs: Mapping[str, tuple[int, Any]], rule: MemberDataRule,
                         strict: bool) -> CompactGroup:
    from kafkagroup.batch import USES_MEMBER_RACK, USES_REPLICA_RACKS

    catalog, rack_code = _catalog(specs)
    m = len(entries)
    ids = [e[0] for e in entries]
    instances = [e[1] for e in entries]
    names = _LeaderNames(ids, instances, specs)
    id_strings = _codec.utf8_strings(ids)
    instance_strings = _codec.utf8_strings(instances) if instances.count(None) != m else None
    decoder = _take_decoder()
    try:
        # 1. version, topics, user data of every member (JoinGroup order), then the builder: ids (MemberInfo
        #    order and its errors, which come before the bytes' own), the group's topics and subscriptions
        head = decoder.parse_topics(ids, [e[2] for e in entries], int(rule), strict)
        names.names, names.sub_offsets, names.sub_codes = head["names"], head["sub_offsets"], head["sub_codes"]
        if not head["complete"]:
            decoder.release()   # a malformed member: find the first in MemberInfo order, after the id errors
            return _first_malformed(decoder, catalog, entries, id_strings, instance_strings, names, rule, strict)
        plan = _core().build_groups(catalog, np.array([0, m], dtype=np.int64), id_strings, instance_strings,
                                    head["sub_offsets"], None, (*head["dictionary"], None, head["sub_codes"]),
                                    None, None, None, None, None, None, strict, head["sub_same"])
        refusal = _refusal(plan, names)
        if refusal is not None and refusal[0] in _ID_ERRORS:
            raise InvalidGroupError(refusal[1])
        order = plan["member_perm"]
        codes = head["sub_codes"][plan["topic_entries"]]
        # 2. the rest of every member (read in JoinGroup order, laid out in MemberInfo order), claims placed
        #    with the builder's layout
        tail = decoder.parse_claims(None if refusal else plan["partition_count"], None if refusal else codes, order)
        if refusal is not None and refusal[0] == E_TOPIC_TWICE:
            # the builder names the first such member in its row order; the leader's rows are in JoinGroup
            # order, its errors in MemberInfo order: ask again with the rows in that order (an error path)
            refusal = _refusal(_core().build_groups(
                catalog, np.array([0, m], dtype=np.int64), _codec.utf8_strings([ids[i] for i in order.tolist()]),
                None if instance_strings is None else _codec.utf8_strings([instances[i] for i in order.tolist()]),
                *_rows_in(order, names), strict), names)
        if refusal is not None:
            raise InvalidGroupError(refusal[1])
        topics = [head["names"][c] for c in codes.tolist()]
        group = CompactGroup(
            topics=topics, members=[ids[i] for i in order.tolist()], racks=[None],
            partition_count=plan["partition_count"], topic_base=_offsets(plan["partition_count"].tolist(), len(topics)),
            sub_offsets=plan["sub_offsets"], sub_topics=plan["sub_topics"],
            owned_offsets=tail["owned_offsets"], owned_partitions=tail["owned_partitions"],
            generation=tail["generation"], dropped_claims=0,
            unknown_topics=[head["names"][c] for c in head["sub_codes"][plan["unknown_entries"]].tolist()])

        # 3. claims the layout did not place, and racks: the builder again, only when there are any
        others = tail["others"]
        replica = any(specs[t][1] is not None for t in topics)
        if others is None and tail["member_rack"] is None and not replica:
            return group
        dictionary = tail["dictionary"] if others is not None else head["dictionary"]
        member_rack = owned_offsets = owned_names = owned_partition = None
        if tail["member_rack"] is not None:   # MemberInfo order -> rows; rack names -> the catalog's codes
            remap = np.array([rack_code.setdefault(r, len(rack_code)) for r in tail["rack_names"]] + [-1], dtype=np.int32)
            member_rack = np.empty(m, dtype=np.int32)
            member_rack[order] = remap[tail["member_rack"]]
        if others is not None:   # by member row, each member's in wire order
            by_row = np.argsort(others[0], kind="stable")
            names.names = tail["names"]
            names.others = tuple(x[by_row] for x in others)
            owned_offsets = _offsets(np.bincount(others[0], minlength=m).tolist(), m)
            owned_names, owned_partition = (*dictionary, None, names.others[1]), names.others[2]
        final = _core().build_groups(
            catalog, np.array([0, m], dtype=np.int64), id_strings, instance_strings,
            head["sub_offsets"] if replica else np.zeros(m + 1, dtype=np.int64), None,
            (*dictionary, None, head["sub_codes"]) if replica else _NO_NAMES,
            owned_offsets, owned_names, owned_partition, None, None, member_rack, strict)
        refusal = _refusal(final, names)
        if refusal is not None:
            raise InvalidGroupError(refusal[1])
        if final["owned_partitions"].size:
            raise InvariantError("the group builder kept a claim outside its own layout")
        group.dropped_claims = int(final["dropped_claims"][0])
        rack_names = list(rack_code)
        group.racks += [rack_names[c] for c in final["rack_codes"].tolist()]
        inputs = int(final["group_inputs"][0])
        if inputs & USES_MEMBER_RACK:
            group.member_rack = final["member_rack"]
        if inputs & USES_REPLICA_RACKS:
            group.replica_offsets, group.replica_racks = final["replica_offsets"], final["replica_racks"]
        return group
    finally:
        decoder.release()
        _give_back(decoder)


_ID_ERRORS = (E_MEMBER_ID, E_SHARED_INSTANCE, E_DUPLICATE_MEMBER)


def _refusal(built: dict, names: _LeaderNames) -> tuple[int, str] | None:
    """The builder's first error as (code, message), worded as build_group words it, or None."""
    if not built["errors"]:
        return None
    _, code, a, b, c = built["errors"][0]
    return code, build_error_text(code, a, b, c, names)


def _rows_in(order: np.ndarray, names: _LeaderNames) -> tuple:
    """build_groups' subscription arguments (sub_offsets .. member_rack) with the members' rows in ``order``;
    ``names`` is switched to name rows in that order."""
    lengths = np.diff(names.sub_offsets)[order]
    offsets = _offsets(lengths.tolist(), len(lengths))
    starts = names.sub_offsets[:-1][order]
    codes = (np.concatenate([names.sub_codes[a:a + n] for a, n in zip(starts.tolist(), lengths.tolist())])
             if len(lengths) else names.sub_codes[:0]).astype(np.int32)
    names.ids = [names.ids[i] for i in order.tolist()]
    names.instances = [names.instances[i] for i in order.tolist()]
    names.sub_offsets, names.sub_codes = offsets, codes
    return offsets, None, (*_dictionary(names.names), None, codes), None, None, None, None, None, None


def _dictionary(strings: list[str]) -> tuple:
    return _codec.utf8_strings(strings)[:2]


def _first_malformed(decoder: Any, catalog: Any, entries: list[JoinedMember], id_strings: tuple,
                     instance_strings: tuple | None, names: _LeaderNames, rule: MemberDataRule, strict: bool) -> Any:
    """A member's bytes are malformed: raise the id errors, else the first malformed member in MemberInfo
    order (the members are parsed again in that order; an error path)."""
    m = len(entries)
    ids_only = _core().build_groups(catalog, np.array([0, m], dtype=np.int64), id_strings, instance_strings,
                                    np.zeros(m + 1, dtype=np.int64), None, _NO_NAMES, None, None, None, None, None,
                                    None, strict)
    refusal = _refusal(ids_only, names)
    if refusal is not None:
        raise InvalidGroupError(refusal[1])
    ordered = [entries[i] for i in ids_only["member_perm"].tolist()]
    decoder.parse_topics([e[0] for e in ordered], [e[2] for e in ordered], int(rule), strict)
    decoder.parse_claims(None, None)   # raises
    raise InvariantError("a member's bytes failed to parse once but not twice")  # pragma: no cover


def _core() -> Any:
    from kafkagroup import _core
    return _core


# The catalog of the last metadata seen (a leader sees the same topics rebalance after rebalance): a
# TopicCatalog is immutable once built, so concurrent callers may share it; the pair is replaced whole.
_last_catalog: tuple = ((), None)


def _catalog(specs: Mapping[str, tuple[int, Any]]) -> tuple[Any, dict[str, int]]:
    global _last_catalog
    if any(racks is not None for _, racks in specs.values()):
        return topic_catalog(specs)   # replica racks: not compared, built each time
    key = tuple((t, c) for t, (c, _) in specs.items())
    last_key, catalog = _last_catalog
    if catalog is None or key != last_key:
        catalog = topic_catalog(specs)[0]
        _last_catalog = (key, catalog)
    return catalog, {}


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


def _decode_group_python(entries: list[JoinedMember], rule: MemberDataRule, strict: bool,
                         partitions_per_topic: Mapping[str, TopicSpec],
                         partition_racks: Mapping[str, Any] | None) -> CompactGroup:
    """The reference twin: ids checked and ordered, the object codec per member in that order, then
    :func:`reference_build_group`."""
    order = reference_member_info_order([e[0] for e in entries], [e[1] for e in entries])
    decoded: list[Member] = []
    for member_id, instance_id, metadata in (entries[i] for i in order):
        sub = decode_subscription(metadata, f"member {member_id!r} subscription")
        owned, generation = member_owned_and_generation(sub, rule, strict=strict,
                                                        what=f"member {member_id!r} StickyAssignorUserData")
        decoded.append(Member(member_id, tuple(sub.topics), tuple((t, p) for t, p in owned), generation,
                              sub.rack_id, instance_id))
    return reference_build_group(partitions_per_topic, decoded, partition_racks=partition_racks, strict=strict)


class _IdNames:
    """build_error_text's view of members given as id and instance id lists."""

    def __init__(self, ids: Sequence[str], instances: Sequence[str | None]) -> None:
        self.ids, self.instances = ids, instances

    def member(self, i: int) -> Any:
        return self.ids[i]

    def instance(self, i: int) -> Any:
        return self.instances[i]


def reference_member_info_order(ids: Sequence[str], instances: Sequence[str | None]) -> list[int]:
    """The twin of the native builder's member rules: the first empty id (input order), then MemberInfo
    order -- static members (an instance id) by instance id, then dynamic ones by member id, Java
    order -- where neighbours sharing an instance id or a member id are refused, then a member id
    repeated across static and dynamic members. Returns the input indices in MemberInfo order."""
    names = _IdNames(ids, instances)
    for i, member_id in enumerate(ids):
        if not member_id:
            raise InvalidGroupError(build_error_text(E_MEMBER_ID, i, -1, -1, names))  # type: ignore[arg-type]
    static = [bool(i) for i in instances]
    key = [(0, java_string_key(instances[i])) if static[i] else (1, java_string_key(ids[i])) for i in range(len(ids))]
    order = sorted(range(len(ids)), key=key.__getitem__)
    for a, b in zip(order, order[1:]):
        if key[a] == key[b]:
            code = E_SHARED_INSTANCE if static[a] else E_DUPLICATE_MEMBER
            raise InvalidGroupError(build_error_text(code, a, b, -1, names))  # type: ignore[arg-type]
    by_id = sorted(range(len(ids)), key=lambda i: (java_string_key(ids[i]), i))
    for a, b in zip(by_id, by_id[1:]):
        if ids[a] == ids[b]:
            raise InvalidGroupError(build_error_text(E_DUPLICATE_MEMBER, min(a, b), -1, -1, names))  # type: ignore[arg-type]
    return order


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
    # MemberInfo order and the member rules, then a topic listed twice (input order)
    ordered = [members[i] for i in reference_member_info_order([m.member_id for m in members],
                                                               [m.instance_id for m in members])]
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
    _reference_racks(group, ordered, specs)
    return group


def _reference_racks(group: CompactGroup, members: list[Member], specs: Mapping[str, tuple[int, Any]]) -> None:
    """The twin's racks: one numbering from 1 in order of first appearance, member racks (MemberInfo
    order) first, then each partition's replica racks (topic, partition, replica order)."""
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
