"""One checker for every peer's output: validity, balance and moves, computed the same way (numpy) from
the group and a per-member list of global partition ids, whoever produced it.

- valid: no partition given twice, none to a member not subscribed to its topic, none out of range, and
  every partition of a subscribed topic assigned - except, for a cooperative strategy, partitions that a
  current member owned before and that are held back for revocation (counted as ``withheld``).
- spread: max - min partitions per member (over members subscribed to anything).
- balanced: Kafka's own criterion (AbstractStickyAssignor.isBalanced): no member holds a partition of a
  topic that a member with at least 2 fewer partitions subscribes to; per topic, the most loaded holder
  against the least loaded subscriber.
- load_sq: sum of squared loads; with the same partitions assigned, lower is more even (it separates
  two assignments that both pass isBalanced, e.g. spreads 4 and 5 under different subscriptions).
- moves: partitions a current member owned in the input (its claim survived the generation rules of
  the engine: see :func:`previous_owner`) and does not own now. Partitions of members that left are not
  counted (they have no previous owner in the group).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from kafkagroup.model import CompactGroup


class InvalidAssignment(ValueError):
    """The assignment breaks a rule every assignor must keep (the message names member and partition)."""


@dataclass(frozen=True)
class Quality:
    valid: bool
    problem: str          # "" when valid, else the first rule broken
    assigned: int
    withheld: int
    spread: int           # max - min load
    max_load: int
    min_load: int
    balanced: bool
    moves: int
    load_sq: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def previous_owner(group: CompactGroup) -> np.ndarray:
    """int32[P]: the member that owned each partition in the input, -1 if none. Of two claims the one of
    the higher generation wins (Kafka's sticky rule; equal generations: the first member)."""
    total = int(group.partition_count.sum())
    owner = np.full(total, -1, dtype=np.int32)
    if group.owned_offsets is None:
        return owner
    counts = np.diff(group.owned_offsets)
    claimer = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    gen = (group.generation[claimer] if group.generation is not None else np.zeros(len(claimer), np.int32))
    order = np.lexsort((-claimer, gen))  # ascending generation, later members first: last write wins
    owner[group.owned_partitions[order]] = claimer[order]
    return owner


def to_owner(group: CompactGroup, per_member: list[np.ndarray]) -> np.ndarray:
    """owner[] from per-member lists, raising InvalidAssignment on a partition given twice or out of range."""
    total = int(group.partition_count.sum())
    owner = np.full(total, -1, dtype=np.int32)
    for member, parts in enumerate(per_member):
        parts = np.asarray(parts, dtype=np.int64)
        if parts.size and (parts.min() < 0 or parts.max() >= total):
            raise InvalidAssignment(f"member {group.members[member]}: partition id out of range")
        taken = owner[parts] >= 0
        if taken.any() or np.unique(parts).size != parts.size:
            p = int(parts[np.argmax(taken)]) if taken.any() else int(parts[0])
            names, numbers = group.partition_names(np.array([p]))
            raise InvalidAssignment(f"partition {names[0]}-{numbers[0]} given twice "
                                    f"(to {group.members[member]} and another member)")
        owner[parts] = member
    return owner


def check(group: CompactGroup, per_member: list[np.ndarray], *, cooperative: bool = False) -> Quality:
    """The quality of one assignment of `group`; an invalid one comes back with valid=False and the reason."""
    m, t_count = len(group.members), len(group.topics)
    try:
        owner = to_owner(group, per_member)
    except InvalidAssignment as e:
        return Quality(False, str(e), 0, 0, 0, 0, 0, False, 0, 0)
    topic_of = np.repeat(np.arange(t_count, dtype=np.int32), group.partition_count)
    subscribed = np.zeros((m, t_count), dtype=bool)
    sub_member = np.repeat(np.arange(m), np.diff(group.sub_offsets))
    subscribed[sub_member, group.sub_topics] = True
    assigned = np.flatnonzero(owner >= 0)
    problem = ""
    wrong = ~subscribed[owner[assigned], topic_of[assigned]]
    if wrong.any():
        p = int(assigned[np.argmax(wrong)])
        names, numbers = group.partition_names(np.array([p]))
        problem = f"{names[0]}-{numbers[0]} given to {group.members[owner[p]]}, which does not subscribe to it"
    wanted = subscribed.any(axis=0)[topic_of]
    missing = np.flatnonzero(wanted & (owner < 0))
    before = previous_owner(group)
    withheld = 0
    if cooperative:  # held back while a current owner revokes it
        held = before[missing] >= 0
        withheld = int(held.sum())
        missing = missing[~held]
    if not problem and missing.size:
        names, numbers = group.partition_names(missing[:1])
        problem = f"{missing.size} partitions of subscribed topics unassigned, e.g. {names[0]}-{numbers[0]}"
    active = subscribed.any(axis=1)
    load = np.bincount(owner[assigned], minlength=m)
    loads = load[active] if active.any() else np.zeros(1, dtype=np.int64)
    # Kafka's isBalanced, per topic: the most loaded member holding it vs the least loaded subscriber
    # (withheld partitions count for the member they go to eventually, unknown here: judged as assigned).
    big = np.iinfo(np.int64).max
    held_max = np.full(t_count, -1, dtype=np.int64)
    np.maximum.at(held_max, topic_of[assigned], load[owner[assigned]])
    sub_min = np.where(subscribed, load[:, None], big).min(axis=0) if m else np.full(t_count, big)
    balanced = bool(not np.any((held_max >= 0) & (held_max - sub_min >= 2)))
    was = np.flatnonzero(before >= 0)
    moves = int(np.count_nonzero(owner[was] != before[was]))
    return Quality(not problem, problem, int(assigned.size), withheld, int(loads.max() - loads.min()),
                   int(loads.max()), int(loads.min()), balanced, moves, int(np.sum(loads.astype(np.int64) ** 2)))
