"""Type stub of the Cython module kafkagroup._claims (pyext/_claims.pyx): owned claims to arrays.

Use it through kafkagroup.model.build_group, which owns the rules and the error messages.
"""
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

def intern_claims(owned: list[Sequence[Any]], slot: dict[str, int]
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64], int]: ...
