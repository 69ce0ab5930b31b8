"""SHA-256 digests of what the engine and the leader path produce, to run before and after a change that
must not change any assignment (issue 26: speed work). Prints one digest per section; equal digests
before and after mean equal outputs.

- arrays: owner, withheld and metrics of every strategy on 43 generated groups (uniform, random
  subscriptions, one member on one topic), with and without racks, fresh and after three kinds of
  churn, plus the 1M x 2,000 reference group (kafkagroup.assign_arrays).
- leader: decode_group's arrays and encode_assignments' bytes of every strategy on churned groups sent
  as JoinGroup metadata in MemberInfo order and in a shuffled join order (the two shapes of
  benches/bench_protocol.py, smaller).
- fleet: the fleet loop's Arrow tables (assignment and metrics rows without timings) on 2,000 small
  groups, 1 and 2 threads, range and cooperative-sticky.
- server: owner and metrics of server-uniform and server-range on generated groups (uniform, random and
  quarter-overlapping subscriptions, one member on one topic), fresh and over four rounds of churn
  (members leaving and joining, subscriptions changed under previous claims), homogeneous ones also in
  the shared form (one subscription row).

Usage: .venv/bin/python tools/engine_digest.py [arrays|leader|fleet|server ...]   (all four: ~1 minute)
"""
from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))

