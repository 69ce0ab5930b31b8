"""Atheris fuzz target for kafkagroup's wire codecs (``make fuzz``; FUZZ_RUNS sets -atheris_runs).

Each input is used three ways:
1. as one message for every object decoder (subscription, assignment, sticky and cooperative-sticky
   user data): the only acceptable failure is ProtocolError; anything else is a finding;
2. split into 1-4 member metadata blobs for the leader's bulk decoder, run by the Cython codec and
   its pure-Python twin (differential): both must give the same group or the same error message
   (the Cython side runs on pooled decoders, so every iteration also reuses buffers left by the last);
   when the group decodes, an owner[] drawn from the input is encoded by both codecs (same bytes);
3. whenever a message decodes, re-encoding and decoding it gives the same value (subscriptions: with
   topics and owned partitions sorted, as Java's encoder sorts them).
"""
from __future__ import annotations

import sys
from pathlib import Path

import atheris
import numpy as np

with atheris.instrument_imports(include=["kafkagroup"]):
    from kafkagroup.errors import ProtocolError
    from kafkagroup.protocol import (
        Subscription,
        decode_assignment,
        decode_cooperative_sticky_user_data,
        decode_sticky_user_data,
        decode_subscription,
        encode_assignment,
        encode_subscription,
    )
    from kafkagroup.java_order import java_string_key
    from kafkagroup.protocol.codec_harness import decode_both
    from kafkagroup.protocol.leader import encode_assignments, native_available

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
# How far inputs get (printed at exit): leader groups compared, of which decoded, of which encoded.
REACHED = {"groups": 0, "decoded": 0, "encoded": 0}
METADATA = {"t0": 3, "t1": 1, "foo": 2, "bar": 0}


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
        py, nat, group = decode_both(members, METADATA, assignor=assignor, strict=strict)
        assert py == nat, (py, nat)
        REACHED["groups"] += 1
        if group is not None:
            REACHED["decoded"] += 1
            total = int(group.topic_base[-1])
            owner = np.array([payload[i % len(payload)] % (len(members) + 1) - 1 if payload else -1
                              for i in range(total)], dtype=np.int32)
            version = selector % 5
            user_data = None if selector & 0x80 else payload[:3]
            assert (encode_assignments(group, owner, version=version, user_data=user_data, codec="python")
                    == encode_assignments(group, owner, version=version, user_data=user_data, codec="native"))
            REACHED["encoded"] += total > 0


def _seed_corpus() -> str:
    """build/fuzz-corpus, seeded with valid messages (so the fuzzer starts from groups that decode and
    reaches the encoder); libFuzzer adds what it finds there. Written by code, not kept in the repo."""
    from kafkagroup.protocol import Assignment, sticky_user_data
    from kafkagroup.structs import TopicPartition as TP

    corpus = Path(__file__).resolve().parents[1] / "build" / "fuzz-corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    owned = [TP("t0", 0), TP("t0", 2), TP("foo", 1), TP("t1", 0)]
    messages = [encode_subscription(Subscription(["t0", "t1", "foo"], None, owned, 4, "r1"), v) for v in range(4)]
    messages.append(encode_subscription(Subscription(["bar", "t0"], sticky_user_data(owned, 2), owned[:1]), 1))
    messages.append(encode_assignment(Assignment(owned, b"\x00\x01"), 3))
    for i, message in enumerate(messages):
        for selector in (0x00, 0x21, 0x32, 0x43, 0x90):   # 1-4 members, each assignor, strict, user data
            seed = corpus / f"seed-{i}-{selector:02x}"
            if not seed.exists():
                # FuzzedDataProvider takes the selector integer from the end of the input
                seed.write_bytes(message * (selector % 4 + 1) + bytes([selector]))
    return str(corpus)


def main() -> None:
    argv = list(sys.argv)
    if not any(not a.startswith("-") for a in argv[1:]):   # no corpus directory given: use the seeded one
        argv.append(_seed_corpus())
    import atexit

    atexit.register(lambda: print(f"fuzz_protocol reached: {REACHED}", file=sys.stderr))
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
