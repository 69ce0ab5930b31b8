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
Every claim dropped is named in ``CompactGroup.dropped`` (member, topic, partition, why), so a caller
passing ``strict=False`` can say what it dropped.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice, repeat
from operator import is_not, itemgetter
from typing import Any, NamedTuple, Protocol

import numpy as np

# (imported once here, not inside build_group: an import statement costs ~10k instructions a call, a tenth
# of a 100-member group's whole call)
from kafkagroup import _claims, _codec, _core, _members
from kafkagroup.engine import MAX_PARTITIONS
from kafkagroup.errors import InvalidGroupError
from kafkagroup.java_order import java_sort
from kafkagroup.java_order import java_string_key  # noqa: F401  (re-exported: the module docstring's order)

# A topic's metadata: a partition count, or one list of replica racks per partition.
TopicSpec = int | Sequence[Sequence[str | None] | None]


class DroppedClaim(NamedTuple):
    """An owned claim the group builder dropped, and why: ``"unknown topic"`` (not in the metadata),
    ``"past the topic's N partitions"`` (or a negative partition), ``"topic nobody subscribes to"``.

    >>> g = build_group({"t0": 2}, {"C0": {"topics": ["t0"], "owned": [("t0", 5), ("t0", 1)]}}, strict=False)
    >>> g.dropped
    [DroppedClaim(member='C0', topic='t0', partition=5, reason="past the topic's 2 partitions")]
    """

    member: str
    topic: str
    partition: int
    reason: str


