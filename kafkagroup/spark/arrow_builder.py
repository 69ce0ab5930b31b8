"""Many groups at once: an Arrow batch of nested group rows -> one compact problem per group.

The rules (Java-order interning, MemberInfo order, unknown topics, owned claims, generations, rack
interning order) are stated once, in C++ (csrc/kafkagroup/group_builder.hpp), and run for the whole
batch in one native call: this module hands over Arrow's own buffers (string offsets and bytes, list
offsets, validity) and words the errors the builder reports. The only Python loop is the one over
groups in :meth:`BatchProblems.arrays`, which slices ready-made arrays. tests/spark/test_spark_builder.py
checks the result against ``build_group`` array by array.

Input, one row per group (the Spark schema is in :mod:`kafkagroup.spark.schema`)::

    group_id: string
    members:  list<struct<member_id: string, topics: list<string>,
                          owned: list<struct<topic: string, partition: int32>>,
                          generation: int32, rack: string, instance_id: string>>
    topic_table (optional, per-group metadata):
              list<struct<topic: string, partitions: int32, replica_racks: list<list<string>>>>

Topic metadata shared by every group comes as a :class:`TopicMeta` instead of ``topic_table``.

Bad data never raises here: the first problem of each group is recorded in ``BatchProblems.errors``
(group index -> message naming the group, member, topic and partition), so a caller can fail the
job with that message or report the group and go on.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafkagroup.batch import USES_GENERATION, USES_MEMBER_RACK, USES_OWNED, USES_REPLICA_RACKS
from kafkagroup.model import BuildErrorNames, build_error_text, topic_specs
from kafkagroup.spark.per_object import PerObjectCache

MEMBER_FIELDS = ("member_id", "topics", "owned", "generation", "rack", "instance_id")
I32_MAX = 2**31 - 1


# ---------------------------------------------------------------------------------------------
# small vectorised helpers

def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lengths)])`` without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    out = np.ones(total, dtype=np.int64)
    keep = lengths > 0
    s, l, e = np.asarray(starts, dtype=np.int64)[keep], lengths[keep], ends[keep]
    out[0] = s[0]
    # at the first slot of each range, jump from the previous range's last value to this range's start
    out[(e - l)[1:]] = s[1:] - (s[:-1] + l[:-1] - 1)
    return np.cumsum(out)


def as_string(array: pa.Array) -> pa.Array:
    """`array` as a string array: itself when it is one (Array.cast costs ~10 us of Python even then, under the
    GIL, and the fleet loop casts a handful of columns per batch)."""
    return array if array.type == pa.string() else array.cast(pa.string())


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def flatten_lists(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(offsets int64[n+1], values) of a list array; a null list counts as empty."""
    # Arrow's own offsets, rebased to 0 (list and large_list only: a list_view's offsets are per entry, unordered)
    if array.null_count == 0 and (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)):
        offsets = np.asarray(array.offsets, dtype=np.int64)
        return offsets - offsets[0], array.flatten()
    lengths = np.asarray(pc.fill_null(pc.list_value_length(array), 0), dtype=np.int64)
    return offsets_of(lengths), array.flatten()


def struct_fields(array: pa.Array, names: Sequence[str]) -> dict[str, pa.Array | None]:
    """Children of a struct array by name (respecting slicing and struct-level nulls); None if absent."""
    if not pa.types.is_struct(array.type):
        raise TypeError(f"expected a struct array, got {array.type}")
    present = dict(zip(array.type.names, array.flatten()))
    return {name: present.get(name) for name in names}


# ---------------------------------------------------------------------------------------------
# topic metadata