import kafkagroup  # noqa: E402
from kafkagroup.model import CompactGroup  # noqa: E402
from kafkagroup.scenarios import last_member_on_one_topic, next_generation, random_group, uniform_group  # noqa: E402

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def arrays_digest() -> str:
    from bench_sticky import with_racks

    cases = []
    for seed in range(6):
        for make in (lambda: uniform_group(7, 13, 5), lambda: uniform_group(50, 40, 37),
                     lambda: random_group(30, 20, 40, seed=seed), lambda: random_group(200, 50, 500, seed=seed),
                     lambda: last_member_on_one_topic(20, 30, 11), lambda: uniform_group(100, 100, 100),
                     lambda: random_group(5, 3, 9, fraction=0.3, seed=seed)):
            cases.append((seed, make()))
    cases.append((0, uniform_group(500, 2000, 2000)))
    h = hashlib.sha256()

    def add(r):
        h.update(r.owner.tobytes())
        h.update(r.withheld.tobytes())
        h.update(repr(r.metrics).encode())

    for seed, g in cases:
        for racks in (False, True):
            a = g.arrays() if not racks else with_racks(g, g.arrays(), seed=seed)
            for strategy in STRATEGIES:
                r = kafkagroup.assign_arrays(strategy, **a)
                add(r)
                for remove, add_members in ((len(g.members) // 10, 0), (0, 3), (2, 2)):
                    ng = next_generation(g, r.owner, remove=remove, add=add_members, seed=seed)
                    b = ng.arrays() if not racks else with_racks(ng, ng.arrays(), seed=seed)
                    for s2 in STRATEGIES:
                        add(kafkagroup.assign_arrays(s2, **b))
    return h.hexdigest()


def leader_digest() -> str:
    from bench_protocol import _member_subscription

    from kafkagroup.protocol import encode_subscription
    from kafkagroup.protocol.leader import decode_group, encode_assignments
    from kafkagroup.structs import TopicPartition

    h = hashlib.sha256()
    for strategy in STRATEGIES:
        for topics, partitions, members in ((20, 50, 30), (100, 200, 400), (3, 7, 11)):
            group = uniform_group(topics=topics, partitions=partitions, members=members)
            first = kafkagroup.assign_arrays(strategy, **group.arrays())
            g = next_generation(group, first.owner, remove=members // 10, add=members // 10, generation=3, seed=5)
            entries = []
            for i, mid in enumerate(g.members):
                subs = [g.topics[t] for t in g.sub_topics[g.sub_offsets[i]:g.sub_offsets[i + 1]].tolist()]
                tn, pn = g.partition_names(g.owned_partitions[g.owned_offsets[i]:g.owned_offsets[i + 1]])
                owned = [TopicPartition(t, p) for t, p in zip(tn, pn)]
                sub = _member_subscription(strategy, subs, owned, int(g.generation[i]))
                entries.append((mid, None, encode_subscription(sub, 3)))
            metadata = dict(zip(g.topics, g.partition_count.tolist()))
            shuffled = list(entries)
            random.Random(members).shuffle(shuffled)
            for order in (entries, shuffled):
                decoded = decode_group(order, metadata, assignor=strategy)
                for name, value in sorted(decoded.arrays().items()):
                    h.update(name.encode())
                    h.update(repr(None if value is None else np.asarray(value).tolist()).encode())
                h.update(repr(decoded.members).encode())
                result = kafkagroup.assign_arrays(strategy, **decoded.arrays())
                for member, blob in sorted(encode_assignments(decoded, result.owner).items()):
                    h.update(member.encode())
                    h.update(blob)
    return h.hexdigest()


def fleet_digest() -> str:
    from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet

    fleet = generate_fleet(2000, seed=7, members=(2, 12), partitions=(30, 150))
    h = hashlib.sha256()
    for strategy in ("range", "cooperative-sticky"):
        for threads in (1, 2):
            for batch_groups in (None, 300):
                assigned, metrics = assign_fleet_local(fleet.groups, fleet.topics, strategy, threads=threads,
                                                       batch_groups=batch_groups)
                h.update(repr(assigned.to_pydict()).encode())
                h.update(repr(metrics.drop_columns([c for c in metrics.column_names if "us" in c.split("_")])
                              .to_pydict()).encode())
    return h.hexdigest()


def quarter_group(topics: int, partitions: int, members: int) -> CompactGroup:
    """benches/bench_server_assignors.py's heterogeneous shape: member i subscribes to t with t % 4 != i % 4."""
    g = uniform_group(topics, partitions, members)
    rows = [np.array([t for t in range(topics) if t % 4 != i % 4], dtype=np.int32) for i in range(members)]
    offsets = np.zeros(members + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    g.sub_offsets, g.sub_topics = offsets, np.concatenate(rows)
    return g


def server_digest() -> str:
    h = hashlib.sha256()

    def add(r):
        h.update(r.owner.tobytes())
        h.update(repr(r.metrics).encode())

    def shared_arrays(g: CompactGroup) -> dict | None:
        rows = {g.sub_topics[g.sub_offsets[i]:g.sub_offsets[i + 1]].tobytes() for i in range(len(g.members))}
        if len(rows) != 1:
            return None
        a = g.arrays()
        a.update(sub_offsets=None, sub_topics=g.sub_topics[g.sub_offsets[0]:g.sub_offsets[1]],
                 num_members=len(g.members))
        return a

    cases = []
    for seed in range(4):
        cases += [(seed, uniform_group(7, 13, 5)), (seed, uniform_group(50, 40, 37)),
                  (seed, random_group(30, 20, 40, seed=seed)), (seed, random_group(200, 50, 500, seed=seed)),
                  (seed, last_member_on_one_topic(20, 30, 11)), (seed, random_group(5, 3, 9, fraction=0.3, seed=seed)),
                  (seed, quarter_group(40, 25, 300)), (seed, uniform_group(100, 100, 1000))]
    cases.append((0, quarter_group(1000, 10, 1000)))
    for strategy in ("server-uniform", "server-range"):
        for seed, g in cases:
            for step, (remove, add_members) in enumerate(((0, 0), (len(g.members) // 10, 0), (0, 3), (2, 2), (1, 1))):
                a = g.arrays()
                r = kafkagroup.assign_arrays(strategy, **a)
                add(r)
                shared = shared_arrays(g)
                if shared is not None:
                    add(kafkagroup.assign_arrays(strategy, **shared))
                if step == 3 and len(g.members) > 1:
                    # Subscriptions change under the claims: the previous owner of another subscription pattern.
                    other = random_group(len(g.topics), g.partition_count, len(g.members), fraction=0.6, seed=seed + 9)
                    add(kafkagroup.assign_arrays(strategy, **next_generation(other, r.owner, seed=seed).arrays()))
                g = next_generation(g, r.owner, remove=remove, add=add_members, seed=seed + step)
    return h.hexdigest()


SECTIONS = {"arrays": arrays_digest, "leader": leader_digest, "fleet": fleet_digest, "server": server_digest}

if __name__ == "__main__":
    for section in sys.argv[1:] or list(SECTIONS):
        print(f"{section:<8} {SECTIONS[section]()}", flush=True)
