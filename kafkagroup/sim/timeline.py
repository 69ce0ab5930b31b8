"""What the pictures and the time-based figures need: per member, how many partitions it owned over time, and
for the group, how many partitions had a consuming owner.

Fed by the harness after every ownership change (the members' callbacks, a crash, a clean stop) with counts
the ownership ledger returns; costs O(1) per change and keeps one (time, count) pair per change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
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

    def after_change(self, now: int, member: str, owned: int, consuming_delta: int) -> None:
        """``member`` owns ``owned`` partitions from ``now`` on; ``consuming_delta`` partitions gained
        (positive) or lost (negative) their only owner."""
        self._consuming_now += consuming_delta
        series = self.owned.setdefault(member, [])
        if series and series[-1][0] == now:
            series[-1] = (now, owned)
        elif not series or series[-1][1] != owned:
            series.append((now, owned))
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
