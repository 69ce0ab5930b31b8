"""Atheris fuzz target for kafkagroup's wire codecs (``make fuzz``; FUZZ_RUNS sets -atheris_runs).

Each input is used three ways:
1. as one message for every object decoder (subscription, assignment, sticky and cooperative-sticky
   user data): the only acceptable failure is ProtocolError; anything else is a finding;
2. split into 1-4 member metadata blobs for the leader's bulk decoder, run by the Cython codec and
   its pure-Python twin (differential): both must give the same group or the same error message;
3. whenever a message decodes, re-encoding and decoding it gives the same value (subscriptions: with
   topics and owned partitions sorted, as Java's encoder sorts them).
"""
from __future__ import annotations

import sys

import atheris
import numpy as np

with atheris.instrument_imports(include=["kafkagroup"]):
    from kafkagroup.errors import InvalidGroupError, ProtocolError
    from kafkagroup.protocol import (
        Subscription,
        decode_assignment,
        decode_cooperative_sticky_user_data,
        decode_sticky_user_data,
        decode_subscription,
        encode_assignment,
        encode_subscription,
    )
    from kafkagroup.protocol.java_order import java_string_key
    from kafkagroup.protocol.leader import decode_group, native_available

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
METADATA = {"t0": 3, "t1": 1, "foo": 2, "bar": 0}


def _outcome(fn):
    try:
        group = fn()
    except (ProtocolError, InvalidGroupError) as exc:
        return (type(exc).__name__, str(exc))
    return ("ok", {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in vars(group).items()})


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    selector = fdp.ConsumeIntInRange(0, 255)
    payload = fdp.ConsumeBytes(fdp.remaining_bytes())

    for decoder in (decode_subscription, decode_assignment, decode_sticky_user_data):
        try:
            decoded = decoder(payload)
        except ProtocolError:
            continue
        if decoder is decode_subscription:  # encoding sorts topics and owned partitions (Java's rule)
            again = decode_subscription(encode_subscription(decoded, 3))
            canonical = Subscription(sorted(decoded.topics, key=java_string_key), decoded.user_data,
                                     sorted(decoded.owned_partitions, key=lambda tp: (java_string_key(tp[0]), tp[1])),
                                     decoded.generation_id, decoded.rack_id)
            assert again == canonical, (decoded, again)
        elif decoder is decode_assignment:
            again = decode_assignment(encode_assignment(decoded, 3))
            assert sorted(again.partitions) == sorted(decoded.partitions)
    decode_cooperative_sticky_user_data(payload)

    if native_available():
        pieces = selector % 4 + 1
        cut = max(1, len(payload) // pieces)
        blobs = [payload[i * cut:(i + 1) * cut] for i in range(pieces - 1)] + [payload[(pieces - 1) * cut:]]
        members = [(f"m{i}", "i1" if (selector >> 2) % 5 == i else None, b) for i, b in enumerate(blobs)]
        assignor = ASSIGNORS[(selector >> 4) % 4]
        strict = bool(selector & 0x40)
        py = _outcome(lambda: decode_group(members, METADATA, assignor=assignor, strict=strict, codec="python"))
        nat = _outcome(lambda: decode_group(members, METADATA, assignor=assignor, strict=strict, codec="native"))
        assert py == nat, (py, nat)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
