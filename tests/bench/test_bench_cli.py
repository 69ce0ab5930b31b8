"""`kafkagroup bench`: the checker catches wrong assignments, and a --quick run writes a real report."""
from __future__ import annotations

import json

import numpy as np
import pytest

import kafkagroup
from kafkagroup.bench.checker import check
from kafkagroup.bench.peers import split_owner
from kafkagroup.cli import main
from kafkagroup.scenarios import next_generation, random_group, uniform_group


def _sticky(group):
    return split_owner(kafkagroup.assign_arrays("sticky", **group.arrays()).owner, len(group.members))


def test_checker_accepts_engine_output_and_agrees_with_its_metrics():
    group = random_group(topics=20, partitions=7, members=15, seed=3)
    before = kafkagroup.assign_arrays("sticky", **group.arrays()).owner
    group = next_generation(group, before, remove=3, add=2, seed=1)
    result = kafkagroup.assign_arrays("sticky", **group.arrays())
    q = check(group, split_owner(result.owner, len(group.members)))
    assert q.valid and q.balanced
    assert (q.moves, q.max_load, q.min_load, q.assigned) == (result.metrics.moved, result.metrics.max_load,
                                                             result.metrics.min_load, result.metrics.assigned)


def test_checker_rejects_wrong_assignments():
    group = random_group(topics=6, partitions=4, members=5, fraction=0.5, seed=9)
    good = _sticky(group)
    assert check(group, good).valid
    # a partition given twice
    twice = [p.copy() for p in good]
    donor = next(i for i, p in enumerate(twice) if len(p))
    taker = (donor + 1) % len(twice)
    twice[taker] = np.append(twice[taker], twice[donor][0])
    q = check(group, twice)
    assert not q.valid and "given twice" in q.problem
    # a partition dropped
    dropped = [p.copy() for p in good]
    dropped[donor] = dropped[donor][1:]
    q = check(group, dropped)
    assert not q.valid and "unassigned" in q.problem
    # a partition moved to a member that does not subscribe to its topic
    topic_of = np.repeat(np.arange(len(group.topics)), group.partition_count)
    subs = [set(group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]].tolist()) for i in range(5)]
    for src, parts in enumerate(good):
        bad = next(((p, dst) for p in parts for dst in range(5) if topic_of[p] not in subs[dst]), None)
        if bad:
            break
    assert bad is not None
    p, dst = bad
    wrong = [q_.copy() for q_ in good]
    wrong[src] = wrong[src][wrong[src] != p]
    wrong[dst] = np.append(wrong[dst], p)
    q = check(group, wrong)
    assert not q.valid and "does not subscribe" in q.problem
    # an out-of-range id
    q = check(group, [np.array([10_000])] + good[1:])
    assert not q.valid and "out of range" in q.problem


def test_checker_balance_and_moves():
    group = uniform_group(topics=1, partitions=10, members=2)
    q = check(group, [np.arange(8), np.arange(8, 10)])
    assert q.valid and not q.balanced and q.spread == 6
    owned = kafkagroup.assign_arrays("range", **group.arrays()).owner  # 0-4 -> m0, 5-9 -> m1
    after = next_generation(group, owned, generation=4)
    q = check(after, [np.arange(0, 10, 2), np.arange(1, 10, 2)])
    assert q.valid and q.balanced and q.moves == 4  # 1, 3 leave m0; 6, 8 leave m1
    # cooperative: partitions held back are allowed only if someone still owns them
    q = check(after, [np.arange(0, 5), np.arange(5, 9)], cooperative=True)
    assert q.valid and q.withheld == 1 and q.moves == 1  # 9: m1 revokes it first
    fresh = uniform_group(topics=1, partitions=10, members=2)
    q = check(fresh, [np.arange(0, 5), np.arange(5, 9)], cooperative=True)
    assert not q.valid