@dataclass
class TopicMeta:
    """Topic metadata as arrays: ``K`` rows of (name, partition count, replica racks per partition).

    ``group`` labels each row with a group index when the metadata is per group (``None`` when one
    table is shared by every group). Replica racks are a two-level CSR: row ``k`` owns the partitions
    ``part_start[k]:part_start[k+1]`` (``count[k]`` of them when it has racks, none otherwise), and
    partition ``q`` the rack codes ``rack_codes[rack_off[q]:rack_off[q+1]]`` into ``rack_names``.
    """

    names: pa.Array                 # string[K]
    count: np.ndarray               # int64[K]
    has_racks: np.ndarray           # bool[K]
    part_start: np.ndarray          # int64[K+1]
    rack_off: np.ndarray            # int64[Pm+1]
    rack_codes: np.ndarray          # int64[]
    rack_names: pa.Array            # string[]
    group: np.ndarray | None = None  # int64[K] group index per row (per-group tables)
    row_errors: list[tuple[int, str]] = field(default_factory=list)  # (row, message) of invalid rows
    _catalog: Any = field(default=None, repr=False, compare=False)  # _core.TopicCatalog, built on first use

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_catalog"] = None   # native, not picklable: rebuilt where it is used
        return state

    def catalog(self) -> Any:
        """The native :class:`kafkagroup._core.TopicCatalog` of these rows, hashed once (O(K)) on first
        use; each batch then looks up only its own names, so a fleet's batches do not pay for the rest
        of the fleet's topics (pyarrow.compute.index_in re-hashed all K names per batch: 40 ms per
        batch at 200k names). Null names match nothing; a repeated name matches its first row."""
        if self._catalog is None:
            from kafkagroup import _core

            racks = bool(self.has_racks.any())
            self._catalog = _core.TopicCatalog(
                string_arg(self.names), np.asarray(self.count, dtype=np.int64), group=self.group,
                has_racks=self.has_racks.astype(np.uint8) if racks else None,
                part_start=self.part_start if racks else None, rack_off=self.rack_off if racks else None,
                rack_codes=self.rack_codes.astype(np.int32) if racks else None)
        return self._catalog

    @staticmethod
    def from_arrow(rows: pa.Array | pa.Table | pa.RecordBatch, group: np.ndarray | None = None) -> "TopicMeta":
        """From a struct array / table with fields ``topic``, ``partitions`` and optional ``replica_racks``.

        A row may omit ``partitions`` when it gives ``replica_racks`` (one list per partition).
        """
        if isinstance(rows, (pa.Table, pa.RecordBatch)):
            if isinstance(rows, pa.Table):
                rows = rows.combine_chunks().to_batches()[0] if rows.num_rows else pa.RecordBatch.from_pylist([], schema=rows.schema)
            rows = pa.StructArray.from_arrays(rows.columns, names=rows.schema.names)
        cols = struct_fields(rows, ("topic", "partitions", "replica_racks"))
        k = len(rows)
        names = cols["topic"] if cols["topic"] is not None else pa.nulls(k, pa.string())
        names = names.cast(pa.string())
        errors: list[tuple[int, str]] = []
        for i in np.flatnonzero(np.asarray(names.is_null())).tolist():
            errors.append((i, "topic metadata row with a null topic name"))
        racks = cols["replica_racks"]
        if racks is not None:
            part_off, part_lists = flatten_lists(racks)
            has_racks = ~np.asarray(racks.is_null(), dtype=bool)
            rack_counts = np.diff(part_off)
        else:
            part_off, part_lists = np.zeros(k + 1, dtype=np.int64), pa.array([], pa.list_(pa.string()))
            has_racks = np.zeros(k, dtype=bool)
            rack_counts = np.zeros(k, dtype=np.int64)
        given = cols["partitions"]
        given_null = np.ones(k, dtype=bool) if given is None else np.asarray(given.is_null(), dtype=bool)
        given_count = (np.full(k, -1, dtype=np.int64) if given is None
                       else np.asarray(pc.fill_null(given.cast(pa.int64()), -1), dtype=np.int64))
        count = np.where(given_null, np.where(has_racks, rack_counts, -1), given_count)
        name_list: list[Any] | None = None

        def name(i: int) -> str:
            nonlocal name_list
            if name_list is None:
                name_list = names.to_pylist()
            return repr(name_list[i])

        for i in np.flatnonzero(~given_null & (given_count < 0)).tolist():
            errors.append((i, f"topic {name(i)}: negative partition count {int(given_count[i])}"))
        for i in np.flatnonzero(given_null & ~has_racks).tolist():
            errors.append((i, f"topic {name(i)}: no partition count"))
        for i in np.flatnonzero(count > I32_MAX).tolist():
            errors.append((i, f"topic {name(i)}: partition count {int(count[i])} exceeds 2^31-1"))
        mismatch = has_racks & ~given_null & (rack_counts != count)
        for i in np.flatnonzero(mismatch).tolist():
            errors.append((i, f"topic {name(i)}: {int(rack_counts[i])} replica rack lists for {int(count[i])} partitions"))
        # per partition: its replica racks, nulls dropped (build_group ignores a None rack)
        rack_off_raw, rack_values = flatten_lists(part_lists)
        valid_rack = ~np.asarray(rack_values.is_null(), dtype=bool)
        valid_before = offsets_of(valid_rack.astype(np.int64))        # valid racks before each flat position
        rack_lengths = valid_before[rack_off_raw[1:]] - valid_before[rack_off_raw[:-1]]
        kept = rack_values.filter(pa.array(valid_rack)) if len(rack_values) else pa.array([], pa.string())
        encoded = pc.dictionary_encode(kept.cast(pa.string()))
        # rows without racks (or with a mismatched count) contribute no partitions to the rack CSR
        part_lengths = np.where(has_racks & ~mismatch, np.diff(part_off), 0)
        keep_parts = concat_ranges(part_off[:-1], part_lengths)
        lengths = rack_lengths[keep_parts]
        rack_off = offsets_of(lengths)
        rack_starts = valid_before[rack_off_raw[:-1]][keep_parts]
        rack_codes = np.asarray(encoded.indices, dtype=np.int64)[concat_ranges(rack_starts, lengths)]
        meta = TopicMeta(names=names, count=np.maximum(count, 0), has_racks=has_racks & ~mismatch,
                         part_start=offsets_of(part_lengths), rack_off=rack_off, rack_codes=rack_codes,
                         rack_names=encoded.dictionary, group=group, row_errors=errors)
        if group is None:   # one shared table: a topic named twice is the table's error
            for row in sorted(meta.catalog().repeated_rows):
                errors.append((row, f"topic {name(row)} appears twice in the topic metadata"))
        return meta

    @staticmethod
    def of_table(topics: "pa.Table | pa.RecordBatch | TopicMeta") -> "TopicMeta":
        """The metadata of a shared topic table, decoded and hashed once per table object (a TopicMeta is
        returned as it is).

        Why: a fleet's topic table can hold a million names; hashing them cost 0.5-1.9 us per group of
        the bench fleet on every call, before any thread starts. Arrow tables are immutable, so the same
        object always holds the same metadata: the result is kept while the table lives (a weak
        reference; a new or changed table is a new object and is decoded afresh), for the last
        SHARED_META_TABLES tables at most. Do not write into memory a passed table shares
        (``pa.array(numpy_array)`` wraps the numpy buffer): pass a new table instead. A caller with its
        metadata in another form can build a TopicMeta once (:meth:`from_arrow`, :meth:`from_mapping`) and pass that; a TopicMeta is a
        snapshot of the rows it was built from (build a new one when the topics change)."""
        if isinstance(topics, TopicMeta):
            return topics
        if not isinstance(topics, (pa.Table, pa.RecordBatch)):
            return TopicMeta.from_arrow(topics)   # a struct array: no identity worth keying on
        return _SHARED_META.get(topics, _hashed_meta)

    @staticmethod
    def mapping_table(partitions_per_topic: Mapping[str, Any]) -> pa.Table:
        """``{topic: count}`` or ``{topic: [[racks of p0], [racks of p1], ...]}`` (build_group's form) as
        the Arrow topic table, checked by build_group's own rules (negative counts, bools, strings...)."""
        specs = topic_specs(partitions_per_topic, None)
        counts = [None if racks is not None else count for count, racks in specs.values()]
        racks = [None if racks is None else [None if r is None else list(r) for r in racks]
                 for _, racks in specs.values()]
        return pa.table({"topic": pa.array(list(specs), pa.string()), "partitions": pa.array(counts, pa.int64()),
                         "replica_racks": pa.array(racks, pa.list_(pa.list_(pa.string())))})

    @staticmethod
    def from_mapping(partitions_per_topic: Mapping[str, Any]) -> "TopicMeta":
        return TopicMeta.from_arrow(TopicMeta.mapping_table(partitions_per_topic))


