"""The array-level API: numpy arrays in, ``owner[]`` out, no per-partition Python objects.

>>> import numpy as np
>>> r = assign_arrays("range", partition_count=[3], sub_offsets=[0, 1, 2], sub_topics=[0, 0])
>>> r.owner.tolist(), r.metrics.max_load, r.metrics.min_load, r.metrics.balance_gap
([0, 0, 1], 2, 1, 0)

Members are dense ids in Kafka's MemberInfo order, topics dense ids in Java name order, partition
``p`` of topic ``t`` has the global id ``sum(partition_count[:t]) + p`` (DESIGN.md, "The compact
problem"). The engine validates every index and raises :class:`~kafkagroup.errors.InvalidGroupError`
naming the member / topic / partition index. The GIL is released while the engine runs, so threads
may assign different groups concurrently.

A homogeneous group (every member subscribes to the same topics, Kafka's HOMOGENEOUS subscription type)
may pass its subscription once: ``sub_offsets=None``, ``sub_topics`` the one list, ``num_members=M``. The
result is the CSR form's with that row repeated M times, for every strategy; the server assignors read it
as it is (10,000 members x 1,000 topics: 1,000 ids read instead of 10M), the others expand it natively.

>>> r = assign_arrays("server-range", partition_count=[3], sub_offsets=None, sub_topics=[0], num_members=2)
>>> r.owner.tolist()
[0, 0, 1]

Capacity: at most :data:`MAX_PARTITIONS` (2**28 = 268,435,456) partitions in total per call. The result
alone is 4 bytes per partition (1 GiB at the bound) and the assignors' working arrays are several times
that, so a larger problem is refused with InvalidGroupError naming the topic that crosses the bound,
before anything is allocated for it (a count near 2**31 used to allocate until the OS killed the process).
A broken engine invariant (a kafkagroup defect, never bad input) raises
:class:`~kafkagroup.errors.InvariantError`.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError, InvariantError


@dataclass(frozen=True)
class Metrics:
    """The quality certificate of one assignment (computed in C++).

    balance_gap: 0 means optimally balanced. With uniform subscriptions it is
        ``max(0, max_load - min_load - 1)``; otherwise the number of partitions that could still
        reach, directly or through a chain of moves between members sharing topics, a member holding
        at least 2 fewer partitions. (max_load and min_load are reported as they are.)
    moved: partitions whose valid previous owner (see ownership rules) no longer owns them.
    moved_lower_bound: a lower bound of ``moved`` over optimally balanced assignments: exact when
        subscriptions are uniform; for different subscriptions a valid bound, given once the result
        is balanced and nothing is withheld; -1 when unknown.
    withheld: partitions a cooperative assignor holds back until their owner revokes them.
    unassigned: partitions of subscribed topics with no owner and not withheld.
    """

    balance_gap: int
    max_load: int
    min_load: int
    assigned: int
    unassigned: int
    withheld: int
    moved: int
    moved_lower_bound: int

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class ArrayResult:
    owner: np.ndarray      # int32[P]: member id per partition, -1 = unassigned (or withheld)
    withheld: np.ndarray   # int32[W]: global ids withheld this round, ascending
    metrics: Metrics | None   # None when assign_arrays(..., metrics=False) did not ask for them
    engine_us: float       # wall time of the engine (the native call without its glue), microseconds


# assign_exact returns these two, filled natively without their generated __init__.
_core.set_result_types(ArrayResult, Metrics)


#: The largest total partition count one call accepts (the engine's kMaxPartitions, csrc/kafkagroup/problem.hpp).
MAX_PARTITIONS: int = _core.MAX_PARTITIONS

_INT32 = np.iinfo(np.int32)
_INT64 = np.iinfo(np.int64)


def as_index_array(name: str, values: Any, dtype: type[np.integer]) -> np.ndarray:
    """A contiguous 1-d array of `dtype`, refusing anything that would change value in the cast."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise InvalidGroupError(f"{name}: expected a 1-d array, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=dtype)
    if array.dtype == dtype:
        return np.ascontiguousarray(array)
    if array.dtype.kind not in "iu":
        raise InvalidGroupError(f"{name}: expected integers, got dtype {array.dtype}")
    info = np.iinfo(dtype)
    lo, hi = int(array.min()), int(array.max())
    if lo < info.min or hi > info.max:
        bad = lo if lo < info.min else hi
        raise InvalidGroupError(f"{name}: value {bad} does not fit in {np.dtype(dtype).name}")
    return np.ascontiguousarray(array, dtype=dtype)


def strategies() -> list[str]:
    """Strategy names the native engine implements."""
    return list(_core.strategies())


# The strategies whose answer never depends on the previous assignment, whose claims only feed the metrics: with
# metrics=False nobody reads them (the engine's registry says which: Entry::ignores_claims in engine.cpp).
IGNORES_PREVIOUS: frozenset[str] = frozenset(_core.strategies_ignoring_claims())


