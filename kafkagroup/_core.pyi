"""Type stub of the native module kafkagroup._core (pybind11, built from pyext/_core.cpp + csrc/)."""
from typing import Any

import numpy as np
import numpy.typing as npt

MAX_PARTITIONS: int  # the largest total partition count the engine accepts (2**28)

def strategies() -> list[str]: ...
def strategies_ignoring_claims() -> list[str]: ...
def _raise_cpp_exception(kind: str, message: str) -> None: ...  # test hook of the error translation
def assign(
    strategy: str,
    partition_count: npt.NDArray[np.int32],
    sub_offsets: npt.NDArray[np.int64],
    sub_topics: npt.NDArray[np.int32],
    owned_offsets: npt.NDArray[np.int64] | None = None,
    owned_partitions: npt.NDArray[np.int32] | None = None,
    generation: npt.NDArray[np.int32] | None = None,
    member_rack: npt.NDArray[np.int32] | None = None,
    replica_offsets: npt.NDArray[np.int64] | None = None,
    replica_racks: npt.NDArray[np.int32] | None = None,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], dict[str, int]]: ...
def assign_exact(
    strategy: str,
    partition_count: npt.NDArray[np.int32],
    sub_offsets: npt.NDArray[np.int64] | None,   # None only with shared_members >= 0 (the one row's {0, len})
    sub_topics: npt.NDArray[np.int32],
    owned_offsets: npt.NDArray[np.int64] | None,
    owned_partitions: npt.NDArray[np.int32] | None,
    generation: npt.NDArray[np.int32] | None,
    member_rack: npt.NDArray[np.int32] | None,
    replica_offsets: npt.NDArray[np.int64] | None,
    replica_racks: npt.NDArray[np.int32] | None,
    shared_members: int = -1,
    server_racks: bool = False,
    metrics: bool = True,   # False: the ArrayResult's metrics is None (AssignOptions::metrics)
    /,
) -> Any: ...  # kafkagroup.engine.ArrayResult, or None (a non-str strategy or an inexact array)
def set_result_types(array_result: type, metrics: type) -> None: ...
def assign_batch(
    strategy: str,
    topic_offsets: npt.NDArray[np.int64],
    member_offsets: npt.NDArray[np.int64],
    partition_count: npt.NDArray[np.int32],
    sub_offsets: npt.NDArray[np.int64],
    sub_topics: npt.NDArray[np.int32],
    owned_offsets: npt.NDArray[np.int64] | None = None,
    owned_partitions: npt.NDArray[np.int32] | None = None,
    generation: npt.NDArray[np.int32] | None = None,
    member_rack: npt.NDArray[np.int32] | None = None,
    replica_offsets: npt.NDArray[np.int64] | None = None,
    replica_racks: npt.NDArray[np.int32] | None = None,
    group_inputs: npt.NDArray[np.uint8] | None = None,
    threads: int = 1,
) -> tuple[
    npt.NDArray[np.int64],      # part_offsets [G+1]
    npt.NDArray[np.int32],      # owner [P]
    npt.NDArray[np.int64],      # withheld_offsets [G+1]
    npt.NDArray[np.int32],      # withheld [W]
    npt.NDArray[np.int64],      # metrics [G, 8], metric_names() order
    npt.NDArray[np.float64],    # engine_us [G]
    list[tuple[int, int, str]],  # (group, kind: 1 invalid input / 2 invariant, message)
]: ...
def metric_names() -> list[str]: ...


StringsArg = tuple[np.ndarray, np.ndarray, np.ndarray | None]
NamesArg = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]

class TopicCatalog:
    def __init__(self, names: StringsArg, count: np.ndarray, group: np.ndarray | None = ...,
                 has_racks: np.ndarray | None = ..., part_start: np.ndarray | None = ...,
                 rack_off: np.ndarray | None = ..., rack_codes: np.ndarray | None = ...) -> None: ...
    def __len__(self) -> int: ...
    @property
    def per_group(self) -> bool: ...
    @property
    def repeated_rows(self) -> list[int]: ...
    def find(self, name: str, group: int = ...) -> int: ...