SHARED_META_TABLES = 4   # topic tables whose TopicMeta of_table keeps (each holds its hashed names)
_SHARED_META: PerObjectCache[TopicMeta] = PerObjectCache(SHARED_META_TABLES)   # per table object, weakly


def _hashed_meta(topics: pa.Table | pa.RecordBatch) -> TopicMeta:
    meta = TopicMeta.from_arrow(topics)
    meta.catalog()
    return meta


# ---------------------------------------------------------------------------------------------
# the batch of problems

@dataclass
class BatchProblems:
    """Compact problems of G groups, concatenated; :meth:`arrays` slices out one group.

    Members are in MemberInfo order inside each group (``member_perm`` maps that order to the input
    member rows); group ``g`` owns members ``member_off[g]:member_off[g+1]``, topics
    ``topic_off[g]:topic_off[g+1]`` (Java order) and batch partitions ``part_off[topic_off[g]]:...``.
    """

    group_ids: pa.Array                   # string[G]
    member_off: np.ndarray                # int64[G+1]
    member_ids: pa.Array                  # string[M], input order
    member_perm: np.ndarray               # int64[M]: sorted position -> input member row
    sub_off: np.ndarray                   # int64[M+1] sorted members
    sub_topics: np.ndarray                # int32[] group-local topic ids
    topic_off: np.ndarray                 # int64[G+1]
    topic_names: pa.Array                 # string[TU] names of the groups' topics, group by group
    topic_count: np.ndarray               # int32[TU]
    part_off: np.ndarray                  # int64[TU+1] batch partition offsets
    owned_off: np.ndarray                 # int64[M+1] sorted members
    owned_partitions: np.ndarray          # int32[] group-local global partition ids
    has_owned: np.ndarray                 # bool[G]
    generation: np.ndarray                # int32[M] sorted members
    has_generation: np.ndarray            # bool[G]
    member_rack: np.ndarray               # int32[M] sorted members, group-local rack ids
    has_member_racks: np.ndarray          # bool[G]
    replica_off: np.ndarray               # int64[P_batch+1]
    replica_racks: np.ndarray             # int32[] group-local rack ids
    has_replica_racks: np.ndarray         # bool[G]
    unknown_off: np.ndarray               # int64[G+1]
    unknown_topics: pa.Array              # string[] subscribed topics missing from the metadata
    dropped_claims: np.ndarray            # int64[G]
    errors: dict[int, str]                # group index -> first problem found
    group_inputs: np.ndarray              # uint8[G] GroupInput bits (kafkagroup.batch USES_* / SKIP_GROUP)

    @property
    def num_groups(self) -> int:
        return len(self.member_off) - 1

    def group_id(self, g: int) -> Any:
        return self.group_ids[g].as_py()

    def arrays(self, g: int) -> dict[str, np.ndarray | None]:
        """Keyword arguments of :func:`kafkagroup.assign_arrays` for group ``g`` (views, no copies of the big arrays)."""
        m0, m1 = int(self.member_off[g]), int(self.member_off[g + 1])
        t0, t1 = int(self.topic_off[g]), int(self.topic_off[g + 1])
        s0 = self.sub_off[m0]
        out: dict[str, np.ndarray | None] = {
            "partition_count": self.topic_count[t0:t1],
            "sub_offsets": self.sub_off[m0:m1 + 1] - s0,
            "sub_topics": self.sub_topics[s0:self.sub_off[m1]],
            "owned_offsets": None, "owned_partitions": None, "generation": None, "member_rack": None,
            "replica_offsets": None, "replica_racks": None,
        }
        if self.has_owned[g]:
            o0 = self.owned_off[m0]
            out["owned_offsets"] = self.owned_off[m0:m1 + 1] - o0
            out["owned_partitions"] = self.owned_partitions[o0:self.owned_off[m1]]
        if self.has_generation[g]:
            out["generation"] = self.generation[m0:m1]
        if self.has_member_racks[g]:
            out["member_rack"] = self.member_rack[m0:m1]
        if self.has_replica_racks[g]:
            p0, p1 = int(self.part_off[t0]), int(self.part_off[t1])
            r0 = self.replica_off[p0]
            out["replica_offsets"] = self.replica_off[p0:p1 + 1] - r0
            out["replica_racks"] = self.replica_racks[r0:self.replica_off[p1]]
        return out

    def member_names(self, g: int) -> list[str]:
        """Member ids of group g in MemberInfo order (the member ids of ``owner[]``)."""
        m0, m1 = int(self.member_off[g]), int(self.member_off[g + 1])
        return self.member_ids.take(pa.array(self.member_perm[m0:m1])).to_pylist()

    def topic_list(self, g: int) -> list[str]:
        return self.topic_names[int(self.topic_off[g]):int(self.topic_off[g + 1])].to_pylist()


