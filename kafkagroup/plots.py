"""Pictures for the command line (matplotlib, headless Agg backend; imported only for ``--plot``).

- :func:`plot_assignment` (``kafkagroup assign --plot``): per strategy, each member's load before and
  after the rebalance: partitions kept (grey) and gained (blue) above the axis, partitions taken away
  (red) below it, the even share as a dashed line.
- :func:`plot_compare` (``kafkagroup spark-plan --compare --plot``): per strategy, how moves are
  distributed over the groups of a fleet (cumulative share of groups by partitions moved) and the
  fleet's total moves with the lower bound summed over the groups where the engine knows it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from kafkagroup.api import AssignmentResult
    from kafkagroup.groupfile import GroupFile

KEPT, GAINED, LOST = "#9aa5b1", "#2b7bba", "#d6604d"
LINE_STYLES = ("-", "--", "-.", ":")
STRATEGY_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")        # headless: never needs a display
    import matplotlib.pyplot as plt

    return plt


def member_moves(group: "GroupFile", result: "AssignmentResult") -> dict[str, np.ndarray]:
    """Per member (in the result's order): partitions before, kept, gained and lost.

    Before = partitions the member was the previous owner of (:attr:`GroupFile.previous_owner`,
    Kafka's rule); lost = those it no longer holds, so ``lost.sum()`` is the engine's ``moved``.
    """
    members = list(result.assignment)
    index = {m: i for i, m in enumerate(members)}
    before = np.zeros(len(members), dtype=np.int64)
    kept = np.zeros(len(members), dtype=np.int64)
    after = np.array([len(tps) for tps in result.assignment.values()], dtype=np.int64)
    new_owner = {tp: m for m, tps in result.assignment.items() for tp in tps}
    for (topic, partition), owner in group.previous_owner.items():
        spec = group.topics.get(topic)
        count = spec if isinstance(spec, int) else len(spec) if spec is not None else 0
        if not 0 <= partition < count:          # dropped by --lenient
            continue
        i = index[owner]
        before[i] += 1
        if new_owner.get((topic, partition)) == owner:
            kept[i] += 1
    return {"members": np.array(members, dtype=object), "before": before, "kept": kept,
            "gained": after - kept, "lost": before - kept, "after": after}


def plot_assignment(group: "GroupFile", rows: Sequence[tuple[str, "AssignmentResult"]], path: str,
                    title: str = "") -> None:
    """One panel per strategy: load per member before/after and the moves (see the module docstring)."""
    plt = _pyplot()
    from matplotlib.patches import Patch

    n = len(rows)
    members = len(rows[0][1].assignment) if rows else 0
    width = min(16.0, max(8.0, 0.28 * members + 3))
    fig, axes = plt.subplots(n, 1, figsize=(width, 1.2 + 2.4 * n), sharex=True, squeeze=False)
    labelled = members <= 40
    for ax, (name, result) in zip(axes[:, 0], rows):
        moves = member_moves(group, result)
        x = np.arange(members)
        if not labelled:                         # many members: order by load after, busiest first
            order = np.lexsort((-moves["lost"], -moves["after"]))
            moves = {k: v[order] for k, v in moves.items()}
        bar = 0.8 if members < 100 else 1.0
        ax.bar(x, moves["kept"], bar, color=KEPT, linewidth=0)
        ax.bar(x, moves["gained"], bar, bottom=moves["kept"], color=GAINED, linewidth=0)
        ax.bar(x, -moves["lost"], bar, color=LOST, linewidth=0)
        ax.axhline(0, color="black", linewidth=0.6)
        share = (result.metrics.assigned + result.metrics.withheld) / max(members, 1)
        ax.axhline(share, color="black", linewidth=0.8, linestyle="--")
        m = result.metrics
        bound = "unknown" if m.moved_lower_bound < 0 else f"{m.moved_lower_bound:,}"
        ax.set_title(f"{name}: {m.moved:,} moved (lower bound {bound}), {m.withheld:,} withheld, "
                     f"load {m.min_load}-{m.max_load}, balance_gap {m.balance_gap}", loc="left", fontsize=10)
        ax.set_ylabel("partitions")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        ax.spines[["top", "right"]].set_visible(False)
    last = axes[-1, 0]
    if labelled and rows:
        last.set_xticks(np.arange(members))
        last.set_xticklabels(list(rows[0][1].assignment), rotation=45 if members > 8 else 0, ha="right"
                             if members > 8 else "center", fontsize=8)
        last.set_xlabel("member")
    else:
        last.set_xlabel(f"{members:,} members, each panel ordered by load after the rebalance")
    handles = [Patch(color=KEPT, label="kept"), Patch(color=GAINED, label="gained (moved in or newly assigned)"),
               Patch(color=LOST, label="taken away (moved out or withheld)"),
               plt.Line2D([], [], color="black", linestyle="--", label="even share")]
    height = 1.2 + 2.4 * n
    fig.legend(handles=handles, loc="lower center", ncol=4, frameon=False, fontsize=9)
    fig.suptitle(f"{title}: partitions per member before -> after" if title else "partitions per member",
                 x=0.01, ha="left", fontsize=12)
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1 - 0.1 / height))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_compare(frame: Any, path: str, title: str = "") -> None:
    """`frame`: a pandas DataFrame with columns strategy, moved, moved_lower_bound, partitions_before,
    error (compare_strategies' output). Groups that failed (error not null) are left out."""
    plt = _pyplot()

    ok = frame[frame["error"].isna()]
    names = sorted(ok["strategy"].unique())
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    top = 1
    for i, name in enumerate(names):
        moved = np.sort(ok.loc[ok["strategy"] == name, "moved"].to_numpy(dtype=np.int64))
        if len(moved) == 0:
            continue
        top = max(top, int(moved[-1]))
        share = np.arange(1, len(moved) + 1) / len(moved)
        color = STRATEGY_COLORS[i % len(STRATEGY_COLORS)]
        # strategies often coincide (sticky and cooperative-sticky): styles keep every line visible
        left.step(np.concatenate([[0], moved]), np.concatenate([[0], share]), where="post", color=color,
                  linewidth=max(3.2 - 0.7 * i, 1.2), linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                  label=f"{name} (median {np.median(moved):g}, max {moved[-1]:,})")
    left.set_xscale("symlog", linthresh=1)
    left.set_xlim(0, top * 1.3)
    left.set_ylim(0, 1.02)
    left.set_xlabel("partitions moved in a group (symlog scale)")
    left.set_ylabel("share of groups moving at most that many")
    left.set_title("distribution of moves over the fleet's groups", loc="left", fontsize=11)
    left.grid(alpha=0.3)
    left.legend(loc="center left", fontsize=9, frameon=True, framealpha=0.9, edgecolor="none")

    totals = [int(ok.loc[ok["strategy"] == n, "moved"].sum()) for n in names]
    colors = [STRATEGY_COLORS[i % len(STRATEGY_COLORS)] for i in range(len(names))]
    bars = right.bar(names, totals, color=colors)
    for rect, total in zip(bars, totals):
        right.annotate(f"{total:,}", (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                       ha="center", va="bottom", fontsize=9, xytext=(0, 2), textcoords="offset points")
    labels = []
    for n in names:
        rows = ok[ok["strategy"] == n]
        known = rows["moved_lower_bound"].notna()
        bound = int(rows["moved_lower_bound"].sum())      # nulls (no bound known) are skipped
        if not known.any():
            labels.append(f"{n}\nno lower bound known")
        else:
            where = "all groups" if known.all() else f"{int(known.sum()):,} of {len(rows):,} groups"
            labels.append(f"{n}\nlower bound {bound:,}\n({where})")
    right.set_xticks(np.arange(len(names)))
    right.set_xticklabels(labels, fontsize=8)
    right.set_yscale("symlog", linthresh=1)       # totals differ by orders of magnitude between strategies
    right.set_ylim(0, max(max(totals, default=1), 1) * 4)
    right.set_ylabel("partitions moved, whole fleet (symlog scale)")
    right.set_title("total moves per strategy", loc="left", fontsize=11)
    right.grid(axis="y", alpha=0.3)
    right.set_axisbelow(True)
    for ax in (left, right):
        ax.spines[["top", "right"]].set_visible(False)
    failed = int(frame["error"].notna().sum())
    note = f"  ({failed:,} failed group rows left out)" if failed else ""
    fig.suptitle((title or "strategies compared") + note, x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
