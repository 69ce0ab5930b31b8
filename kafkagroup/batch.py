"""Many groups in one native call: :func:`assign_many`.

A fleet is mostly small groups, and for a group of 5 members and 75 partitions the engine's work
(~3 us) is a fraction of what one :func:`~kafkagroup.assign_arrays` call costs from Python (argument
checks, result objects: ~20 us). :func:`assign_many` takes the compact problems of many groups laid
end to end (a CSR of groups over the same arrays one group uses), releases the GIL once, and returns
every group's result in flat arrays; groups with bad data are reported per group and the others are
assigned as usual.

>>> a = {"partition_count": [3], "sub_offsets": [0, 1, 2], "sub_topics": [0, 0]}
>>> b = {"partition_count": [1, 2], "sub_offsets": [0, 2], "sub_topics": [0, 1]}
>>> r = assign_many("range", [a, b])
>>> r.owner.tolist(), r.part_offsets.tolist(), r.metrics["max_load"].tolist()
([0, 0, 1, 0, 0, 0], [0, 3, 6], [2, 3])
>>> r.result(1).owner.tolist()
[0, 0, 0]

Layout (:class:`GroupBatch`): group ``g`` owns topics ``topic_offsets[g]:topic_offsets[g+1]`` of
``partition_count`` and members ``member_offsets[g]:member_offsets[g+1]`` of the member arrays;
``sub_offsets`` / ``owned_offsets`` are positions in the flat ``sub_topics`` / ``owned_partitions``
and ``replica_offsets`` in ``replica_racks`` (one entry per partition of the batch, groups in order).
The ids stored in those arrays are each group's own, exactly as :func:`~kafkagroup.assign_arrays`
takes them. The engine reads the arrays in place: do not write to them from another thread during
the call.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kafkagroup import _core
from kafkagroup.engine import MAX_PARTITIONS, ArrayResult, Metrics, as_index_array
from kafkagroup.errors import InvalidGroupError, InvariantError, KafkaGroupError

# Bits of GroupBatch.group_inputs (csrc/kafkagroup/batch.hpp GroupInput)
USES_OWNED, USES_GENERATION, USES_MEMBER_RACK, USES_REPLICA_RACKS, SKIP_GROUP = 1, 2, 4, 8, 128
METRIC_NAMES: tuple[str, ...] = tuple(_core.metric_names())
_INVALID_INPUT, _INVARIANT = 1, 2


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class GroupBatch:
    """The compact problems of G groups, end to end (see the module docstring).

    ``group_inputs`` (uint8[G], optional) says which optional arrays each group uses (USES_* bits;
    SKIP_GROUP leaves a group unassigned): a group without a bit is assigned as if that argument of
    assign_arrays were None. Without it every group uses every optional array given.
    """

    topic_offsets: np.ndarray                 # int64[G+1]
    member_offsets: np.ndarray                # int64[G+1]
    partition_count: np.ndarray               # int32[T]
    sub_offsets: np.ndarray                   # int64[M+1]
    sub_topics: np.ndarray                    # int32[]
    owned_offsets: np.ndarray | None = None   # int64[M+1]
    owned_partitions: np.ndarray | None = None
    generation: np.ndarray | None = None      # int32[M]
    member_rack: np.ndarray | None = None     # int32[M]
    replica_offsets: np.ndarray | None = None  # int64[P+1]
    replica_racks: np.ndarray | None = None
    group_inputs: np.ndarray | None = None    # uint8[G]

    @property
    def num_groups(self) -> int:
        return len(self.topic_offsets) - 1

    @staticmethod
    def concat(problems: Iterable[Mapping[str, Any]]) -> "GroupBatch":
        """One batch from per-group keyword arguments of :func:`~kafkagroup.assign_arrays`
        (``CompactGroup.arrays()``, ``scenarios`` groups, ...). Loops over groups in Python: for
        convenience; a caller holding flat arrays builds the GroupBatch directly."""
        lists: dict[str, list[np.ndarray]] = {name: [] for name in _ARRAY_FIELDS}
        inputs: list[int] = []
        topic_counts, member_counts, part_counts = [], [], []
        for g, problem in enumerate(problems):
            unknown = set(problem) - set(_ARRAY_FIELDS)
            if unknown:
                raise InvalidGroupError(f"group {g}: unknown argument(s) {sorted(unknown)}")

            def arr(name: str, dtype: type[np.integer]) -> np.ndarray | None:
                value = problem.get(name)
                return None if value is None else as_index_array(f"group {g}: {name}", value, dtype)

            counts = arr("partition_count", np.int32)
            sub_offsets = arr("sub_offsets", np.int64)
            if counts is None or sub_offsets is None or len(sub_offsets) == 0:
                raise InvalidGroupError(f"group {g}: partition_count and sub_offsets (M+1 entries) are required")
            members = len(sub_offsets) - 1
            parts = int(np.maximum(counts, 0).sum())
            parts = parts if parts <= MAX_PARTITIONS else 0   # no room: the engine refuses the group
            bits = 0
            values: dict[str, np.ndarray] = {}
            for name, dtype, _offsets_of, _rows, bit in _OPTIONAL:
                value = arr(name, dtype)
                if value is not None:
                    values[name] = value
                    bits |= bit
            sub_topics = arr("sub_topics", np.int32)
            values["sub_topics"] = np.zeros(0, np.int32) if sub_topics is None else sub_topics
            _check_csr(g, "sub_offsets", sub_offsets, "sub_topics", values, members)
            if bits & USES_OWNED:
                _check_csr(g, "owned_offsets", values.get("owned_offsets"), "owned_partitions", values, members)
            if bits & USES_REPLICA_RACKS:
                _check_csr(g, "replica_offsets", values.get("replica_offsets"), "replica_racks", values, parts)
            for name in ("generation", "member_rack"):
                if name in values and len(values[name]) != members:
                    raise InvalidGroupError(f"group {g}: {name}: expected {members} entries, got {len(values[name])}")
            for name, value in values.items():
                if name != "sub_topics":
                    lists[name].append(value)
            lists["sub_topics"].append(values["sub_topics"])
            lists["partition_count"].append(counts)
            lists["sub_offsets"].append(sub_offsets)
            inputs.append(bits)
            topic_counts.append(len(counts))
            member_counts.append(members)
            part_counts.append(parts)
        num_groups = len(inputs)
        group_inputs = np.asarray(inputs, dtype=np.uint8)
        fields: dict[str, np.ndarray | None] = {
            "topic_offsets": _offsets(topic_counts), "member_offsets": _offsets(member_counts),
            "partition_count": _cat(lists["partition_count"], np.int32),
            "sub_offsets": _cat_offsets(lists["sub_offsets"], [True] * num_groups, member_counts),
            "sub_topics": _cat(lists["sub_topics"], np.int32),
        }
        for name, dtype, offsets_of, _rows, bit in _OPTIONAL:
            used = [(b & bit) != 0 for b in inputs]
            if not any(used):
                fields[name] = None
            elif offsets_of is not None:
                fields[name] = _cat_offsets(lists[name], used, member_counts if offsets_of == "members" else part_counts)
            elif name in ("generation", "member_rack"):
                it = iter(lists[name])
                fields[name] = _cat([next(it) if u else np.zeros(m, dtype) for u, m in zip(used, member_counts)], dtype)
            else:
                fields[name] = _cat(lists[name], dtype)
        return GroupBatch(**fields, group_inputs=group_inputs)


# (name, dtype, what its offsets index or None, rows it has, the group_inputs bit it belongs to)
_OPTIONAL: tuple[tuple[str, type[np.integer], str | None, str | None, int], ...] = (
    ("owned_offsets", np.int64, "members", None, USES_OWNED),
    ("owned_partitions", np.int32, None, None, USES_OWNED),
    ("generation", np.int32, None, "members", USES_GENERATION),
    ("member_rack", np.int32, None, "members", USES_MEMBER_RACK),
    ("replica_offsets", np.int64, "partitions", None, USES_REPLICA_RACKS),
    ("replica_racks", np.int32, None, None, USES_REPLICA_RACKS),
)
_ARRAY_FIELDS = ("partition_count", "sub_offsets", "sub_topics") + tuple(o[0] for o in _OPTIONAL)


def _offsets(counts: list[int]) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _check_csr(g: int, name: str, offsets: np.ndarray | None, values_name: str, values: dict[str, np.ndarray],
               rows: int) -> None:
    """A group's CSR must be well formed before it is concatenated (it would shift every later group)."""
    if offsets is None or values_name not in values:
        given, missing = (values_name, name) if offsets is None else (name, values_name)
        raise InvalidGroupError(f"group {g}: {given} given without {missing}")
    if len(offsets) != rows + 1:
        raise InvalidGroupError(f"group {g}: {name}: expected {rows + 1} offsets, got {len(offsets)}")
    if offsets[0] != 0 or (np.diff(offsets) < 0).any() or offsets[-1] != len(values[values_name]):
        raise InvalidGroupError(f"group {g}: {name}: offsets must rise from 0 to len({values_name}) = "
                                f"{len(values[values_name])}")


