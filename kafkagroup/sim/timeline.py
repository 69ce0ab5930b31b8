"""What the pictures and the time-based figures need: per member, how many partitions it owned over time, and
for the group, how many partitions had a consuming owner.

Fed by the harness after every ownership change (the members' callbacks, a crash, a clean stop); costs
O(partitions in the change) per change and keeps one (time, count) pair per change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from kafkagroup.client.ledger import OwnershipLedger
from kafkagroup.structs import TopicPartition

__all__ = ["OwnershipTimeline"]


@dataclass
class OwnershipTimeline:
    """``owned[name]``: (time ms, partitions owned from then on); ``consuming``: (time ms, partitions with at
    least one owner, partitions that exist)."""

    owned: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    consuming: list[tuple[int, int, int]] = field(default_factory=list)
    _consuming_now: int = 0
    _total_now: int = 0

    def set_total(self, now: int, total: int) -> None:
        self._total_now = total
        self._point(now)

    def before_assign(self, ledger: OwnershipLedger, partitions: Iterable[TopicPartition]) -> int:
        """Partitions of the assignment that have no owner yet (call before the ledger sees it)."""
        owners = ledger.owners
        return sum(1 for tp in partitions if not owners.get(tp))

    def after_change(self, ledger: OwnershipLedger, now: int, member: str, gained: int,
                     released: Iterable[TopicPartition] = ()) -> None:
        owners = ledger.owners
        lost_owner = sum(1 for tp in released if tp in owners and not owners[tp])
        self._consuming_now += gained - lost_owner
        st = ledger.members.get(member)
        count = len(st.owned) if st is not None else 0
        series = self.owned.setdefault(member, [])
        if series and series[-1][0] == now:
            series[-1] = (now, count)
        elif not series or series[-1][1] != count:
            series.append((now, count))
        self._point(now)

    def _point(self, now: int) -> None:
        point = (now, self._consuming_now, self._total_now)
        if self.consuming and self.consuming[-1][0] == now:
            self.consuming[-1] = point
        elif not self.consuming or self.consuming[-1][1:] != point[1:]:
            self.consuming.append(point)

    def window(self, t0: int, t1: int) -> "OwnershipTimeline":
        """The part from ``t0`` to ``t1`` with times relative to ``t0`` (each series starts with its value at t0)."""
        out = OwnershipTimeline()
        for name, series in self.owned.items():
            clipped = _clip([(t, (c,)) for t, c in series], t0, t1)
            if clipped:
                out.owned[name] = [(t, v[0]) for t, v in clipped]
        out.consuming = [(t, c, n) for t, (c, n) in _clip([(t, (c, n)) for t, c, n in self.consuming], t0, t1)]
        return out


def _clip(series: list[tuple[int, tuple]], t0: int, t1: int) -> list[tuple[int, tuple]]:
    before = [v for t, v in series if t <= t0]
    out = [(0, before[-1])] if before else []
    out.extend((t - t0, v) for t, v in series if t0 < t <= t1)
    return out
