"""Type stub of the Cython module kafkagroup._codec (pyext/_codec.pyx): the group leader's bulk codec.

Use it through kafkagroup.protocol.leader (decode_group / encode_assignments), which orders members,
pools decoders and builds the CompactGroup.
"""
from typing import Any

import numpy as np
import numpy.typing as npt

class GroupDecoder:
    """Decodes a group's member subscriptions into the engine's arrays; reusable, not reentrant."""

    def decode(self, member_ids: list[str], blobs: list[bytes], counts: dict[str, int], mode: int,
               strict: bool) -> dict[str, Any]:
        """Keys: topics, partition_count, topic_base, sub_offsets, sub_topics, owned_offsets, owned_partitions,
        generation, member_rack, rack_names, unknown_topics, dropped_claims."""
        ...

def encode_assignments(owner: npt.NDArray[np.int32], base: npt.NDArray[np.int64], names: list[bytes], members: int,
                       version: int, user_data: bytes | None) -> list[bytes]: ...