def _cat(parts: list[np.ndarray], dtype: type[np.integer]) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _cat_offsets(parts: list[np.ndarray], used: list[bool], rows: list[int]) -> np.ndarray:
    """Per-group CSR offsets (each from its own 0) -> one CSR over the concatenated values; a group
    that does not use the array gets empty rows."""
    it = iter(parts)
    pieces: list[np.ndarray] = [np.zeros(1, np.int64)]
    base = 0
    for u, n in zip(used, rows):
        if u:
            offsets = next(it)        # checked: rises from 0
            pieces.append(offsets[1:] + base)
            base += int(offsets[-1])
        else:
            pieces.append(np.full(n, base, dtype=np.int64))
    return np.concatenate(pieces)


@dataclass(frozen=True)
class BatchResult:
    """Results of G groups in flat arrays.

    Group ``g``'s partitions are ``owner[part_offsets[g]:part_offsets[g+1]]`` (its own member ids,
    -1 unassigned or withheld), what it withholds ``withheld[withheld_offsets[g]:withheld_offsets[g+1]]``
    (its own partition ids), its metrics ``metrics[name][g]``. A group in ``errors`` (index ->
    InvalidGroupError for bad input, InvariantError for a defect) has no owner and zero metrics.
    """

    part_offsets: np.ndarray        # int64[G+1]
    owner: np.ndarray               # int32[P]
    withheld_offsets: np.ndarray    # int64[G+1]
    withheld: np.ndarray            # int32[W]
    metrics: dict[str, np.ndarray]  # METRIC_NAMES -> int64[G]
    engine_us: np.ndarray           # float64[G]: each group's native assignment, microseconds
    errors: dict[int, KafkaGroupError]

    @property
    def num_groups(self) -> int:
        return len(self.part_offsets) - 1

    def result(self, g: int) -> ArrayResult:
        """Group ``g`` as :func:`~kafkagroup.assign_arrays` returns it (views); raises its error if it has one."""
        if g in self.errors:
            raise self.errors[g]
        p0, p1 = int(self.part_offsets[g]), int(self.part_offsets[g + 1])
        w0, w1 = int(self.withheld_offsets[g]), int(self.withheld_offsets[g + 1])
        metrics = Metrics(**{name: int(self.metrics[name][g]) for name in METRIC_NAMES})
        return ArrayResult(owner=self.owner[p0:p1], withheld=self.withheld[w0:w1], metrics=metrics,
                           engine_us=float(self.engine_us[g]))