def string_arg(strings: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(offsets int32[n+1] or int64[n+1], bytes uint8[], valid uint8[n] or None): a string array as the native
    builder reads it (csrc/kafkagroup/group_builder.hpp StringColumn), views of Arrow's own buffers (the offsets
    are not widened: a copy per name, made under the GIL, that the native side does not need)."""
    if not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        strings = strings.cast(pa.string())
    n = len(strings)
    _, offsets_buf, data_buf = strings.buffers()
    wide = pa.types.is_large_string(strings.type)
    if offsets_buf is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)[strings.offset:strings.offset + n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8)[int(offsets[0]):] if data_buf is not None else np.zeros(0, np.uint8)
    valid = (strings.is_valid().to_numpy(zero_copy_only=False).view(np.uint8) if strings.null_count else None)
    return offsets, data, valid


def names_arg(strings: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A name column for the native builder: plain strings, or a dictionary array as (dictionary, codes)."""
    if pa.types.is_dictionary(strings.type):
        codes = np.asarray(pc.fill_null(strings.indices.cast(pa.int32()), -1), dtype=np.int32)
        return (*string_arg(strings.dictionary), codes)
    return (*string_arg(strings), None)


def valid_bytes(array: pa.Array) -> np.ndarray | None:
    return array.is_valid().to_numpy(zero_copy_only=False).view(np.uint8) if array.null_count else None


