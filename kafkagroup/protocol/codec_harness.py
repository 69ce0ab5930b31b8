"""The one harness that runs the leader's two codecs on the same input and makes their results comparable.

The Cython codec (``codec="native"``, what a leader runs) and the pure-Python twin (``codec="python"``,
kept only as the oracle) must give the same group or the same error, word for word. The tests, the
fuzzer (fuzz/fuzz_protocol.py) and the garbage-bytes tool (tools/codec_garbage.py) all compare them
through this module::

    twin, native, group = decode_both(members, {"t0": 3}, assignor="range")
    assert twin == native
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kafkagroup.errors import InvalidGroupError, ProtocolError
from kafkagroup.model import CompactGroup, TopicSpec
from kafkagroup.protocol.leader import JoinedMember, decode_group

# ("ok", {field: value}) with every array as a list and their dtypes under "dtypes", or (error class name, message).
Outcome = tuple[str, Any]


def outcome(build: Callable[[], CompactGroup]) -> tuple[Outcome, CompactGroup | None]:
    """Run ``build``; return what it gave as a value ``==`` compares exactly (arrays by dtype and
    contents), and the group itself (None when it raised ProtocolError or InvalidGroupError)."""
    try:
        group = build()
    except (ProtocolError, InvalidGroupError) as exc:
        return (type(exc).__name__, str(exc)), None
    # every field as read (a homogeneous group's sub_offsets / sub_topics are built from shared_topics on
    # first read); shared_topics itself is how the group is stored, not what it holds, and ``dropped`` (the
    # names of dropped claims) is build_group's note, which the leader's decoders do not write (they count
    # dropped claims, compared here)
    values = {f.name: getattr(group, f.name) for f in dataclasses.fields(group)
              if f.name not in ("shared_topics", "dropped")}
    fields = {name: value.tolist() if isinstance(value, np.ndarray) else value for name, value in values.items()}
    fields["dtypes"] = {name: value.dtype.name for name, value in values.items() if isinstance(value, np.ndarray)}
    return ("ok", fields), group


def decode_both(members: Sequence[JoinedMember], partitions_per_topic: Mapping[str, TopicSpec],
                **options: Any) -> tuple[Outcome, Outcome, CompactGroup | None]:
    """``decode_group`` through the twin and through the Cython codec with the same ``options``:
    (twin's outcome, native outcome, the native group or None)."""
    twin, _ = outcome(lambda: decode_group(members, partitions_per_topic, codec="python", **options))
    native, group = outcome(lambda: decode_group(members, partitions_per_topic, codec="native", **options))
    return twin, native, group