@dataclass(frozen=True)
class Member:
    """One member's subscription as the assignors see it."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...] = ()
    generation: int = -1
    rack: str | None = None
    instance_id: str | None = None


# The fields of a member spec and the names each may go by (kafkagroup's, then Kafka's spellings): the first
# name whose value is not None wins. normalize_member and build_group's one-pass reader both read these.
TOPICS_FIELD = ("topics",)
OWNED_FIELD = ("owned", "owned_partitions")
GENERATION_FIELD = ("generation", "generation_id")
RACK_FIELD = ("rack", "rack_id", "client.rack", "client_rack")
INSTANCE_FIELD = ("instance", "instance_id", "group_instance_id", "group.instance.id")
_SPEC_COLUMNS = (TOPICS_FIELD, OWNED_FIELD, GENERATION_FIELD, RACK_FIELD, INSTANCE_FIELD)
_SPEC_ALIASES = {name: (column, rank) for column, names in enumerate(_SPEC_COLUMNS) for rank, name in enumerate(names)}


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
    topics = _field(spec, *TOPICS_FIELD, default=())
    if isinstance(topics, str):
        raise InvalidGroupError(f"member {member_id!r}: topics must be a list of names, got a string")
    if not _iterable(topics):
        raise InvalidGroupError(f"member {member_id!r}: topics must be a list of names, got {topics!r}")
    owned_raw = _field(spec, *OWNED_FIELD, default=())
    if owned_raw is not None and not isinstance(owned_raw, Mapping) and not _iterable(owned_raw):
        _not_claims(member_id, owned_raw)
    if check_elements:
        owned: Any = tuple(owned_pairs(member_id, owned_raw))
    elif isinstance(owned_raw, Mapping):
        owned = owned_raw if type(owned_raw) is dict else dict(owned_raw.items())
    else:
        owned = owned_raw if isinstance(owned_raw, (list, tuple)) else tuple(owned_raw)
    generation = _field(spec, *GENERATION_FIELD, default=-1)
    if isinstance(generation, bool) or not isinstance(generation, (int, np.integer)) or not -2**31 <= generation < 2**31:
        raise InvalidGroupError(f"member {member_id!r}: generation must be a 32-bit integer, got {generation!r}")
    rack = _field(spec, *RACK_FIELD)
    instance = _field(spec, *INSTANCE_FIELD)
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


def owned_pairs(member_id: str, owned: Any) -> list[tuple[str, int]]:
    """A member's owned claims as checked (topic, partition) pairs, in order, from either form: a sequence of
    pairs, or the compact mapping topic -> partitions (Kafka's ``Map<Uuid, Set<Integer>>``: each topic in
    the mapping's order, its partitions in their iteration order); an error names the member and the claim.

    >>> owned_pairs("C0", {"t0": [2, 0], "t1": range(1)})
    [('t0', 2), ('t0', 0), ('t1', 0)]
    """
    if not isinstance(owned, Mapping):
        if not _iterable(owned):
            _not_claims(member_id, owned)
        return [check_claim(member_id, claim) for claim in owned]
    pairs = []
    for topic, partitions in owned.items():
        if not _is_collection(partitions):
            raise InvalidGroupError(f"member {member_id!r}: owned partitions of topic {topic!r} must be a collection "
                                    f"of partition numbers, got {partitions!r}")
        pairs.extend(check_claim(member_id, (topic, p)) for p in partitions)
    return pairs


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _not_claims(member_id: str, owned: Any) -> None:
    raise InvalidGroupError(f"member {member_id!r}: owned partitions must be (topic, partition) pairs or a mapping "
                            f"topic -> partitions, got {owned!r}")


def _is_collection(partitions: Any) -> bool:
    """A compact topic's partitions as _claims reads them: an iterable that is not its own iterator (read once
    to convert, again to word an error), a str or bytes, or a 0-d array."""
    if isinstance(partitions, (str, bytes)) or (isinstance(partitions, np.ndarray) and partitions.ndim == 0):
        return False
    try:
        return iter(partitions) is not partitions
    except TypeError:
        return False


def _claim_list(owned: Any) -> list[Any]:
    """A member's claims as given (sequence form) or expanded to pairs (compact form), unchecked."""
    if isinstance(owned, Mapping):
        return [(topic, p) for topic, partitions in owned.items() for p in partitions]
    return owned if isinstance(owned, Sequence) else list(owned)


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
    dropped: list[DroppedClaim] = field(default_factory=list)   # each dropped claim, in input order
    shared_topics: np.ndarray | None = None   # int32[k]: every member's row, when all rows are equal

    def __post_init__(self) -> None:
        if self.shared_topics is not None and self.sub_offsets is None:
            del self.sub_offsets, self.sub_topics   # built by __getattr__ when first read

    def __getattr__(self, name: str) -> Any:
        """``sub_offsets`` / ``sub_topics`` of a homogeneous group, built when first read (O(members x topics))."""
        shared = self.__dict__.get("shared_topics")
        if name not in ("sub_offsets", "sub_topics") or shared is None:
            raise AttributeError(name)
        members = len(self.members)
        self.sub_offsets = np.arange(members + 1, dtype=np.int64) * len(shared)
        self.sub_topics = np.tile(shared, members)
        return self.__dict__[name]

    def arrays(self, shared: bool = False) -> dict[str, Any]:
        """assign_arrays' keyword arguments: the CSR of every member's row, or with ``shared=True`` and a
        homogeneous group, the one row (``sub_offsets=None``, ``num_members``)."""
        if shared and self.shared_topics is not None:
            subs: dict[str, Any] = {"sub_offsets": None, "sub_topics": self.shared_topics,
                                    "num_members": len(self.members)}
        else:
            subs = {"sub_offsets": self.sub_offsets, "sub_topics": self.sub_topics}
        return {
            "partition_count": self.partition_count,
            **subs,
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
    if partition_racks is None and type(partitions_per_topic) is dict:
        # the usual metadata, str -> int counts: checked in bulk (the loop below costs ~1 us a topic)
        counts = partitions_per_topic.values()
        if (set(map(type, counts)) <= {int} and set(map(type, partitions_per_topic)) <= {str}
                and (not counts or (min(counts) >= 0 and max(counts) < 2**31))):
            return dict(zip(partitions_per_topic, zip(counts, repeat(None))))
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
                strict: bool = True, claims: bool = True) -> CompactGroup:
    """Intern a group into a :class:`CompactGroup` (see the module docstring for the rules).

    ``claims=False`` leaves the members' ``owned`` and ``generation`` unread (not interned, not checked: the
    group has no claims and nothing is dropped), for a strategy whose answer never depends on them
    (server-range without metrics, :func:`kafkagroup.assign`).

    The rules run natively (csrc/kafkagroup/group_builder.hpp, the same code the Spark / fleet batch
    builder runs, here for a batch of one group); this function checks the Python objects' types,
    lays the names out as UTF-8 strings and words the builder's errors.

    >>> g = build_group({"t0": 3}, {"C1": {"topics": ["t0"]}, "C0": {"topics": ["t0"]}})
    >>> g.members, g.topics, g.partition_count.tolist()
    (['C0', 'C1'], ['t0'], [3])
    """
    specs, code, catalog, metadata_names, addresses = _metadata(partitions_per_topic, partition_racks)
    # Topic names: one dictionary (metadata topics first, then subscribed names missing from it).
    code = code.copy()
    cols = _read_columns(subscriptions, code, addresses)
    members = len(cols.ids)
    # A group whose members all send the same list (most do) hands the builder that list once, on its first
    # member (the others' empty): what the builder derives from subscriptions -- the group's topics, the
    # unknown ones, a topic listed twice -- depends only on the distinct lists, and the row it returns is
    # every member's (CompactGroup.shared_topics).
    shared = cols.sub_offsets is None and members > 0
    member_offsets, shared_offsets = _batch_offsets(members, len(cols.sub_codes))
    if shared:
        sub_offsets = shared_offsets
    else:
        sub_offsets = cols.sub_offsets if cols.sub_offsets is not None else np.zeros(members + 1, dtype=np.int64)

    owned_offsets = owned_partition = owned_codes = None
    if cols.owned is not None and claims:
        owned = cols.owned    # normalised in place by intern_claims (None -> (), an iterator -> its tuple)
        try:
            owned_offsets, owned_codes, owned_partition, bad = _claims.intern_claims(owned, code, addresses)
        except TypeError:   # a member's claims are not iterable (tuple(5)): word it, naming the member
            for member_id, claims in zip(cols.ids, owned):
                if claims is not None:
                    owned_pairs(member_id, claims)
            raise
        if bad >= 0:  # not a (str, int) pair: word the error from the claims themselves (the first bad one)
            for member_id, claims in zip(cols.ids, owned):
                owned_pairs(member_id, claims)
            raise AssertionError("kafkagroup._claims refused a claim that owned_pairs accepts")  # pragma: no cover
        if (owned_codes < 0).any():   # claims on names nobody subscribes to and the metadata lacks
            for i in np.flatnonzero(owned_codes < 0).tolist():
                m = int(np.searchsorted(owned_offsets, i, side="right")) - 1
                topic = _claim_list(owned[m])[i - int(owned_offsets[m])][0]
                owned_codes[i] = code.setdefault(topic, len(code))
        if bad < 0 and owned_codes.size == 0:   # nobody claims anything
            owned_offsets = owned_partition = owned_codes = None

    names = list(code)   # metadata topics first: the catalog reads the first len(specs) names
    # (no name beyond the metadata's, the usual case: its layout as the metadata's cache holds it)
    dictionary = metadata_names if metadata_names is not None and len(names) == len(specs) else utf8_strings(names)
    rack_code: dict[str, int] = {}
    if catalog is None:
        catalog, rack_code = topic_catalog(specs, dictionary)
    member_rack = None
    if cols.rack is not None and any(cols.rack):
        member_rack = np.fromiter((rack_code.setdefault(r, len(rack_code)) if r else -1 for r in cols.rack),
                                  dtype=np.int32, count=members)
    generation = None
    if claims and cols.generation is not None and any(g != -1 for g in cols.generation):
        generation = np.fromiter(cols.generation, dtype=np.int64, count=members)

    instances = cols.instance
    # (lean: only what this group uses, as a tuple, see _core.build_groups; the owned codes are int32 already.
    # Every argument positional, sub_same=None and lean=True included: a keyword makes pybind11 match each of
    # the 16 parameter names, ~15k instructions a call, a tenth of a small group's build)
    (errors, inputs, dropped, rows_up, perm, rows, partition_count, topic_base, built_sub_offsets, sub_topics,
     owned_offsets_out, owned_partitions_out, generation_out, member_rack_out, replica_offsets, replica_racks,
     unknown, rack_codes) = _core.build_groups(
        catalog, member_offsets, _id_strings(cols.ids),
        utf8_strings(instances) if instances is not None and any(i is not None for i in instances) else None,
        sub_offsets, None, (*dictionary, cols.sub_codes),
        owned_offsets, None if owned_codes is None else (*dictionary, owned_codes.astype(np.int32, copy=False)),
        owned_partition, None, generation, member_rack, strict, None, True)
    if errors:
        _, err, a, b, c = errors[0]
        raise InvalidGroupError(build_error_text(err, a, b, c, _GroupNames(cols, names, specs)))

    # (a Java-ordered catalog whose every topic the group reads -- a homogeneous group -- names its first rows)
    topics = names[:rows.size] if rows_up else [names[r] for r in rows.tolist()]
    racks_by_code = list(rack_code)
    sub_names = [names[c] for c in cols.sub_codes.tolist()] if unknown else []
    ids = cols.ids if perm is None else [cols.ids[i] for i in perm.tolist()]   # (perm None: in MemberInfo order)
    return CompactGroup(
        topics=topics, members=ids,   # (ids: a list of our own either way)
        racks=[None] + [racks_by_code[c] for c in rack_codes],
        partition_count=partition_count,
        topic_base=topic_base,   # (a batch of one group, built without error: its topics' bases from 0)
        sub_offsets=None if shared else built_sub_offsets, sub_topics=None if shared else sub_topics,
        shared_topics=sub_topics if shared else None,
        owned_offsets=owned_offsets_out, owned_partitions=owned_partitions_out,
        generation=generation_out, member_rack=member_rack_out,
        replica_offsets=replica_offsets, replica_racks=replica_racks,
        unknown_topics=[sub_names[e] for e in unknown],
        dropped_claims=dropped,
        dropped=_dropped_claims(cols, owned_offsets, owned_codes, owned_partition, names, specs, rows) if dropped else [])