@dataclass
class BatchInputs:
    """A batch's arguments of the native builder (:func:`kafkagroup._core.build_groups`, ``_core.plan_batch``),
    plus what :func:`problems_of` needs to word errors and name results."""

    args: tuple[Any, ...]          # build_groups' positional arguments, catalog to strict
    group_ids: pa.Array            # string[G]
    member_ids: pa.Array           # string[M]
    sub_names: pa.Array            # string[] flat subscription entries
    errors: dict[int, str]         # group index -> problem found before the builder (null id, bad topic_table row)
    words: tuple[Any, ...]         # _ErrorWords' arguments after group_ids and member_ids


def batch_inputs(batch: pa.RecordBatch | pa.Table, meta: TopicMeta | None = None, *, strict: bool = True) -> BatchInputs:
    """Arrow's buffers of `batch` as the native builder takes them (see :func:`build_batch`)."""
    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks()
        batch = pa.RecordBatch.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in batch.columns],
                                           schema=batch.schema)
    errors: dict[int, str] = {}
    group_ids = as_string(batch.column("group_id"))
    num_groups = batch.num_rows
    if group_ids.null_count:
        for g in np.flatnonzero(np.asarray(group_ids.is_null())).tolist():
            errors.setdefault(g, "a group row has a null group_id")

    member_off, flat_members = flatten_lists(batch.column("members"))
    num_members = int(member_off[-1])
    cols = struct_fields(flat_members, MEMBER_FIELDS)
    member_ids = as_string(cols["member_id"] if cols["member_id"] is not None else pa.nulls(num_members, pa.string()))

    def optional_string(name: str) -> pa.Array | None:
        col = cols[name]
        return None if col is None or col.null_count == len(col) else as_string(col)

    instance = optional_string("instance_id")
    rack = optional_string("rack")
    if cols["topics"] is not None:
        sub_off, sub_names = flatten_lists(cols["topics"])
        sub_names = as_string(sub_names)
        sub_valid = valid_bytes(cols["topics"])
    else:
        sub_off, sub_names, sub_valid = np.zeros(num_members + 1, dtype=np.int64), pa.array([], pa.string()), None
    owned_args: dict[str, Any] = dict(owned_offsets=None, owned_names=None, owned_partition=None, owned_partition_valid=None)
    own_names = own_part_arr = None
    if cols["owned"] is not None and len(cols["owned"].values if hasattr(cols["owned"], "values") else cols["owned"].flatten()):
        own_off, own_structs = flatten_lists(cols["owned"])
        own_cols = struct_fields(own_structs, ("topic", "partition"))
        own_names = own_cols["topic"] if own_cols["topic"] is not None else pa.nulls(len(own_structs), pa.string())
        own_part_arr = own_cols["partition"] if own_cols["partition"] is not None else pa.nulls(len(own_structs), pa.int64())
        owned_args = dict(owned_offsets=own_off, owned_names=names_arg(as_string(own_names)),
                          owned_partition=np.asarray(pc.fill_null(own_part_arr.cast(pa.int64()), -1), dtype=np.int64),
                          owned_partition_valid=valid_bytes(own_part_arr))
    generation = None
    if cols["generation"] is not None and cols["generation"].null_count < num_members:
        generation = np.asarray(pc.fill_null(cols["generation"].cast(pa.int64()), -1), dtype=np.int64)

    per_group_meta = meta is None
    if per_group_meta:
        if "topic_table" not in batch.schema.names:
            raise ValueError("no topic metadata: pass a TopicMeta or give the batch a topic_table column")
        table_off, table_rows = flatten_lists(batch.column("topic_table"))
        meta = TopicMeta.from_arrow(table_rows, group=np.repeat(np.arange(num_groups, dtype=np.int64), np.diff(table_off)))
        for row, message in meta.row_errors:
            g = int(meta.group[row])
            errors.setdefault(g, f"group {group_ids[g].as_py()!r}: {message}")
    else:
        for row, message in meta.row_errors:
            raise ValueError(f"topic metadata: {message}")
    catalog = meta.catalog()

    member_rack = None
    if rack is not None:   # one rack code space: the metadata's rack names first, then new member racks
        encoded = pc.dictionary_encode(pa.concat_arrays([meta.rack_names.cast(pa.string()),
                                                         pc.if_else(pc.equal(rack, ""), pa.scalar(None, pa.string()), rack)]))
        member_rack = np.asarray(pc.fill_null(encoded.indices, -1), dtype=np.int32)[len(meta.rack_names):]

    args = (catalog, member_off, string_arg(member_ids), None if instance is None else string_arg(instance),
            sub_off, sub_valid, names_arg(sub_names), owned_args["owned_offsets"],
            owned_args["owned_names"], owned_args["owned_partition"], owned_args["owned_partition_valid"],
            generation, member_rack, strict)
    return BatchInputs(args=args, group_ids=group_ids, member_ids=member_ids, sub_names=sub_names, errors=errors,
                       words=(instance, cols["topics"], own_names, own_part_arr, generation, meta))


