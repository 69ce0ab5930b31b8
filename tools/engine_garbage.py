"""Throw near-valid and corrupted compact problems at kafkagroup.assign_arrays, many per second.

Meant to run under the sanitizers (``tools/sanitize.sh run python tools/engine_garbage.py``), where a
memory error or undefined behaviour aborts the process; it also runs against the normal build. Each
case is derived from (seed, strategy, index) alone, so a failure is replayed with ``--replay I``.

Cases are mostly well-formed groups (so they reach the assignors, not only the validator): random
topic sizes including empty topics, uniform or mixed subscriptions in any order, owned claims with
duplicates, conflicts, stale generations and unsubscribed topics, member and replica racks; a share
of them then gets one corruption (an entry set to an edge value, an array cut or grown by one, an
optional array dropped or given alone). Every answer is checked: either InvalidGroupError with a
message, or an owner array of the right shape whose owners subscribe to the partition's topic.

    python tools/engine_garbage.py --cases 20000                 # every strategy, with and without racks
    python tools/engine_garbage.py --strategy sticky --replay 1234 --racks on
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from kafkagroup.engine import assign_arrays
from kafkagroup.errors import InvalidGroupError

from garbage_loop import CaseLoop, parser

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
I32 = np.iinfo(np.int32)
I64 = np.iinfo(np.int64)
OPTIONAL = ("owned_offsets", "owned_partitions", "generation", "member_rack", "replica_offsets", "replica_racks")


def offsets(lengths: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)


def well_formed(rng: np.random.Generator, racks: bool) -> dict[str, Any]:
    big = rng.random() < 0.1
    T = int(rng.integers(0, 12 if big else 6))
    counts = rng.integers(0, 40 if big else 9, size=T)
    counts[rng.random(T) < 0.15] = 0
    M = int(rng.integers(0, 30 if big else 7))
    P = int(counts.sum())
    base = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    uniform = rng.random() < 0.4
    common = rng.permutation(T)[: int(rng.integers(0, T + 1))] if T else np.zeros(0, np.int64)
    subs = []
    for _ in range(M):
        topics = common.copy() if uniform else rng.permutation(T)[: int(rng.integers(0, T + 1))]
        if rng.random() < 0.5:
            topics = np.sort(topics)
        subs.append(topics)
    args: dict[str, Any] = dict(partition_count=counts.astype(np.int32), sub_offsets=offsets([len(s) for s in subs]),
                                sub_topics=np.concatenate(subs).astype(np.int32) if subs else np.zeros(0, np.int32))
    if P and rng.random() < 0.7:
        owned = []
        for m in range(M):
            if rng.random() < 0.5 and len(subs[m]):   # claims of its own topics, mostly sorted
                parts = np.concatenate([np.arange(base[t], base[t + 1]) for t in subs[m]])
                parts = parts[rng.random(len(parts)) < rng.random()]
            else:                                     # anything, duplicates included
                parts = rng.integers(0, P, size=int(rng.integers(0, 6)))
            if rng.random() < 0.3:
                parts = rng.permutation(parts)
            owned.append(parts)
        args["owned_offsets"] = offsets([len(o) for o in owned])
        args["owned_partitions"] = np.concatenate(owned).astype(np.int32) if owned else np.zeros(0, np.int32)
        if rng.random() < 0.7:
            gens = rng.integers(-1, 4, size=M)
            if rng.random() < 0.05 and M:
                gens[rng.integers(0, M)] = rng.choice([I32.min, I32.max, -2])
            args["generation"] = gens.astype(np.int32)
    if racks:
        R = int(rng.integers(1, 5))
        if rng.random() < 0.85:
            mr = rng.integers(0, R + 1, size=M)
            args["member_rack"] = mr.astype(np.int32)
        if rng.random() < 0.85:
            lengths = rng.integers(0, 4, size=P)
            if rng.random() < 0.3:    # every partition on every rack (racks do not matter)
                lengths[:] = R
                flat = np.tile(np.arange(1, R + 1), P)
            else:
                flat = rng.integers(1, R + 1, size=int(lengths.sum()))
            args["replica_offsets"] = offsets(lengths.tolist())
            args["replica_racks"] = flat.astype(np.int32)
        if rng.random() < 0.8:    # dense ids in order of first appearance, as kafkagroup.model interns them
            given = [args[k] for k in ("member_rack", "replica_racks") if k in args]
            if given:
                flat = np.concatenate(given)
                ids, first = np.unique(flat[flat > 0], return_index=True)
                dense = np.zeros(R + 1, np.int32)
                dense[ids[np.argsort(first)]] = np.arange(1, len(ids) + 1)
                for k in ("member_rack", "replica_racks"):
                    if k in args:
                        args[k] = dense[args[k]]
    return args


EDGE = (-1, 0, 1, 2, 7, I32.max, I32.min, 2**31 - 2, -(2**31 - 1))
EDGE64 = (-1, 0, 1, 2**31, 2**31 - 1, 2**32, I64.max, I64.min, 2**62)
# A partition count near 2^31 is valid and allocates an owner array of that size: kept to values that
# are rejected (negative) or cheap; the 2^31-1 total limit has its own test.
COUNT_EDGE = (-1, I32.min, 0, 1, 7, 100)


def corrupt(rng: np.random.Generator, args: dict[str, Any]) -> str:
    """One corruption of one array; returns what was done (for the replay print)."""
    names = [k for k, v in args.items() if v is not None]
    kind = rng.integers(0, 5)
    if kind == 0 or kind == 1:
        name = str(rng.choice(names))
        a = args[name].copy()
        if len(a) == 0:
            return "none"
        i = int(rng.integers(0, len(a)))
        is64 = a.dtype == np.int64
        edges = EDGE64 if is64 else (COUNT_EDGE if name == "partition_count" else EDGE)
        v = int(rng.choice(edges)) if kind == 0 else int(a[i]) + int(rng.choice([-1, 1, len(a), -len(a)]))
        info = np.iinfo(a.dtype)
        v = min(max(v, info.min), info.max)
        a[i] = v
        args[name] = a
        return f"{name}[{i}] = {v}"
    if kind == 2:
        name = str(rng.choice(names))
        a = args[name]
        if rng.random() < 0.5 and len(a):
            args[name] = a[:-1].copy()
            return f"{name} cut by one"
        edges = COUNT_EDGE if name == "partition_count" else EDGE64 if a.dtype == np.int64 else EDGE
        args[name] = np.append(a, rng.choice(edges)).astype(a.dtype)
        return f"{name} grown by one"
    if kind == 3:
        name = str(rng.choice(OPTIONAL))
        if args.get(name) is not None:
            args[name] = None
            return f"{name} dropped"
        args[name] = rng.integers(-1, 5, size=int(rng.integers(0, 6))).astype(
            np.int64 if name.endswith("offsets") else np.int32)
        return f"{name} given alone"
    # a member count mismatch: sub_offsets of a different length than the per-member arrays
    a = args["sub_offsets"]
    args["sub_offsets"] = np.append(a, a[-1]) if rng.random() < 0.5 else (a[:-1].copy() if len(a) > 1 else a)
    return "sub_offsets member count changed"


def check(strategy: str, args: dict[str, Any], r) -> None:
    counts = args["partition_count"]
    P = int(np.asarray(counts, np.int64).sum())
    M = len(args["sub_offsets"]) - 1
    owner = r.owner
    assert owner.shape == (P,), owner.shape
    assert ((owner >= -1) & (owner < M)).all(), "owner out of range"
    topic_of = np.repeat(np.arange(len(counts)), counts)
    so, st = np.asarray(args["sub_offsets"]), np.asarray(args["sub_topics"])
    for part in np.flatnonzero(owner >= 0):
        m = owner[part]
        assert topic_of[part] in st[so[m]:so[m + 1]], f"partition {part} owned by non-subscriber {m}"
    w = r.withheld
    assert (np.diff(w) > 0).all() and ((w >= 0) & (w < P)).all(), "withheld not sorted / out of range"
    assert (owner[w] == -1).all(), "withheld partition has an owner"
    if strategy != "cooperative-sticky":
        assert len(w) == 0
    assert r.metrics.unassigned == 0 or M == 0, f"unassigned {r.metrics.unassigned}"


def one_case(seed: int, strategy: str, racks: bool, index: int) -> tuple[dict[str, Any], str]:
    rng = np.random.default_rng([seed, STRATEGIES.index(strategy), int(racks), index])
    args = well_formed(rng, racks)
    what = corrupt(rng, args) if rng.random() < 0.3 else "well-formed"
    return args, what


def run(strategy: str, args: dict[str, Any]) -> str:
    try:
        r = assign_arrays(strategy, args["partition_count"], args["sub_offsets"], args["sub_topics"],
                          **{k: args.get(k) for k in OPTIONAL})
    except InvalidGroupError as e:
        assert str(e), "empty error message"
        return "rejected"
    check(strategy, args, r)
    return "assigned"


def main() -> int:
    ap = parser(__doc__, cases_help="cases per strategy and rack mode")
    ap.add_argument("--strategy", choices=STRATEGIES, action="append")
    ap.add_argument("--racks", choices=("on", "off", "both"), default="both")
    opt = ap.parse_args()
    rack_modes = {"on": [True], "off": [False], "both": [False, True]}[opt.racks]
    strategies = opt.strategy or list(STRATEGIES)
    if opt.replay is not None:
        for strategy in strategies:
            for racks in rack_modes:
                args, what = one_case(opt.seed, strategy, racks, opt.replay)
                print(strategy, "racks" if racks else "no racks", what)
                for k, v in args.items():
                    print(f"  {k}={None if v is None else v.tolist()}")
                print("  ->", run(strategy, args))
        return 0
    loop = CaseLoop(opt.progress)
    for strategy in strategies:
        for racks in rack_modes:
            def case(i: int, strategy: str = strategy, racks: bool = racks) -> str:
                args, what = one_case(opt.seed, strategy, racks, i)
                try:
                    return run(strategy, args)
                except AssertionError as e:
                    raise AssertionError(f"({what}) {e}") from e
            tally, seconds = loop.run(f"{strategy} racks={racks}", opt.cases, case)
            print(f"{strategy:19s} racks={'on ' if racks else 'off'} {opt.cases} cases: {tally['assigned']} assigned, "
                  f"{tally['rejected']} rejected ({seconds:.1f}s)", flush=True)
    return loop.exit_status()


if __name__ == "__main__":
    sys.exit(main())