def build_groups(catalog: TopicCatalog, member_offsets: np.ndarray, member_ids: StringsArg,
                 instance_ids: StringsArg | None, sub_offsets: np.ndarray, sub_valid: np.ndarray | None,
                 sub_names: NamesArg, owned_offsets: np.ndarray | None, owned_names: NamesArg | None,
                 owned_partition: np.ndarray | None, owned_partition_valid: np.ndarray | None,
                 generation: np.ndarray | None, member_rack: np.ndarray | None, strict: bool,
                 sub_same: np.ndarray | None = None, lean: bool = False) -> dict[str, Any] | tuple[Any, ...]:
    """sub_same uint8[M]: 1 where a member lists the codes of the member before it. lean=True: a batch of one
    group, the tuple of what kafkagroup.model.build_group reads (see the native docstring)."""
def assignment_rows(group_ids: StringsArg, member_ids: StringsArg, topic_names: StringsArg, member_offsets: np.ndarray,
                    member_perm: np.ndarray, topic_offsets: np.ndarray, part_offsets: np.ndarray, owner: np.ndarray,
                    g0: int, g1: int) -> tuple[int, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray],
                                               tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Assignment rows of groups g0..g1-1, Arrow string layout: (rows, group_id, member_id, topic, partition)."""
def plan_batch(catalog: TopicCatalog, member_offsets: np.ndarray, member_ids: StringsArg,
               instance_ids: StringsArg | None, sub_offsets: np.ndarray, sub_valid: np.ndarray | None,
               sub_names: NamesArg, owned_offsets: np.ndarray | None, owned_names: NamesArg | None,
               owned_partition: np.ndarray | None, owned_partition_valid: np.ndarray | None,
               generation: np.ndarray | None, member_rack: np.ndarray | None, strict: bool, group_ids: StringsArg,
               skip: np.ndarray | None, strategy: str, threads: int, stop_on_error: bool,
               chunk_partitions: int, arrow: bool = False) -> Any:
    """dict of arrays; with arrow=True (build errors, engine errors, [ArrowExport per rows chunk], ArrowExport | None)."""
def plan_parts(catalog: TopicCatalog, member_offsets: np.ndarray, member_ids: StringsArg,
               instance_ids: StringsArg | None, sub_offsets: np.ndarray, sub_valid: np.ndarray | None,
               sub_names: NamesArg, owned_offsets: np.ndarray | None, owned_names: NamesArg | None,
               owned_partition: np.ndarray | None, owned_partition_valid: np.ndarray | None,
               generation: np.ndarray | None, member_rack: np.ndarray | None, strict: bool, group_ids: StringsArg,
               skip: np.ndarray | None, strategy: str, threads: int, stop_on_error: bool,
               chunk_partitions: int, part_groups: int, min_part_groups: int | None = None,
               spread: int = 1) -> tuple[list[tuple[int, int, int, int, int]],
                                                                 list[tuple[int, int, str]], ArrowStreamExport,
                                                                 ArrowStreamExport, np.ndarray]:
    """plan_batch(arrow=True) in parts of whole groups on native threads, each part 1/(2 * spread) of the groups
    left, within min_part_groups (default part_groups) .. part_groups: (build errors, engine errors,
    stream of the rows chunks (parts in order), stream of each written part's metrics rows, part_groups int64[P+1])."""
class ArrowExport:
    """A record batch in Arrow's C data interface; ``pyarrow.record_batch(it)`` imports it once."""
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...
class ArrowStreamExport:
    """Record batches in Arrow's C stream interface; ``pyarrow.RecordBatchReader.from_stream(it)`` imports them
    once; ``len()`` is the batch count (no batches: no schema)."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __len__(self) -> int: ...
def output_memory(limit: int | None = None) -> tuple[int, int]:
    """(bytes kept, limit) of the output rows' memory kept for reuse; `limit` sets the limit first."""
def metrics_rows(group_ids: StringsArg, strategy: str, member_offsets: np.ndarray, topic_offsets: np.ndarray,
                 part_offsets: np.ndarray, metrics: np.ndarray, engine_us: np.ndarray, failed: np.ndarray | None,
                 unknown_offsets: np.ndarray, unknown_names: StringsArg, dropped_claims: np.ndarray) -> ArrowExport: ...
def java_compare(a: str, b: str) -> int: ...
