"""Type stub of the Cython module kafkagroup._members (pyext/_members.pyx): member specs to columns and codes.

Use it through kafkagroup.model.build_group, which owns the rules and the error messages.
"""
from typing import Any

import numpy as np
import numpy.typing as npt

def read_specs(subscriptions: dict[Any, Any], aliases: dict[str, tuple[int, int]], columns: int
               ) -> tuple[Any, ...] | None: ...
def address_table(names: list[str]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32]]: ...
def code_topic_lists(lists: list[Any], code: dict[str, int],
                     seed: tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32]] | None = None
                     ) -> tuple[npt.NDArray[np.int64] | None, npt.NDArray[np.int32], int]: ...
def same_items(a: list[Any], b: list[Any]) -> bool: ...
def plain_counts(counts: dict[Any, Any]) -> tuple[list[str], list[int]] | None: ...
