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