def build_errors(inputs: BatchInputs, native: list[tuple[int, int, int, int, int]]) -> dict[int, str]:
    """Group index -> message of every group refused before or by the native builder (its errors `native`:
    ``(group, code, a, b, c)``, worded with the batch's own names)."""
    errors = dict(inputs.errors)
    if native:
        words = _ErrorWords(inputs.group_ids, inputs.member_ids, *inputs.words)
        for g, code, a, b, c in native:
            errors.setdefault(g, words.message(g, code, a, b, c))
    return errors


def problems_of(inputs: BatchInputs, built: dict[str, Any], topic_names: pa.Array | None = None) -> BatchProblems:
    """The BatchProblems of a batch from the native builder's arrays (``build_groups`` or ``plan_batch``), the
    builder's errors worded; `topic_names` when the caller has them already (``plan_batch`` gathers them)."""
    errors = build_errors(inputs, built["errors"])
    inputs_bits = built["group_inputs"]
    sub_names = inputs.sub_names
    if topic_names is None:
        topic_names = sub_names.take(pa.array(built["topic_entries"]))   # batch-local: not the fleet's table
    unknown = built["unknown_entries"]
    return BatchProblems(
        group_ids=inputs.group_ids, member_off=built["member_offsets"], member_ids=inputs.member_ids,
        member_perm=built["member_perm"], sub_off=built["sub_offsets"], sub_topics=built["sub_topics"],
        topic_off=built["topic_offsets"], topic_names=topic_names,
        topic_count=built["partition_count"], part_off=built["part_offsets"], owned_off=built["owned_offsets"],
        owned_partitions=built["owned_partitions"], has_owned=(inputs_bits & USES_OWNED) > 0, generation=built["generation"],
        has_generation=(inputs_bits & USES_GENERATION) > 0, member_rack=built["member_rack"],
        has_member_racks=(inputs_bits & USES_MEMBER_RACK) > 0,
        replica_off=built["replica_offsets"] if len(built["replica_offsets"]) else np.zeros(1, np.int64),
        replica_racks=built["replica_racks"], has_replica_racks=(inputs_bits & USES_REPLICA_RACKS) > 0,
        unknown_off=built["unknown_offsets"],
        unknown_topics=sub_names.take(pa.array(unknown)) if len(unknown) else pa.array([], pa.string()),
        dropped_claims=built["dropped_claims"], errors=errors, group_inputs=inputs_bits)