def run_group_batch(strategy: str, batch: GroupBatch, threads: int = 1) -> tuple[BatchResult, list[tuple[int, int, str]]]:
    """The native call: (result with ``errors`` empty, raw [(group, kind, message)]): callers name groups their own way."""
    if not isinstance(strategy, str):
        raise InvalidGroupError(f"strategy must be a name, got {strategy!r}")
    part_offsets, owner, withheld_offsets, withheld, metrics, engine_us, raw = _core.assign_batch(
        strategy, batch.topic_offsets, batch.member_offsets, batch.partition_count, batch.sub_offsets,
        batch.sub_topics, owned_offsets=batch.owned_offsets, owned_partitions=batch.owned_partitions,
        generation=batch.generation, member_rack=batch.member_rack, replica_offsets=batch.replica_offsets,
        replica_racks=batch.replica_racks, group_inputs=batch.group_inputs, threads=threads)
    result = BatchResult(part_offsets=part_offsets, owner=owner, withheld_offsets=withheld_offsets,
                         withheld=withheld, metrics={name: metrics[:, i] for i, name in enumerate(METRIC_NAMES)},
                         engine_us=engine_us, errors={})
    return result, raw


def group_error(kind: int, message: str) -> KafkaGroupError:
    """The exception a batch error code stands for (InvalidGroupError: bad input; InvariantError: a defect)."""
    return InvariantError(message) if kind == _INVARIANT else InvalidGroupError(message)


def assign_many(strategy: str, groups: GroupBatch | Iterable[Mapping[str, Any]], *, threads: int | None = None,
                on_error: str = "raise") -> BatchResult:
    """Assign many groups in one native call (see the module docstring for the layout).

    `groups` is a :class:`GroupBatch` or an iterable of per-group keyword arguments of
    :func:`~kafkagroup.assign_arrays`. `threads` (default: every core this process may use) run
    groups in parallel inside the call; the result does not depend on it. `on_error` ``"raise"``
    raises the first bad group's error (``group 3: member 0: ...``); ``"record"`` returns it in
    ``errors`` and assigns the other groups.
    """
    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error must be 'raise' or 'record', got {on_error!r}")
    batch = groups if isinstance(groups, GroupBatch) else GroupBatch.concat(groups)
    result, raw = run_group_batch(strategy, batch, available_cores() if threads is None else int(threads))
    errors = {int(g): group_error(kind, f"group {g}: {message}") for g, kind, message in raw}
    if errors and on_error == "raise":
        raise errors[min(errors)]
    result.errors.update(errors)
    return result