# The member offsets of a batch of one group and the subscription offsets of its shared form ([0, k, ..., k]),
# kept for the last (members, k) asked: the same group size call after call costs no array (np.full and
# np.array cost ~1 us each on a small group). Read-only: only the native builder reads them.
_last_offsets: tuple = (None, None, None)


def _batch_offsets(members: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    global _last_offsets
    key, member_offsets, shared_offsets = _last_offsets
    if key != (members, k):
        member_offsets = np.array([0, members], dtype=np.int64)
        shared_offsets = np.full(members + 1, k, dtype=np.int64)
        shared_offsets[0] = 0
        member_offsets.flags.writeable = shared_offsets.flags.writeable = False
        _last_offsets = ((members, k), member_offsets, shared_offsets)
    return member_offsets, shared_offsets


# The member ids of the last group built and their UTF-8 layout (utf8_strings): a coordinator or a planning
# loop assigns the same members call after call, and laying out their ids was ~250 instructions a member. The
# ids are a copy of our own (the group's list goes to the caller in CompactGroup.members), so the str objects
# stay alive and an equal address means the same string; the tuple is replaced whole.
_last_ids: tuple = ([], _codec.utf8_strings([]))


def _id_strings(ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """utf8_strings(ids), reused when `ids` holds the very str objects of the last call's, in the same order."""
    global _last_ids
    last, layout = _last_ids
    if _members.same_items(ids, last):
        return layout
    layout = utf8_strings(ids)
    _last_ids = (list(ids), layout)
    return layout


# The last plain metadata (topic -> partition count, no replica racks) build_group read, and what it derived
# from it: callers assign over the same topics call after call (a coordinator, a planning loop, a benchmark),
# and at 1,000 topics checking and cataloguing them is a third of a small group's call. Only immutable
# things are kept (the TopicCatalog is immutable once built; specs, code and the names' UTF-8 layout are
# never changed, code is copied before use); the tuple is replaced whole, so concurrent callers may share it.
_last_metadata: tuple = ((), None)


def _metadata(partitions_per_topic: Mapping[str, TopicSpec],
              partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None
              ) -> tuple[dict[str, tuple[int, Any]], dict[str, int], Any, Any, Any]:
    """(topic_specs, topic name -> row, TopicCatalog or None to build, the names' utf8_strings or None, their
    _members.address_table or None) of the metadata. Plain metadata (a dict of int counts, no racks) equal
    to the last call's, topic for topic in the same order, reuses what that call derived; anything else is
    read afresh, errors included. The specs of plain metadata are laid out in Java order of the names (the
    catalog's rows then ascend in Java order, so the native builder orders a group's topics by row number
    instead of comparing names on every call)."""
    global _last_metadata
    key = None
    if partition_racks is None and type(partitions_per_topic) is dict:
        last_key, last = _last_metadata
        # (the last call's metadata, compared by content: same_counts is plain_counts(...) == last_key without
        # making the lists, so a dict changed in place since, or another dict, is read afresh)
        if last is not None and _members.same_counts(partitions_per_topic, *last_key):
            return last
        key = _members.plain_counts(partitions_per_topic)   # (names, counts), all str and int (not bool: True == 1)
    specs = topic_specs(partitions_per_topic, partition_racks)
    if key is not None:
        ordered = list(specs)
        java_sort(ordered, key=str)
        specs = {name: specs[name] for name in ordered}
    code = dict(zip(specs, range(len(specs))))
    if key is None:
        return specs, code, None, None, None
    dictionary = utf8_strings(list(specs))
    catalog = topic_catalog(specs, dictionary)[0]
    # (the names by address: valid while the kept specs hold these very str objects, i.e. with this entry)
    addresses = _members.address_table(list(specs))
    _last_metadata = (key, (specs, code, catalog, dictionary, addresses))
    return specs, code, catalog, dictionary, addresses


def _dropped_claims(cols: _Columns, owned_offsets: np.ndarray, owned_codes: np.ndarray, owned_partition: np.ndarray,
                    names: list[str], specs: Mapping[str, tuple[int, Any]], group_rows: np.ndarray) -> list[DroppedClaim]:
    """The claims the builder dropped (group_builder.hpp's rules), found by numpy over every claim and named."""
    count_of = np.full(len(names), -1, dtype=np.int64)
    count_of[:len(specs)] = np.fromiter(map(itemgetter(0), specs.values()), dtype=np.int64, count=len(specs))
    in_group = np.zeros(len(names), dtype=bool)
    in_group[group_rows] = True       # catalog rows are the first codes, in the same order
    counts = count_of[owned_codes]
    unknown = counts < 0
    out_of_range = ~unknown & ((owned_partition < 0) | (owned_partition >= counts))
    unsubscribed = ~unknown & ~out_of_range & ~in_group[owned_codes]
    where = np.flatnonzero(unknown | out_of_range | unsubscribed)
    holders = np.searchsorted(owned_offsets, where, side="right") - 1
    notes = []
    for i, m in zip(where.tolist(), holders.tolist()):
        c = int(owned_codes[i])
        reason = ("unknown topic" if unknown[i] else
                  f"past the topic's {count_of[c]} partitions" if out_of_range[i] else "topic nobody subscribes to")
        notes.append(DroppedClaim(cols.ids[m], names[c], int(owned_partition[i]), reason))
    return notes


@dataclass
class _Columns:
    """A group's members as columns (input order), their topic lists coded against build_group's dictionary:
    ``sub_offsets`` None means every member's list is ``sub_codes`` (see _members.code_topic_lists)."""

    ids: list[str]
    topics: list[Any]
    sub_offsets: np.ndarray | None
    sub_codes: np.ndarray
    owned: list[Any] | None = None
    generation: list[int] | None = None
    rack: list[str | None] | None = None
    instance: list[str | None] | None = None


def _read_columns(subscriptions: Mapping[str, Any] | Iterable[Member], code: dict[str, int], addresses: Any = None
                  ) -> _Columns:
    """Members' fields as columns and their topic lists coded (``code`` gains the names it lacked; ``addresses``:
    the metadata's _members.address_table, or None).

    A dict of plain dict specs (ids and names strings, topic lists lists or tuples, generations ints, racks
    and instance ids strings) is read in one native pass (kafkagroup._members); anything else goes through
    :func:`normalize_member`, which words every error."""
    if type(subscriptions) is dict:
        read = _members.read_specs(subscriptions, _SPEC_ALIASES, len(_SPEC_COLUMNS))
        if read is not None:
            ids, topics, owned, generation, rack, instance = read
            if topics is None:
                topics = [()] * len(ids)
            # (a None entry -- no topics given -- is read as an empty list by code_topic_lists)
            if ((generation is None or all(type(g) is int and -2**31 <= g < 2**31 for g in generation if g is not None))
                    and all(v is None or type(v) is str for col in (rack, instance) if col is not None for v in col)):
                known = len(code)
                offsets, codes, bad = _members.code_topic_lists(topics, code, addresses)
                if bad >= 0:   # the general path words the error: forget the names this pass added
                    for name in list(islice(code, known, None)):
                        del code[name]
                else:
                    return _Columns(
                        ids, topics, offsets, codes,
                        owned=owned,   # None values: intern_claims reads them as ()
                        generation=None if generation is None else [-1 if g is None else g for g in generation],
                        rack=None if rack is None else [r or None for r in rack],
                        instance=None if instance is None else [i or None for i in instance])
    if isinstance(subscriptions, Mapping):
        members = [normalize_member(mid, spec, check_elements=False) for mid, spec in subscriptions.items()]
    else:
        members = list(subscriptions)
        if not all(isinstance(m, Member) for m in members):
            raise InvalidGroupError("subscriptions must be a mapping member_id -> subscription, or Members")
    topics = [m.topics for m in members]
    offsets, codes, bad = _members.code_topic_lists([t if type(t) in (list, tuple) else tuple(t) for t in topics], code,
                                                     addresses)
    if bad >= 0:
        check_topics(members[bad].member_id, tuple(topics[bad]))
        raise AssertionError("kafkagroup._members refused a topic list that check_topics accepts")  # pragma: no cover
    return _Columns([m.member_id for m in members], topics, offsets, codes, owned=[m.owned for m in members],
                    generation=[m.generation for m in members], rack=[m.rack for m in members],
                    instance=[m.instance_id for m in members])


def topic_catalog(specs: Mapping[str, tuple[int, Any]], names: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
                  ) -> tuple[Any, dict[str, int]]:
    """The native TopicCatalog of a group's metadata (:func:`topic_specs`; row k is the k-th topic) and
    the rack code space it starts: replica rack names coded in order of appearance. Member racks
    continue that space (``rack_code.setdefault(rack, len(rack_code))``): one code space for both.
    ``names``: the topic names already laid out by :func:`utf8_strings` (the first len(specs) of them
    are read), else they are laid out here."""

    rack_code: dict[str, int] = {}
    catalog_racks: dict[str, Any] = {}
    if any(map(is_not, map(itemgetter(1), specs.values()), repeat(None))):   # (C-level loops: ~1k topics a call)
        has_racks = np.fromiter((racks is not None for _, racks in specs.values()), dtype=np.uint8, count=len(specs))
        part_lengths = [count if racks is not None else 0 for count, racks in specs.values()]
        lengths: list[int] = []
        flat: list[int] = []
        for topic, (count, racks) in specs.items():
            for p, replicas in enumerate(racks or ()):
                kept = [r for r in (replicas or ()) if r is not None]
                for r in kept:
                    if not isinstance(r, str):
                        raise InvalidGroupError(f"topic {topic!r} partition {p}: rack names must be strings, got {r!r}")
                    flat.append(rack_code.setdefault(r, len(rack_code)))
                lengths.append(len(kept))
        catalog_racks = dict(has_racks=has_racks, part_start=_offsets(part_lengths, len(part_lengths)),
                             rack_off=_offsets(lengths, len(lengths)), rack_codes=np.asarray(flat, dtype=np.int32))
    if names is None:
        names = utf8_strings(list(specs))
    elif len(names[0]) != len(specs) + 1:
        offsets, data, valid = names
        names = (offsets[:len(specs) + 1], data, None if valid is None else valid[:len(specs)])
    catalog = _core.TopicCatalog(names,
                                 np.fromiter(map(itemgetter(0), specs.values()), dtype=np.int64, count=len(specs)),
                                 **catalog_racks)
    return catalog, rack_code


def utf8_strings(values: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Python strings (None = null) in Arrow's string layout, as the native builder reads them:
    (offsets int64[n+1], UTF-8 bytes, validity uint8[n] or None). Lone surrogates pass through (as
    Java's String allows them). Laid out natively (kafkagroup._codec, the group leader's, which reads an
    ASCII str's bytes in place); a value that is neither str nor None is a TypeError."""
    return _codec.utf8_strings(values if type(values) is list else list(values))


# BuildErrorCode of csrc/kafkagroup/group_builder.hpp
(E_MEMBER_ID, E_TOPICS_NULL, E_TOPIC_NAME_NULL, E_CLAIM_MALFORMED, E_SHARED_INSTANCE, E_DUPLICATE_MEMBER,
 E_DUPLICATE_META_TOPIC, E_TOPIC_TWICE, E_TOO_MANY_PARTITIONS, E_CLAIM_UNKNOWN_TOPIC, E_CLAIM_OUT_OF_RANGE,
 E_GENERATION) = range(1, 13)


class BuildErrorNames(Protocol):
    """What :func:`build_error_text` asks a front end about the indices in a native BuildError."""

    def member(self, i: int) -> Any: ...            # member id as sent (may be None)
    def instance(self, i: int) -> Any: ...
    def topics(self, i: int) -> Any: ...            # member i's topic list
    def claim(self, e: int) -> tuple[Any, Any]: ...  # owned entry e: (topic, partition)
    def topic(self, row: int) -> Any: ...           # metadata row: name
    def count(self, row: int) -> int: ...           # metadata row: partition count
    def generation(self, i: int) -> Any: ...


def _claim_text(code: int, a: int, b: int, c: int, n: BuildErrorNames) -> str:
    topic, partition = n.claim(b)
    what = "an unknown topic" if code == E_CLAIM_UNKNOWN_TOPIC else f"a topic with {n.count(c)} partitions"
    return f"member {n.member(a)!r} claims partition {topic}-{partition} of {what}"


# The wording of each native BuildError code: (code, a, b, c, names) -> message; a, b, c as group_builder.hpp says.
_BUILD_ERROR_TEXT: dict[int, Callable[[int, int, int, int, BuildErrorNames], str]] = {
    E_MEMBER_ID: lambda _, a, b, c, n: f"member id must be a non-empty string, got {n.member(a)!r}",
    E_TOPICS_NULL: lambda _, a, b, c, n: f"member {n.member(a)!r}: topics must be a list, got None",
    E_TOPIC_NAME_NULL: lambda _, a, b, c, n: f"member {n.member(a)!r}: topic names must be strings, got None",
    E_CLAIM_MALFORMED: lambda _, a, b, c, n:
        f"member {n.member(a)!r}: owned partition {n.claim(b)!r} is not (topic, partition)",
    E_SHARED_INSTANCE: lambda _, a, b, c, n:
        f"members {n.member(a)!r} and {n.member(b)!r} share group.instance.id {n.instance(a)!r}",
    E_DUPLICATE_MEMBER: lambda _, a, b, c, n: f"duplicate member id {n.member(a)!r}",
    E_DUPLICATE_META_TOPIC: lambda _, a, b, c, n: f"topic {n.topic(a)!r} appears twice in the topic table",
    E_TOPIC_TWICE: lambda _, a, b, c, n: f"member {n.member(a)!r} lists a topic twice: {n.topics(a)}",
    E_TOO_MANY_PARTITIONS: lambda _, a, b, c, n:
        (f"topic {n.topic(a)!r}: {n.count(a)} partitions bring the total to {b}, over the engine's "
         f"limit of {MAX_PARTITIONS} (2^28) partitions"),
    E_CLAIM_UNKNOWN_TOPIC: _claim_text,
    E_CLAIM_OUT_OF_RANGE: _claim_text,
    E_GENERATION: lambda _, a, b, c, n:
        f"member {n.member(a)!r}: generation must be a 32-bit integer, got {n.generation(a)}",
}


def build_error_text(code: int, a: int, b: int, c: int, names: BuildErrorNames) -> str:
    """The message of a native BuildError (one wording for every front end)."""
    text = _BUILD_ERROR_TEXT.get(code)
    if text is None:   # pragma: no cover - a code this module does not know
        return f"refused by the group builder (code {code})"
    return text(code, a, b, c, names)


class _GroupNames(BuildErrorNames):
    def __init__(self, cols: _Columns, names: list[str], specs: Mapping[str, tuple[int, Any]]) -> None:
        self.cols, self.names, self.specs = cols, names, specs
        self.flat_claims: list[Any] | None = None

    def member(self, i: int) -> Any:
        return self.cols.ids[i]

    def instance(self, i: int) -> Any:
        return None if self.cols.instance is None else self.cols.instance[i]

    def topics(self, i: int) -> Any:
        return list(self.cols.topics[i] or ())

    def claim(self, e: int) -> tuple[Any, Any]:
        if self.flat_claims is None:
            self.flat_claims = [c for claims in (self.cols.owned or ()) for c in _claim_list(claims)]
        topic, partition = self.flat_claims[e]
        return topic, int(partition)

    def topic(self, row: int) -> Any:
        return self.names[row]

    def count(self, row: int) -> int:
        return self.specs[self.names[row]][0]

    def generation(self, i: int) -> Any:
        return -1 if self.cols.generation is None else self.cols.generation[i]