def build_batch(batch: pa.RecordBatch | pa.Table, meta: TopicMeta | None = None, *, strict: bool = True) -> BatchProblems:
    """Intern every group of `batch` (nested rows, see the module docstring).

    `meta` is the metadata shared by all groups; without it the batch must carry a ``topic_table``
    column. `strict` is build_group's: an owned claim on an unknown topic or past the partition count
    is an error (True) or dropped and counted (False). The rules run natively, for the whole batch in
    one call (:func:`kafkagroup._core.build_groups`); this function only hands over Arrow's buffers and
    words the errors.
    """
    from kafkagroup import _core

    inputs = batch_inputs(batch, meta, strict=strict)
    return problems_of(inputs, _core.build_groups(*inputs.args))


class _ErrorWords(BuildErrorNames):
    """The batch's own names for the indices of a native BuildError (kafkagroup.model words the message)."""

    def __init__(self, group_ids: pa.Array, member_ids: pa.Array, instance: pa.Array | None, topics: pa.Array | None,
                 own_names: pa.Array | None, own_part: pa.Array | None, generation: np.ndarray | None,
                 meta: TopicMeta) -> None:
        self.group_ids, self.member_ids, self.instance_ids, self.topic_lists = group_ids, member_ids, instance, topics
        self.own_names, self.own_part, self.generations, self.meta = own_names, own_part, generation, meta

    def member(self, i: int) -> Any:
        return self.member_ids[i].as_py()

    def instance(self, i: int) -> Any:
        return self.instance_ids[i].as_py() if self.instance_ids is not None else None

    def topics(self, i: int) -> Any:
        return self.topic_lists[i].as_py() if self.topic_lists is not None else []

    def claim(self, e: int) -> tuple[Any, Any]:
        return self.own_names[e].as_py(), self.own_part[e].as_py()

    def topic(self, row: int) -> Any:
        return self.meta.names[row].as_py()

    def count(self, row: int) -> int:
        return int(self.meta.count[row])

    def generation(self, i: int) -> Any:
        return int(self.generations[i])

    def message(self, g: int, code: int, a: int, b: int, c: int) -> str:
        return f"group {self.group_ids[g].as_py()!r}: {build_error_text(code, a, b, c, self)}"
