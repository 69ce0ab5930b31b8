"""Pictures of a simulation (matplotlib, headless Agg backend): :func:`plot_reports`.

One figure, one shared time axis (seconds since the group first settled):

- per strategy (or protocol: KIP-848 runs are labelled ``consumer/<assignor>``), a swimlane per member -- a
  bar while it owns at least one partition, a gap while it owns nothing (down, or stopped by a rebalance);
  each lane's label gives the member's partitions moved in and its time owning nothing (and its protocol at
  the end when the run mixes protocols); a black cross marks where the coordinator refused a member.  Up to
  :data:`MAX_LANES` members are drawn as bars; larger groups as a heat map (one row per member, the share of
  each time bin in which it owned something), so a thousand members still read as one picture;
- at the bottom, the share of partitions with a consuming owner, one line per strategy, with each
  strategy's partition-seconds without an owner in the legend.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Sequence

import numpy as np

from kafkagroup.sim.report import SimulationReport

__all__ = ["plot_reports", "MAX_LANES"]

MAX_LANES = 60          # more members than this: heat map instead of one bar lane per member
TIME_BINS = 1_000       # columns of the heat map
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
_STYLES = ["-", "--", ":", "-", "-.", "--"]      # eager strategies often coincide: tell them apart


def _owning_intervals(series: list[tuple[int, int]], end: int) -> list[tuple[int, int]]:
    """(start, end) ms stretches in which the member owned at least one partition."""
    out, since = [], None
    for t, count in series:
        if count and since is None:
            since = t
        elif not count and since is not None:
            out.append((since, t))
            since = None
    if since is not None:
        out.append((since, end))
    return out


def _member_order(names: Sequence[str]) -> list[str]:
    return sorted(names, key=lambda n: (len(n), n))


def _lanes(ax, report: SimulationReport, color: str, end: int) -> None:
    owned = report.timeline.owned if report.timeline else {}
    names = _member_order([m.name for m in report.member_reports])
    scale = 1000.0
    if len(names) <= MAX_LANES:
        for row, name in enumerate(names):
            spans = [(a / scale, (b - a) / scale) for a, b in _owning_intervals(owned.get(name, []), end) if b > a]
            ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=color, linewidth=0)
        for refusal in report.refusals:
            if refusal.member in names:
                ax.plot(refusal.at_ms / scale, names.index(refusal.member), marker="x", color="black",
                        markersize=7, linestyle="none")
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels([_lane_label(report, n) for n in names] if len(names) <= 24 else
                           [n if i % max(1, len(names) // 12) == 0 else "" for i, n in enumerate(names)],
                           fontsize=7)
        ax.set_ylim(len(names) - 0.5, -0.5)
    else:
        edges = np.linspace(0, end, TIME_BINS + 1)
        width = edges[1] - edges[0]
        grid = np.zeros((len(names), TIME_BINS))
        for row, name in enumerate(names):
            for a, b in _owning_intervals(owned.get(name, []), end):
                # coverage of [a, b) in every bin, vectorised over bins
                grid[row] += np.clip(np.minimum(edges[1:], b) - np.maximum(edges[:-1], a), 0, None) / width
        cmap = _white_to(color)
        ax.imshow(grid, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0, vmax=1,
                  extent=(0, end / scale, len(names) - 0.5, -0.5))
        ticks = np.linspace(0, len(names) - 1, 6).astype(int)
        ax.set_yticks(ticks)
        ax.set_yticklabels([names[i] for i in ticks], fontsize=7)
    ax.set_ylabel("member", fontsize=8)
    changes = "group epoch(s)" if report.group_protocol == "consumer" else "rebalance(s)"
    refused = f"; {len(report.refusals)} member(s) refused (x)" if report.refusals else ""
    ax.set_title(f"{report.label} ({report.rebalance_protocol.lower()}): ownership per member -- "
                 f"gap = owns nothing; {report.partition_unowned_s:,.0f} partition-s without owner, "
                 f"{report.generations} {changes}{refused}", fontsize=9, loc="left")


def _lane_label(report: SimulationReport, name: str) -> str:
    """``member-3  moved 12, idle 4.1 s`` (and `` [consumer]`` when the run mixes protocols)."""
    m = next((m for m in report.member_reports if m.name == name), None)
    if m is None:
        return name
    label = f"{name}  moved {m.moved_in}, idle {m.owned_nothing_ms / 1000:,.1f} s"
    mixed = report.refusals or "+" in report.group_protocol or len({x.protocol for x in report.member_reports}) > 1
    return label + (f" [{m.protocol}]" if mixed else "")


def _white_to(color: str):
    from matplotlib.colors import LinearSegmentedColormap
    return LinearSegmentedColormap.from_list("owning", ["#ffffff", color])


def _step_marks(ax, report: SimulationReport) -> None:
    for s in report.steps:
        ax.axvline(s.started_ms / 1000, color="0.4", linestyle="--", linewidth=0.8)


def plot_reports(reports: Sequence[SimulationReport], out: str | Path) -> Path:
    """Draw the reports (one per strategy, same scenario) into a PNG at ``out``; returns the path."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    if not reports:
        raise ValueError("nothing to plot: no reports")
    end = max(r.duration_ms for r in reports) or 1
    lane_heights = [min(4.0, 0.8 + 0.12 * len(r.member_reports)) for r in reports]
    heights = lane_heights + [2.4]
    fig, axes = plt.subplots(len(heights), 1, sharex=True, figsize=(12, sum(heights) + 1.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False,
                             layout="constrained")      # makes room for the wrapped title and the legend
    axes = axes[:, 0]
    for i, r in enumerate(reports):
        _lanes(axes[i], r, _COLORS[i % len(_COLORS)], end)
        _step_marks(axes[i], r)
    ax = axes[-1]
    for i, r in enumerate(reports):
        points = r.timeline.consuming if r.timeline else []
        if not points:
            continue
        t = np.array([p[0] for p in points] + [end], dtype=float) / 1000
        share = np.array([100.0 * c / n if n else 0.0 for _, c, n in points] + [0.0])
        share[-1] = share[-2]
        ax.step(t, share, where="post", color=_COLORS[i % len(_COLORS)], linewidth=1.6,
                linestyle=_STYLES[i % len(_STYLES)],
                label=f"{r.label}: {r.partition_unowned_s:,.0f} partition-s without owner, "
                      f"longest pause {r.max_partition_pause_ms / 1000:,.1f} s")
    _step_marks(ax, reports[0])
    ax.set_ylabel("partitions with a\nconsuming owner (%)", fontsize=8)
    ax.set_xlabel("simulated time since the group settled (s); dashed lines: scenario steps")
    low = min((100.0 * c / n for r in reports for _, c, n in (r.timeline.consuming if r.timeline else []) if n),
              default=0.0)
    ax.set_ylim(max(0.0, low - 5), 101)
    ax.set_xlim(0, end / 1000)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.32), ncol=2, frameon=False)
    r0 = reports[0]
    title = f"{r0.name}: {r0.members} members at the end, {r0.partitions} partitions"
    if r0.description:
        title += "\n" + "\n".join(textwrap.wrap(r0.description, 150)[:3])
    fig.suptitle(title, fontsize=10)
    path = Path(out)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
