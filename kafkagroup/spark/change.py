"""What-if changes to one group, applied to its compact problem (no names, no per-partition Python).

``Change(remove_members=0.1)`` answers "what moves if the group loses 10% of its members?".
Starting from an assignment ``owner[]`` of the group as it is, :meth:`Change.apply` builds the next
rebalance's problem:

- removed members: chosen at random (seeded per group, see :func:`kafkagroup.spark.executor.group_seed`),
  at most all but one; their partitions are orphaned;
- added members: new dynamic members that copy the subscription (and rack) of a random remaining
  member; their member ids sort after every existing one (new ids are appended to MemberInfo order),
  and they own nothing;
- added partitions: every topic grows by ``add_partitions`` (a count, or a fraction of its size,
  rounded up); new partitions have no replica racks;
- every remaining member claims what it owned in ``owner[]`` with generation 1 (the generation that
  produced ``owner[]``), as a member rejoining after a rebalance does.

An ``int`` means a count, a ``float`` a fraction of the group's current size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kafkagroup.spark.arrow_builder import concat_ranges, offsets_of

Arrays = dict[str, "np.ndarray | None"]


def _amount(value: int | float, size: int) -> int:
    if isinstance(value, bool) or value < 0:
        raise ValueError(f"change amounts must be non-negative numbers, got {value!r}")
    if isinstance(value, float):
        return int(math.ceil(value * size - 1e-9))
    return int(value)


@dataclass(frozen=True)
class Change:
    """A change to every group: members removed / added, partitions added (see the module docstring)."""

    remove_members: int | float = 0
    add_members: int | float = 0
    add_partitions: int | float = 0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("remove_members", "add_members", "add_partitions"):
            _amount(getattr(self, name), 1)
        if isinstance(self.remove_members, float) and self.remove_members > 1:
            raise ValueError(f"remove_members is a fraction of the group's members, at most 1.0; "
                             f"got {self.remove_members!r}")

    def describe(self) -> str:
        parts = []
        for name, label in (("remove_members", "members removed"), ("add_members", "members added"),
                            ("add_partitions", "partitions added per topic")):
            value = getattr(self, name)
            if name == "remove_members" and value == 1.0 and isinstance(value, float):
                parts.append("all members but one removed")       # a group keeps at least one member
            elif value:
                parts.append(f"{value:.0%} {label}" if isinstance(value, float) else f"{value} {label}")
        return ", ".join(parts) or "no change"

    def choose_members(self, num_members: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(members kept, ascending; the member each added member copies), drawn from `rng`."""
        removed = min(_amount(self.remove_members, num_members), max(num_members - 1, 0))
        keep = np.ones(num_members, dtype=bool)
        if removed:
            keep[rng.choice(num_members, removed, replace=False)] = False
        kept = np.flatnonzero(keep)
        added = _amount(self.add_members, num_members) if len(kept) else 0
        templates = kept[rng.integers(0, len(kept), added)] if added else np.zeros(0, dtype=np.int64)
        return kept, templates

    def apply(self, arrays: Arrays, owner: np.ndarray, rng: np.random.Generator) -> Arrays:
        """The problem of the rebalance after this change, given the current assignment ``owner[]``."""
        partition_count = np.asarray(arrays["partition_count"], dtype=np.int64)
        sub_offsets = np.asarray(arrays["sub_offsets"], dtype=np.int64)
        sub_topics = np.asarray(arrays["sub_topics"], dtype=np.int32)
        num_members = len(sub_offsets) - 1

        kept, templates = self.choose_members(num_members, rng)
        source = np.concatenate([kept, templates])          # member of the old problem each new member copies
        new_members = len(source)

        sub_len = np.diff(sub_offsets)
        new_sub_offsets = offsets_of(sub_len[source])
        new_sub_topics = sub_topics[concat_ranges(sub_offsets[:-1][source], sub_len[source])]

        new_count = partition_count + _grow(self.add_partitions, partition_count)
        old_base, new_base = offsets_of(partition_count), offsets_of(new_count)

        # remaining members claim what they own now, in partition order, at new global ids
        new_index = np.full(num_members, -1, dtype=np.int64)
        new_index[kept] = np.arange(len(kept))
        parts = np.flatnonzero(owner >= 0)
        claimant = new_index[owner[parts]]
        parts, claimant = parts[claimant >= 0], claimant[claimant >= 0]
        topic = np.searchsorted(old_base, parts, side="right") - 1
        new_ids = new_base[topic] + (parts - old_base[topic])
        order = np.argsort(claimant, kind="stable")
        owned_offsets = offsets_of(np.bincount(claimant, minlength=new_members)[:new_members])
        generation = np.where(np.arange(new_members) < len(kept), 1, -1).astype(np.int32)

        out: Arrays = {
            "partition_count": new_count.astype(np.int32), "sub_offsets": new_sub_offsets,
            "sub_topics": new_sub_topics, "owned_offsets": owned_offsets,
            "owned_partitions": new_ids[order].astype(np.int32), "generation": generation,
            "member_rack": None, "replica_offsets": None, "replica_racks": None,
        }
        if arrays.get("member_rack") is not None:
            out["member_rack"] = np.asarray(arrays["member_rack"], dtype=np.int32)[source]
        if arrays.get("replica_offsets") is not None:
            old_off = np.asarray(arrays["replica_offsets"], dtype=np.int64)
            lengths = np.zeros(int(new_base[-1]), dtype=np.int64)
            old_parts = np.arange(int(old_base[-1]))
            old_topic = np.searchsorted(old_base, old_parts, side="right") - 1
            lengths[new_base[old_topic] + (old_parts - old_base[old_topic])] = np.diff(old_off)
            out["replica_offsets"] = offsets_of(lengths)      # the old->new id map is monotone: racks keep their order
            out["replica_racks"] = arrays["replica_racks"]
        return out


def _grow(amount: int | float, counts: np.ndarray) -> np.ndarray:
    """Partitions added to each topic (same rounding as _amount)."""
    if isinstance(amount, float):
        return np.ceil(amount * counts - 1e-9).astype(np.int64)
    return np.full(len(counts), int(amount), dtype=np.int64)