def assign_arrays(strategy: str, partition_count: Any, sub_offsets: Any, sub_topics: Any, *,
                  owned_offsets: Any = None, owned_partitions: Any = None, generation: Any = None,
                  member_rack: Any = None, replica_offsets: Any = None, replica_racks: Any = None,
                  num_members: int | None = None, rack_aware: bool = False, metrics: bool = True) -> ArrayResult:
    """Run one assignor on the compact problem (see the module docstring for the layout; ``num_members``
    with ``sub_offsets=None`` is the homogeneous form).

    ``rack_aware=True`` (server-uniform / server-range only; an option beyond Kafka, whose server assignors
    ignore racks) gives members partitions with a replica in their rack where balance allows, when member
    and replica racks are both given: server-range then splits as the classic range does with racks
    (KIP-881), server-uniform balances as the classic sticky does with racks, keeping previous targets.
    The classic strategies follow Kafka: rack-aware whenever racks are given, whatever this says.

    ``metrics=False``: the result's ``metrics`` is None and the engine skips the work that only feeds them (the
    metrics pass after the assignor). server-range then does not read the previous assignment at all (owned
    arrays and generations: not read, not validated), exactly as Kafka's RangeAssignor, whose answer never
    depends on it; every strategy's ``owner`` and ``withheld`` are the same as with ``metrics=True``.
    (server-uniform and the sticky assignors' direct paths count their metrics inside their walk: there the
    call costs about the same.)

    >>> r = assign_arrays("server-range", partition_count=[3], sub_offsets=[0, 1, 2], sub_topics=[0, 0],
    ...                   owned_offsets=[0, 1, 1], owned_partitions=[99], metrics=False)   # claims ignored
    >>> r.owner.tolist(), r.metrics
    ([0, 0, 1], None)
    """
    usual = num_members is None and not rack_aware
    if usual:
        # The usual call, arrays already in the engine's layout: checked, run and wrapped natively.
        result = (_core.assign_exact(strategy, partition_count, sub_offsets, sub_topics, owned_offsets,
                                     owned_partitions, generation, member_rack, replica_offsets, replica_racks)
                  if metrics else
                  _core.assign_exact(strategy, partition_count, sub_offsets, sub_topics, owned_offsets,
                                     owned_partitions, generation, member_rack, replica_offsets, replica_racks,
                                     -1, False, False))
        if result is not None:
            return result
    if not isinstance(strategy, str):
        raise InvalidGroupError(f"strategy must be a name, got {strategy!r}")
    if rack_aware and not strategy.startswith("server-"):
        raise InvalidGroupError(f"rack_aware is an option of the server assignors; {strategy!r} is rack-aware "
                                "whenever member and replica racks are given, as in Kafka")
    shared = -1
    if num_members is not None:
        if sub_offsets is not None:
            raise InvalidGroupError("num_members (the homogeneous form) takes sub_offsets=None: sub_topics is the "
                                    "one list every member subscribes to")
        if isinstance(num_members, bool) or not isinstance(num_members, (int, np.integer)) or not 0 <= num_members < 2**31:
            raise InvalidGroupError(f"num_members must be an integer in 0..2^31-1, got {num_members!r}")
        shared = int(num_members)   # sub_offsets stays None: the native side takes {0, len(sub_topics)}
    # Arrays already in the engine's layout (1-d, C-contiguous, these dtypes) go straight in; anything
    # else is converted (and range-checked) below and passed again. The usual call already tried these
    # very arguments above.
    result = None if usual else _core.assign_exact(strategy, partition_count, sub_offsets, sub_topics, owned_offsets,
                                                   owned_partitions, generation, member_rack, replica_offsets,
                                                   replica_racks, shared, rack_aware, metrics)
    if result is None:
        args = _converted(shared >= 0, partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions,
                          generation, member_rack, replica_offsets, replica_racks)
        result = _core.assign_exact(strategy, *args, shared, rack_aware, metrics)
        if result is None:  # as_index_array returns exact arrays; anything else is a kafkagroup defect
            raise InvariantError("assign_arrays: a converted argument is still not an exact array")
    return result


def _converted(shared_row: bool, *values: Any) -> list[np.ndarray | None]:
    """assign_arrays' arguments after the strategy, as exact arrays (as_index_array) or None (sub_offsets
    stays None in the homogeneous form, `shared_row`)."""
    names = ("partition_count", "sub_offsets", "sub_topics", "owned_offsets", "owned_partitions", "generation",
             "member_rack", "replica_offsets", "replica_racks")
    dtypes = (np.int32, np.int64, np.int32, np.int64, np.int32, np.int32, np.int32, np.int64, np.int32)
    return [None if value is None and (i >= 3 or (shared_row and i == 1)) else as_index_array(name, value, dtype)
            for i, (name, value, dtype) in enumerate(zip(names, values, dtypes))]
