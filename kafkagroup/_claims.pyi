"""Type stub of the Cython module kafkagroup._claims (pyext/_claims.pyx): owned claims to arrays.

A member's claims are a sequence of (topic, partition) pairs, or the compact form, a dict topic -> partitions
(list, tuple, set, frozenset, range, numpy integer array, or any re-iterable collection), which stands for
the pairs in the dict's order and each collection's order. ``owned`` is normalised in place (None -> (), a
non-dict Mapping -> its dict, another iterable -> its tuple) so the caller can re-read it to word an error.

Use it through kafkagroup.model.build_group, which owns the rules and the error messages.
"""
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

def intern_claims(owned: list[Sequence[Any] | Mapping[str, Iterable[int]] | None], slot: dict[str, int],
                  seed: tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32]] | None = None
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64], int]: ...
