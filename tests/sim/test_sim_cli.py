"""``kafkagroup simulate``: one-line errors for bad scenarios, warnings for ignored keys, every strategy by
default, the shipped examples, and the picture."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kafkagroup.cli import main
from kafkagroup.sim import ScenarioError, parse_scenario, simulate
from kafkagroup.sim.cli import EXAMPLES_DIR, example_names
from kafkagroup.sim.plot import plot_reports

SMALL = {"name": "small", "topics": {"orders": 12}, "members": 4, "start_spread_ms": 2_000,
         "steps": [{"action": "wait", "ms": 2_000}, {"action": "scale", "members": 5}]}


def run_cli(tmp_path: Path, scenario, *args: str) -> int:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    return main(["simulate", str(path), *args])


@pytest.mark.parametrize("scenario, message", [
    ({**SMALL, "steps": {"action": "wait"}}, "steps: expected a list of step objects, got dict"),
    ({**SMALL, "steps": [{"action": "explode"}]}, "steps[0]: unknown action 'explode'"),
    ({**SMALL, "steps": ["wait"]}, "steps[0]: expected a JSON object"),
    ({**SMALL, "members": -2}, "members: -2 is out of range 1 .. 100,000"),
    ({**SMALL, "members": 2, "steps": [{"action": "crash", "count": 5}]},
     "steps[0] (crash): cannot stop 5 of the 2 running member(s)"),
    ({**SMALL, "members": 2, "steps": [{"action": "scale", "members": 1}, {"action": "remove_members", "count": 2}]},
     "steps[1] (remove_members): cannot stop 2 of the 1 running member(s)"),
    ({**SMALL, "topics": {"orders": 2_147_483_647}}, "topics['orders']: 2147483647 is out of range 1 .. 1,000,000"),
    ({**SMALL, "topics": ["orders"]}, "topics: expected a JSON object, got list"),
    ({**SMALL, "topics": {"a": 1_000_000, "b": 1_000_000, "c": 1}}, "the limit is 2,000,000"),
    ({**SMALL, "steps": [{"action": "add_partitions", "topic": "nosuch", "partitions": 20}]},
     "steps[0] (add_partitions): unknown topic 'nosuch'"),
    ({**SMALL, "steps": [{"action": "add_partitions", "topic": "orders", "partitions": 6}]},
     "Kafka only adds partitions"),
    ({**SMALL, "steps": [{"action": "crash"}]}, "steps[0] (crash): needs 'count'"),
    ({**SMALL, "members": float("inf")}, "members: expected a whole number, got inf"),
    ({**SMALL, "members": float("nan")}, "members: expected a whole number, got nan"),
    ({**SMALL, "record_processing_ms": {"median": float("nan")}}, "record_processing_ms.median: expected a number"),
    ({**SMALL, "steps": [{"action": "add_partitions", "topic": ["orders"], "partitions": 20}]},
     "steps[0] (add_partitions).topic: expected a topic name"),
    ({**SMALL, "steps": [{"action": "wait", "ms": "soon"}]}, "steps[0] (wait).ms: expected a whole number"),
    ({**SMALL, "strategy": "bogus"}, "strategy: unknown assignor 'bogus'"),
    ({**SMALL, "strategy": ["range", "range"]}, "more than once"),
    ({**SMALL, "strategy": 7}, "strategy: expected a strategy name or a list of names"),
    ({**SMALL, "config": {"session.timeout.ms": 1000, "heartbeat.interval.ms": 3000}},
     "heartbeat.interval.ms must be lower than session.timeout.ms"),
    ({**SMALL, "steps": [{"action": "roll_restart", "downtime_ms": 10_000, "interval_ms": 1_000}]},
     "interval_ms (1000) is shorter than downtime_ms (10000)"),
    ({**SMALL, "config": {"session.timeout.msec": 1000}}, "config: unknown member config key 'session.timeout.msec'"),
    ({**SMALL, "coordinator": {"group.initial.rebalance.delay.msx": 5}},
     "coordinator: unknown coordinator config 'group.initial.rebalance.delay.msx'"),
    ({**SMALL, "coordinator": {"group.initial.rebalance.delay.ms": -5}},
     "coordinator: group.initial.rebalance.delay.ms must not be negative"),
    ({"members": 3}, "scenario needs 'topics'"),
    ([1, 2], "scenario: expected a JSON object"),
])
def test_bad_scenarios_are_one_line_errors(tmp_path, capsys, scenario, message):
    with pytest.raises(ScenarioError, match=None) as exc:
        parse_scenario(scenario)
    assert message in str(exc.value)
    assert run_cli(tmp_path, scenario, "--strategies", "range") == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkagroup simulate: ") and message in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_unknown_keys_are_warnings_naming_the_key(tmp_path, capsys):
    scenario = {**SMALL, "memberz": 3, "steps": [{"action": "wait", "ms": 10, "msec": 5}]}
    assert run_cli(tmp_path, scenario, "--strategies", "range") == 0
    err = capsys.readouterr().err
    assert "warning: unknown scenario key 'memberz' ignored" in err
    assert "warning: steps[0] (wait): unknown key 'msec' ignored" in err
    with pytest.warns(UserWarning, match="memberz"):
        simulate({**SMALL, "memberz": 3, "strategy": "range"})


def test_unreadable_files_and_missing_arguments(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for argv, expected in [
        (["simulate", str(bad)], "not JSON"),
        (["simulate", str(tmp_path / "missing.json")], "cannot read"),
        (["simulate"], "give a scenario file or --example NAME"),
        (["simulate", "--example", "nosuch"], "no example 'nosuch'"),
        (["simulate", "--example", "scale-out", "--strategies", "range,bogus"], "unknown assignor 'bogus'"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1


def test_every_strategy_runs_by_default(tmp_path, capsys):
    assert run_cli(tmp_path, SMALL, "--format", "json") == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r["strategy"] for r in reports] == [["range"], ["roundrobin"], ["sticky"], ["cooperative-sticky"]]
    for r in reports:
        assert r["generations"] >= 1 and r["partition_unowned_s"] >= 0 and r["stable"]
    assert run_cli(tmp_path, {**SMALL, "strategy": "sticky"}, "--strategies", "scenario", "--format", "json") == 0
    assert [r["strategy"] for r in json.loads(capsys.readouterr().out)] == [["sticky"]]


def test_table_names_the_figures_and_the_assumptions(tmp_path, capsys):
    assert run_cli(tmp_path, {**SMALL, "name": "svc[/] group"}, "--strategies", "range,cooperative-sticky",
                   "--details") == 0
    out = capsys.readouterr().out
    assert "svc[/] group" in out                         # printed literally, not as rich markup
    assert "partition-s without owner" in out and "max.poll.records 500" in out
    assert "member-4" in out


def test_shipped_examples_are_valid_and_documented():
    names = example_names()
    assert {"rolling-restart", "rolling-restart-static", "scale-out", "crash-session-10s", "crash-session-45s",
            "partitions-added"} <= set(names)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name in names:
        data = json.loads((EXAMPLES_DIR / f"{name}.json").read_text())
        sc = parse_scenario(data)
        assert not sc.warnings, (name, sc.warnings)
        assert len(sc.description) > 40, name
        assert f"examples/{name}.json" in readme, f"{name} is not described in the README"
    assert parse_scenario(json.loads((EXAMPLES_DIR / "rolling-restart.json").read_text())).members == 100


def test_example_runs_from_the_cli(capsys):
    assert main(["simulate", "--example", "partitions-added", "--strategies", "sticky,cooperative-sticky",
                 "--format", "json"]) == 0
    sticky, coop = json.loads(capsys.readouterr().out)
    assert sticky["partitions"] == coop["partitions"] == 176
    assert coop["partition_unowned_ms"] < sticky["partition_unowned_ms"]


def _pixels(path: Path) -> np.ndarray:
    import matplotlib.image
    return matplotlib.image.imread(str(path))


@pytest.mark.parametrize("members", [6, 80])      # bar lanes, and the heat map for many members
def test_plot_writes_a_non_trivial_png(tmp_path, members):
    sc = {**SMALL, "members": members, "topics": {"orders": 2 * members},
          "steps": [{"action": "wait", "ms": 2_000}, {"action": "crash", "count": 1}]}
    reports = [simulate({**sc, "strategy": s}) for s in ("range", "cooperative-sticky")]
    out = plot_reports(reports, tmp_path / "sim.png")
    assert out.stat().st_size > 20_000
    img = _pixels(out)
    assert img.shape[0] > 600 and img.shape[1] > 1000
    rgb = img[..., :3]
    assert rgb.std() > 0.1                                   # not blank
    blue = (rgb[..., 2] > 0.6) & (rgb[..., 0] < 0.3)          # range's lanes are drawn
    red = (rgb[..., 0] > 0.7) & (rgb[..., 1] < 0.3)           # cooperative-sticky's lanes are drawn
    assert blue.mean() > 0.02 and red.mean() > 0.02


def test_plot_option_on_the_cli(tmp_path, capsys):
    out = tmp_path / "cli.png"
    assert run_cli(tmp_path, SMALL, "--strategies", "range", "--plot", str(out)) == 0
    assert out.stat().st_size > 20_000 and f"plot written to {out}" in capsys.readouterr().err.replace("\n", "")


def test_plot_to_an_unwritable_path_is_a_one_line_error(tmp_path, capsys):
    assert run_cli(tmp_path, SMALL, "--strategies", "range", "--plot", str(tmp_path / "no" / "such" / "dir.png")) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and err.count("\n") == 1


def test_scale_out_example_compares_strategies(capsys):
    """(moved from tests/core/test_core_cli.py with the simulate command)"""
    assert main(["simulate", "--example", "scale-out", "--strategies", "range,cooperative-sticky",
                 "--format", "json"]) == 0
    eager, coop = json.loads(capsys.readouterr().out)
    assert eager["rebalance_protocol"] == "EAGER" and coop["rebalance_protocol"] == "COOPERATIVE"
    assert eager["double_ownership"] == coop["double_ownership"] == 0
    # cooperative-sticky moves fewer partitions than range and needs the follow-up generation, and it loses
    # less partition-time: only the moved partitions stop
    assert coop["moved_partitions"] < eager["moved_partitions"]
    assert coop["generations"] == eager["generations"] + 1
    assert coop["partition_unowned_ms"] < eager["partition_unowned_ms"]
    assert coop["paused_partitions"] == coop["moved_partitions"] < eager["paused_partitions"] == 144
    assert (eager["final_min_load"], eager["final_max_load"]) == (3, 3)


def test_scenario_file_table(tmp_path, capsys):
    assert run_cli(tmp_path, {"name": "leave", "topics": {"t": 12}, "members": 4,
                              "steps": [{"action": "remove_members", "count": 1}]}, "--details") == 0
    out = capsys.readouterr().out
    assert "leave: rebalance cost by strategy" in out and "cooperative-sticky" in out


def test_client_and_coordinator_never_import_the_simulator():
    """The simulator sits above both layers (issue 13): no module under client/ or coordinator/ imports it."""
    import ast

    import kafkagroup
    root = Path(kafkagroup.__file__).parent
    offenders = []
    for layer in ("client", "coordinator", "messages"):
        for path in (root / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                offenders += [f"{path.relative_to(root)}:{node.lineno} {n}" for n in names
                              if n == "kafkagroup.sim" or n.startswith("kafkagroup.sim.")]
    assert not offenders


from hypothesis import given, settings, strategies as st  # noqa: E402

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats()
                     | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3), max_leaves=8)
_KEYS = st.sampled_from(["topics", "members", "strategy", "static", "config", "coordinator", "steps", "seed",
                         "record_processing_ms", "start_spread_ms", "network_latency_ms", "settle_timeout_ms",
                         "name", "bogus"])
_STEP = st.fixed_dictionaries({"action": st.sampled_from(["scale", "add_members", "remove_members", "crash",
                                                          "roll_restart", "switch_strategy", "add_partitions",
                                                          "wait", "nope"])},
                              optional={"members": _JSON, "count": _JSON, "ms": _JSON, "topic": _JSON,
                                        "partitions": _JSON, "strategy": _JSON, "downtime_ms": _JSON,
                                        "interval_ms": _JSON})


@settings(max_examples=300, deadline=None)
@given(base=st.dictionaries(_KEYS, _JSON, max_size=5), steps=st.lists(_STEP, max_size=3))
def test_garbage_scenarios_are_refused_with_scenario_errors_only(base, steps):
    """Whatever the JSON holds, parsing either succeeds or raises ScenarioError (never AttributeError & co)."""
    scenario = {"topics": {"orders": 12}, "steps": steps, **base}
    try:
        sc = parse_scenario(scenario)
    except ScenarioError as e:
        assert "\n" not in str(e)
        return
    assert sum(sc.topics.values()) <= 2_000_000 and 1 <= sc.members <= 100_000
