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

    def parse_topics(self, member_ids: list[str], blobs: list[bytes], mode: int, strict: bool) -> dict[str, Any]:
        """Phase 1: keys names, dictionary, sub_offsets, sub_codes (valid until release()), complete, sub_same."""
        ...

    def parse_claims(self, partition_count: npt.NDArray[np.int32] | None, codes: npt.NDArray[np.int32] | None,
                     order: npt.NDArray[np.int64] | None = None) -> dict[str, Any]:
        """Phase 2 (after parse_topics): keys owned_offsets, owned_partitions, others, generation, member_rack,
        rack_names, names, dictionary. Raises the first ProtocolError in ``order``."""
        ...

    def release(self) -> None:
        """Drops the group's bytes and the views handed out; the decoder is free again."""
        ...

def utf8_strings(values: list[str | None]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8],
                                                    npt.NDArray[np.uint8] | None]:
    """model.utf8_strings at C speed: (offsets int64[n+1], UTF-8 bytes, valid uint8[n] or None)."""
    ...

def encode_assignments(owner: npt.NDArray[np.int32], base: npt.NDArray[np.int64], names: list[bytes], members: int,
                       version: int, user_data: bytes | None) -> list[bytes]: ...
