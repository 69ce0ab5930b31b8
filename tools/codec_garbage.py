"""Structured garbage for the Cython leader codec (kafkagroup._codec), compared with its Python twin.

The atheris target (fuzz/fuzz_protocol.py) gets no coverage feedback once libasan is preloaded, so under
the sanitizers this driver builds the inputs itself: valid ConsumerProtocolSubscription messages
(v0-v3, sticky user data for the sticky assignors, owned partitions in and out of range, unknown and
non-ASCII topic names, racks), then with some probability a byte-level corruption that keeps the
message plausible (a length or count field set to an edge value, truncation, a flipped byte, a
duplicated slice). Each group is decoded by both codecs on pooled decoders (buffers reused across
calls): same group or same error message; a decoded group's assignments are encoded by both (same
bytes). Cases derive from (seed, index); ``--replay I`` prints one.

    python tools/codec_garbage.py --cases 20000
"""
from __future__ import annotations

import sys

import numpy as np

from kafkagroup.protocol import Subscription, encode_subscription, sticky_user_data
from kafkagroup.protocol.codec_harness import decode_both
from kafkagroup.protocol.leader import encode_assignments, native_available
from kafkagroup.structs import TopicPartition as TP

from garbage_loop import CaseLoop, parser

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
NAMES = ["t0", "t1", "foo", "bar", "\u00e9t\u00e9", "\U0001f600x", "\uff5e", "a" * 300, "", "z"]
EDGE32 = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x00", b"\x00\x00\x10\x00")
EDGE16 = (b"\x7f\xff", b"\xff\xff", b"\x80\x00", b"\x00\x00", b"\x01\x00")


def metadata(rng: np.random.Generator) -> dict:
    names = rng.permutation(NAMES)[: int(rng.integers(1, len(NAMES) + 1))]
    meta = {}
    for n in names:
        count = int(rng.integers(0, 9))
        if rng.random() < 0.2:
            meta[str(n)] = [[f"r{int(x)}" for x in rng.integers(0, 3, size=int(rng.integers(0, 3)))]
                            for _ in range(count)]
        else:
            meta[str(n)] = count
    return meta


def member_bytes(rng: np.random.Generator, meta: dict, assignor: str) -> bytes:
    known = list(meta)
    pool = known + ["unknown", "\u00e9t\u00e9-x"]
    topics = [str(t) for t in rng.permutation(pool)[: int(rng.integers(0, len(pool) + 1))]]
    if rng.random() < 0.5:
        topics.sort()
    owned = []
    valid_only = rng.random() < 0.7   # else claims of unknown topics and out-of-range partitions too
    for _ in range(int(rng.integers(0, 8))):
        t = str(rng.choice(known if valid_only else pool))
        count = meta.get(t, 3)
        count = len(count) if isinstance(count, list) else count
        if valid_only and count == 0:
            continue
        owned.append(TP(t, int(rng.integers(0, count) if valid_only else rng.integers(-1, count + 2))))
    version = int(rng.integers(0, 4))
    generation = int(rng.choice([-1, 0, 1, 5, 2**31 - 1]))
    user_data = None
    if assignor == "sticky" and rng.random() < 0.7:
        user_data = sticky_user_data(owned, generation if rng.random() < 0.6 else -1)
    elif assignor == "cooperative-sticky" and rng.random() < 0.5:
        user_data = generation.to_bytes(4, "big", signed=True)
    rack = str(rng.choice(["r0", "r1", "r2", ""])) if rng.random() < 0.4 else None
    sub = Subscription(topics, user_data, owned if version >= 1 else (), generation, rack)
    return encode_subscription(sub, version)


def corrupt(rng: np.random.Generator, b: bytes) -> bytes:
    if not b:
        return bytes(rng.integers(0, 256, size=int(rng.integers(0, 12)), dtype=np.uint8))
    b = bytearray(b)
    kind = int(rng.integers(0, 5))
    i = int(rng.integers(0, len(b)))
    if kind == 0:
        edge = EDGE32[int(rng.integers(0, len(EDGE32)))]
        b[i:i + 4] = edge
    elif kind == 1:
        b[i:i + 2] = EDGE16[int(rng.integers(0, len(EDGE16)))]
    elif kind == 2:
        del b[i:]
    elif kind == 3:
        b[i] ^= 1 << int(rng.integers(0, 8))
    else:
        j = int(rng.integers(i, len(b) + 1))
        b[j:j] = b[i:j]
    return bytes(b)


def one_case(seed: int, index: int):
    rng = np.random.default_rng([seed, index])
    assignor = ASSIGNORS[int(rng.integers(0, 4))]
    meta = metadata(rng)
    n = int(rng.integers(1, 7))
    members = []
    for k in range(n):
        b = member_bytes(rng, meta, assignor)
        # static members, rarely two with one group.instance.id (a rejected group)
        instance = (f"i{k}" if rng.random() < 0.95 else "i0") if rng.random() < 0.3 else None
        members.append([f"m{k}", instance, b])
    if rng.random() < 0.4:    # one corrupted member per corrupted group
        k = int(rng.integers(0, n))
        members[k][2] = corrupt(rng, members[k][2])
    members = [tuple(m) for m in members]
    strict = bool(rng.random() < 0.5)
    return rng, assignor, meta, members, strict


def run(seed: int, index: int) -> str:
    rng, assignor, meta, members, strict = one_case(seed, index)
    py, nat, group = decode_both(members, meta, assignor=assignor, strict=strict)
    assert py == nat, f"codecs differ:\n python {py}\n native {nat}"
    if group is None:
        return "rejected"
    total = int(group.topic_base[-1])
    owner = rng.integers(-1, len(group.members), size=total).astype(np.int32)
    version = int(rng.integers(0, 5))
    user_data = None if rng.random() < 0.5 else bytes(rng.integers(0, 256, size=3, dtype=np.uint8))
    a = encode_assignments(group, owner, version=version, user_data=user_data, codec="python")
    b = encode_assignments(group, owner, version=version, user_data=user_data, codec="native")
    assert a == b, "encoders differ"
    return "decoded"


def main() -> int:
    opt = parser(__doc__).parse_args()
    if not native_available():
        print("kafkagroup._codec is not built", file=sys.stderr)
        return 2
    if opt.replay is not None:
        _, assignor, meta, members, strict = one_case(opt.seed, opt.replay)
        print(f"assignor={assignor} strict={strict}\nmetadata={meta!r}\nmembers={members!r}")
        print("->", run(opt.seed, opt.replay))
        return 0
    loop = CaseLoop(opt.progress)
    tally, seconds = loop.run("codec", opt.cases, lambda i: run(opt.seed, i))
    print(f"codec {opt.cases} groups: {tally['decoded']} decoded and re-encoded, {tally['rejected']} rejected "
          f"({seconds:.1f}s)", flush=True)
    return loop.exit_status()


if __name__ == "__main__":
    sys.exit(main())
