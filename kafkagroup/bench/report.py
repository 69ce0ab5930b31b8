"""The bench's report: report.md (a table per strategy with a legend), report.json (every row, every
timed round) and report.png (time per scenario per peer on a log scale, and moves on churn rows)."""
from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from kafkagroup.bench.run import Row

LEGEND = ("time: median wall time of the assignor's own call (kafkagroup: assign_arrays; kafka-python: "
          "assign() on decoded metadata; Java: assign() timed inside the JVM after warm-up); "
          "ratio: peer time / kafkagroup time on the same row; valid: no partition twice, none to a "
          "non-subscriber, all subscribed partitions assigned (cooperative: or held back for revocation); "
          "spread: max - min partitions per member; balanced: Kafka's isBalanced (no member holds a partition "
          "of a topic that a member with 2 fewer partitions subscribes to); moves: partitions a current "
          "member owned before and no longer owns (cooperative: including those held back); "
          "> N s: stopped at the cap; n/a: the peer has no such assignor.")


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}" if value >= 1 else f"{value:.3f}"


def _ratio(value: float) -> str:
    return f"{value:,.0f}x" if value >= 100 else f"{value:,.1f}x"


def _baseline(rows: list[Row]) -> dict[tuple[str, str], float]:
    return {(r.scenario, r.strategy): r.median_ms for r in rows if r.peer.startswith("kafkagroup") and r.median_ms}


def markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    base = _baseline(rows)
    lines = ["# kafkagroup bench", "", f"{meta['machine']}; peers: {', '.join(meta['peers'])}.", ""]
    for note in meta.get("unavailable", []):
        lines.append(f"- {note}")
    for strategy in dict.fromkeys(r.strategy for r in rows):
        lines += ["", f"## {strategy}", "",
                  "| scenario | peer | time ms | ratio | valid | spread | balanced | moves |",
                  "|---|---|--:|--:|:-:|--:|:-:|--:|"]
        for r in (r for r in rows if r.strategy == strategy):
            q = r.quality
            time_text = _ms(r.median_ms) if r.status == "ok" else r.status
            ours = base.get((r.scenario, r.strategy))
            ratio = ("-" if r.peer.startswith("kafkagroup") or not ours else
                     _ratio(r.median_ms / ours) if r.median_ms else
                     f"> {float(r.status[2:-2]) * 1000 / ours:,.0f}x" if r.status.startswith(">") else "-")
            if q is None:
                lines.append(f"| {r.scenario} | {r.peer} | {time_text} | {ratio} | - | - | - | - |")
            else:
                valid = "yes" if q.valid else f"NO: {q.problem}"
                withheld = f" ({q.withheld} held back)" if q.withheld else ""
                lines.append(f"| {r.scenario} | {r.peer} | {time_text} | {ratio} | {valid} | {q.spread} | "
                             f"{'yes' if q.balanced else 'no'} | {q.moves if r.churn else '-'}{withheld} |")
    lines += ["", LEGEND, ""]
    return "\n".join(lines)


def write(rows: list[Row], meta: dict[str, Any], out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / "report.md", "json": out / "report.json", "png": out / "report.png"}
    paths["md"].write_text(markdown(rows, meta))
    paths["json"].write_text(json.dumps({"meta": meta, "rows": [r.as_dict() for r in rows]}, indent=1))
    plot(rows, meta, paths["png"])
    return paths


def machine() -> str:
    return f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}, {platform.system()}"


def plot(rows: list[Row], meta: dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    strategies = list(dict.fromkeys(r.strategy for r in rows))
    scenarios = list(dict.fromkeys(r.scenario for r in rows))
    churn = [s for s in scenarios if any(r.churn for r in rows if r.scenario == s)]
    peers = list(dict.fromkeys(r.peer for r in rows))
    colors = dict(zip(peers, ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"]))
    fig, axes = plt.subplots(2, len(strategies), figsize=(4.2 * len(strategies) + 1, 9.5), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]})
    width = 0.8 / max(1, len(peers))
    cell = {(r.scenario, r.strategy, r.peer): r for r in rows}
    for col, strategy in enumerate(strategies):
        ax, qx = axes[0][col], axes[1][col]
        y = np.arange(len(scenarios))
        top = max([r.median_ms for r in rows if r.median_ms] + [1.0])
        for k, peer in enumerate(peers):
            for i, scenario in enumerate(scenarios):
                r = cell.get((scenario, strategy, peer))
                if r is None:
                    continue
                pos = i + (k - (len(peers) - 1) / 2) * width
                if r.median_ms:
                    bad = r.quality is not None and not r.quality.valid
                    ax.barh(pos, r.median_ms, width, color=colors[peer], hatch="xx" if bad else None,
                            edgecolor="black" if bad else colors[peer])
                elif r.status.startswith(">"):
                    ax.barh(pos, float(r.status[2:-2]) * 1000, width, color="white", edgecolor=colors[peer],
                            hatch="//")
                    ax.text(float(r.status[2:-2]) * 1000, pos, " capped", va="center", fontsize=7)
                else:
                    ax.text(0.0011, pos, f" {r.status.split(':')[0]}", va="center", fontsize=7, color=colors[peer])
        ax.set_xscale("log")
        ax.set_xlim(0.001, top * 30)
        ax.set_yticks(y)
        ax.set_yticklabels(scenarios if col == 0 else [], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(strategy, fontsize=11, fontweight="bold")
        ax.set_xlabel("assign() time, ms (log scale)", fontsize=8)
        ax.grid(axis="x", which="major", alpha=0.3)
        # quality: moves on churn rows (fewer is better), per peer
        yq = np.arange(len(churn))
        for k, peer in enumerate(peers):
            for i, scenario in enumerate(churn):
                r = cell.get((scenario, strategy, peer))
                if r is None or r.quality is None:
                    continue
                pos = i + (k - (len(peers) - 1) / 2) * width
                qx.barh(pos, r.quality.moves, width, color=colors[peer])
                mark = "" if r.quality.valid and r.quality.balanced else (" invalid" if not r.quality.valid
                                                                            else " unbalanced")
                qx.text(r.quality.moves, pos, f" {r.quality.moves:,}{mark}", va="center", fontsize=6.5)
        qx.set_xscale("symlog", linthresh=1)  # 0 moves sits at the axis, still readable
        qx.set_xlim(0, max([r.quality.moves for r in rows if r.quality and r.churn] + [10]) * 20)
        qx.set_yticks(yq)
        qx.set_yticklabels(churn if col == 0 else [], fontsize=8)
        qx.invert_yaxis()
        qx.set_xlabel("partitions moved after churn (log above 1; fewer is better)", fontsize=8)
        qx.grid(axis="x", which="major", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[p]) for p in peers]
    fig.legend(handles, peers, loc="upper center", ncol=len(peers), frameon=False, fontsize=10,
               bbox_to_anchor=(0.5, 0.975))
    fig.suptitle("Consumer-group assignors on the same inputs: time (top) and moves on churn rows (bottom)",
                 fontsize=12, y=0.995)
    fig.text(0.5, 0.005, f"{meta['machine']}.  Hatched: stopped at the cap (//) or invalid output (xx).",
             ha="center", fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
