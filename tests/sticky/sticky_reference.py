"""Pure-Python reference of the sticky objective, for the property tests (small groups only).

Formulated differently from the C++ engine on purpose: a partition-level cycle-cancelling over a
member graph with one super node, Bellman-Ford on a static snapshot, one cycle at a time.

Objective (lexicographic): first the square sum of member loads (its minimisers are the decreasingly
minimal load vectors), then `moved` = partitions held by someone other than their sticky owner.
Cost of a cycle through the super node S entering member u and leaving at member v (one partition
travels from u to v along the chain): W * 2 * (L_v - L_u + 1) + move costs, W > number of partitions.

Also: `exhaustive_optimum`, a dynamic programme over load vectors that gives the true optimum
(sorted load vector, minimal moved) by brute force, and `previous_owners`, Kafka's ownership rules.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

Assignment = dict[int, int]  # partition id -> member


def previous_owners(num_partitions: int, subs: Sequence[set[int]], topic_of: Sequence[int],
                    owned: Sequence[Sequence[int]], generation: Sequence[int]) -> list[int]:
    """Kafka's rules: claim valid only on a subscribed topic; highest generation wins; a tie between
    two different members at the highest generation voids the partition."""
    best: dict[int, tuple[int, int, bool]] = {}
    for m, claims in enumerate(owned):
        for p in set(claims):
            if topic_of[p] not in subs[m]:
                continue
            g = generation[m]
            cur = best.get(p)
            if cur is None or g > cur[0]:
                best[p] = (g, m, False)
            elif g == cur[0] and cur[1] != m:
                best[p] = (g, cur[1], True)
    out = [-1] * num_partitions
    for p, (_, m, void) in best.items():
        if not void:
            out[p] = m
    return out


def _cost(p: int, m: int, sticky: Sequence[int]) -> int:
    return 1 if sticky[p] >= 0 and sticky[p] != m else 0


def reference_assign(num_members: int, subs: Sequence[set[int]], topic_of: Sequence[int],
                     sticky: Sequence[int]) -> list[int]:
    """An optimal assignment (owner per partition, -1 when no member subscribes to its topic)."""
    P = len(topic_of)
    owner = [-1] * P
    load = [0] * num_members
    for p in range(P):
        eligible = [m for m in range(num_members) if topic_of[p] in subs[m]]
        if not eligible:
            continue
        owner[p] = sticky[p] if sticky[p] in eligible else eligible[0]
        load[owner[p]] += 1
    W = P + 1
    S = num_members
    while True:
        # edges: (a, b, weight, partition or None)
        edges: list[tuple[int, int, int, int | None]] = []
        for a in range(num_members):
            best: dict[int, tuple[int, int]] = {}
            for p in range(P):
                if owner[p] != a:
                    continue
                for b in range(num_members):
                    if b != a and topic_of[p] in subs[b]:
                        w = _cost(p, b, sticky) - _cost(p, a, sticky)
                        if b not in best or w < best[b][0]:
                            best[b] = (w, p)
            for b, (w, p) in best.items():
                edges.append((a, b, w, p))
            edges.append((S, a, -W * 2 * load[a], None))   # a partition leaves a (super node pays)
            edges.append((a, S, W * 2 * (load[a] + 1), None))
        cycle = _negative_cycle(num_members + 1, edges)
        if cycle is None:
            return owner
        for a, b, _, p in cycle:
            if p is not None:
                owner[p] = b
                load[a] -= 1
                load[b] += 1


def _negative_cycle(n: int, edges: list[tuple[int, int, int, int | None]]):
    dist = [0] * n
    pred: list[tuple[int, int, int, int | None] | None] = [None] * n
    x = -1
    for _ in range(n):
        x = -1
        for e in edges:
            a, b, w, _ = e
            if dist[a] + w < dist[b]:
                dist[b] = dist[a] + w
                pred[b] = e
                x = b
        if x < 0:
            return None
    for _ in range(n):
        x = pred[x][0]
    cycle = []
    v = x
    while True:
        e = pred[v]
        cycle.append(e)
        v = e[0]
        if v == x:
            break
    cycle.reverse()
    # A cycle through S only: moves happen on member-member edges; S edges carry the load change,
    # which the member-member edges already apply (the chain moves one partition from start to end).
    return cycle


def exhaustive_optimum(num_members: int, subs: Sequence[set[int]], topic_of: Sequence[int],
                       sticky: Sequence[int]) -> tuple[tuple[int, ...], int]:
    """(loads sorted descending, minimal moved) over every assignment of subscribed partitions."""
    states: dict[tuple[int, ...], int] = {tuple([0] * num_members): 0}
    for p in range(len(topic_of)):
        eligible = [m for m in range(num_members) if topic_of[p] in subs[m]]
        if not eligible:
            continue
        nxt: dict[tuple[int, ...], int] = {}
        for loads, moved in states.items():
            for m in eligible:
                key = loads[:m] + (loads[m] + 1,) + loads[m + 1:]
                c = moved + _cost(p, m, sticky)
                if c < nxt.get(key, 1 << 30):
                    nxt[key] = c
        states = nxt
    best_sq = min(sum(x * x for x in k) for k in states)
    best = [(tuple(sorted(k, reverse=True)), v) for k, v in states.items() if sum(x * x for x in k) == best_sq]
    vector = min(b[0] for b in best)
    return vector, min(v for k, v in best if k == vector)


def loads_of(owner: Sequence[int], num_members: int) -> list[int]:
    load = [0] * num_members
    for m in owner:
        if m >= 0:
            load[m] += 1
    return load


def moved_of(owner: Sequence[int], sticky: Sequence[int]) -> int:
    return sum(1 for p, m in enumerate(owner) if sticky[p] >= 0 and m != sticky[p])


def chain_improvable(owner: Sequence[int], num_members: int, subs: Sequence[set[int]],
                     topic_of: Sequence[int]) -> bool:
    """True when some chain of moves takes a partition to a member with >= 2 fewer (not optimal)."""
    load = loads_of(owner, num_members)
    adj: Mapping[int, set[int]] = {a: {b for p, h in enumerate(owner) if h == a
                                       for b in range(num_members) if b != a and topic_of[p] in subs[b]}
                                   for a in range(num_members)}
    for u in range(num_members):
        seen, stack = {u}, [u]
        while stack:
            x = stack.pop()
            if load[x] <= load[u] - 2:
                return True
            for y in adj[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
    return False
