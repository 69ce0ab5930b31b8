"""Type stub of the native module kafkagroup._core (pybind11, built from pyext/_core.cpp + csrc/)."""
import numpy as np
import numpy.typing as npt

MAX_PARTITIONS: int  # the largest total partition count the engine accepts (2**28)

def strategies() -> list[str]: ...
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

class NameIndex:
    def __init__(self, offsets: npt.NDArray[np.int64], bytes: npt.NDArray[np.uint8]) -> None: ...
    def __len__(self) -> int: ...
    def lookup(self, offsets: npt.NDArray[np.int64], bytes: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]: ...