def test_bench_quick_writes_report(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["bench", "--quick", "--strategies", "range,sticky", "--cap", "0.5", "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    data = json.loads((out / "report.json").read_text())
    png = (out / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 30_000
    peers = data["meta"]["peers"]
    assert any(p.startswith("kafka-python") for p in peers) and any(p.startswith("Java kafka-clients 3.") for p in peers)
    rows = data["rows"]
    assert {r["strategy"] for r in rows} == {"range", "sticky"}
    assert len({r["scenario"] for r in rows}) == 5
    for r in rows:
        if r["status"] == "ok":
            assert r["quality"]["valid"], r
            assert r["median_ms"] > 0
        else:
            assert r["status"].startswith(("> 0.5 s", "n/a", "fails")), r
    # range is deterministic: every peer that answered gives the same quality on the same input
    by_row: dict = {}
    for r in rows:
        if r["strategy"] == "range" and r["quality"]:
            by_row.setdefault(r["scenario"], set()).add((r["quality"]["spread"], r["quality"]["moves"]))
    assert all(len(v) == 1 for v in by_row.values())
    assert "| 10k uniform x100 -10 | Java kafka-clients 3." in md and "balanced" in md


def test_bench_rejects_bad_options(capsys):
    assert main(["bench", "--strategies", "rnage"]) == 2
    assert "unknown strategy rnage" in capsys.readouterr().err
    assert main(["bench", "--cap", "0"]) == 2
    assert main(["bench", "--quick", "--java-jars", "/nonexistent", "--strategies", "range", "--cap", "0.2",
                 "--out", "/tmp/kafkagroup-bench-nojars"]) == 0
    err = capsys.readouterr().err
    assert "Java: not available" in err and "make kafka-jars" in err


def test_grid_judges_withholding_by_the_assignors_protocols():
    """After churn, cooperative-sticky withholds the partitions changing owner: the grid asks the assignor
    whether it runs COOPERATIVE and counts them as withheld, where the same holes from an eager assignor's
    result would be an invalid assignment."""
    from kafkagroup.bench.grid import Scenario
    from kafkagroup.bench.peers import KafkagroupPeer
    from kafkagroup.bench.run import run_grid

    group = random_group(topics=6, partitions=5, members=8, seed=5)
    before = kafkagroup.assign_arrays("sticky", **group.arrays()).owner
    group = next_generation(group, before, remove=2, add=3, seed=2)
    scenario = Scenario("churn", group, churn=True, racks=False)
    rows = {r.strategy: r for r in run_grid([scenario], [KafkagroupPeer()], strategies=("sticky", "cooperative-sticky"))}
    coop = rows["cooperative-sticky"].quality
    assert coop.valid and coop.withheld > 0, coop
    assert rows["sticky"].quality.valid and rows["sticky"].quality.withheld == 0
    eager_view = check(group, split_owner(kafkagroup.assign_arrays("cooperative-sticky", **group.arrays()).owner,
                                          len(group.members)))
    assert not eager_view.valid and "unassigned" in eager_view.problem


def test_a_cap_holds_when_its_first_alarm_is_lost():
    """Python drops an exception raised inside a weakref / __del__ callback: here the peer swallows the first
    alarm the same way, and the cap must still stop it (bounded busy loops: a failure ends, never hangs)."""
    import time

    from kafkagroup.bench.peers import _Timeout, capped

    swallowed = []

    def peer():
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                while time.monotonic() < end:
                    pass
            except _Timeout:
                if swallowed:
                    raise
                swallowed.append(1)   # the first alarm is lost, as in a weakref callback
        return "ran to the end"

    with pytest.raises(_Timeout):
        capped(peer, 0.05)
    assert swallowed == [1]
    assert capped(lambda: 7, 0.05)[0] == 7   # no alarm outlives its call


def test_a_cap_never_raises_inside_a_finalizer(monkeypatch):
    """An alarm that lands in a __del__ or a weakref callback is not raised there (Python would drop it and
    report "Exception ignored"): the cap skips it and stops the peer at the next alarm, outside."""
    import sys
    import time
    import weakref

    from kafkagroup.bench.peers import _Timeout, capped

    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    finalizers_run = []

    class Slow:
        def __del__(self):
            end = time.monotonic() + 0.3          # outlives the 0.05 s cap and several repeats
            while time.monotonic() < end:
                pass
            finalizers_run.append("__del__")

    class Key:
        pass

    def slow_callback():
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass
        finalizers_run.append("weakref")

    def peer():
        Slow()                                     # its __del__ runs now, past the cap
        key = Key()
        weakref.finalize(key, slow_callback)       # called from weakref.py, as WeakKeyDictionary's are
        del key                                    # the callback runs now
        end = time.monotonic() + 5
        while time.monotonic() < end:
            pass
        return "ran to the end"

    with pytest.raises(_Timeout):
        capped(peer, 0.05)
    assert finalizers_run == ["__del__", "weakref"]
    assert dropped == []
