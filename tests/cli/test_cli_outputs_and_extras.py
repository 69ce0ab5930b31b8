"""The command line as an installed package meets it (issue 25): output paths checked before any work, one
line naming the extra a command needs, plain text without rich, progress on a terminal only,
``--members`` a count everywhere."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from kafkagroup.textout import Table
from cli_support import run_cli, write_group

GROUP = {"topics": {"t0": 4}, "members": {"C0": ["t0"], "C1": ["t0"]}}
SCENARIO = {"name": "small", "topics": {"orders": 12}, "members": 4, "start_spread_ms": 2000}


def read_only_dir(tmp_path: Path) -> Path:
    """A folder this process cannot create files in: a chmod'ed one, or for root (whom permissions do not
    stop) /sys, which refuses new files to everyone."""
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    try:
        (Path("/sys") / "kafkagroup-probe").write_text("")
    except OSError:
        return Path("/sys")
    pytest.skip("no folder refuses new files to this (root) process")


def run_blocked(blocked: list[str], *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command line in a child where ``blocked`` modules cannot be imported (as if not installed)."""
    script = (f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
              f"from kafkagroup.cli import main\nsys.exit(main({list(argv)!r}))\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=cwd)


# ----------------------------------------------------------------------------------- output paths


@pytest.fixture
def not_called(monkeypatch):
    """Fails the test if the command starts its work (the path must be refused first)."""
    def work(*args, **kwargs):
        raise AssertionError("the work started before the output path was checked")
    import kafkagroup.bench.run
    import kafkagroup.sim.runner
    import kafkagroup.spark.fleet

    monkeypatch.setattr(kafkagroup.sim.runner, "simulate", work)
    monkeypatch.setattr(kafkagroup.bench.run, "run_grid", work)
    monkeypatch.setattr(kafkagroup.spark.fleet, "assign_fleet_local", work)
    monkeypatch.setattr(kafkagroup.spark.fleet, "generate_fleet", work)


def test_every_output_path_is_checked_before_the_work(tmp_path, capsys, not_called) -> None:
    ro = read_only_dir(tmp_path)
    group = write_group(tmp_path, GROUP)
    scenario = write_group(tmp_path, SCENARIO, "scenario.json")
    cases = [
        (["assign", group, "--plot", str(ro / "a.png")], f"assign --plot {ro / 'a.png'}: cannot write"),
        (["simulate", scenario, "--plot", str(ro / "s.png")], f"simulate --plot {ro / 's.png'}: cannot write"),
        (["bench", "--quick", "--no-java", "--out", str(ro / "report")], f"bench --out {ro / 'report'}: cannot"),
        (["spark-plan", "--local", "--example", "5", "--out", str(ro / "plan")],
         f"spark-plan --out {ro / 'plan'}: cannot"),
        (["spark-plan", "--example", "5", "--out", str(ro / "plan")], f"spark-plan --out {ro / 'plan'}: cannot"),
        (["spark-plan", "--example", "5", "--compare", "--out", str(tmp_path / "ok"), "--plot", str(ro / "c.png")],
         f"spark-plan --plot {ro / 'c.png'}: cannot write"),
        (["spark-plan", "--local", "--example", "5", "--out", group], f"spark-plan --out {group}: is a file"),
    ]
    for argv, expected in cases:
        run = run_cli(capsys, *argv)
        assert run.code == 2 and len(run.err_lines) == 1, (argv, run.err)
        assert run.err_lines[0].startswith(f"kafkagroup: {expected}"), (argv, run.err_lines)


# ----------------------------------------------------------------------------------- extras


@pytest.mark.parametrize("blocked, argv, expected", [
    (["pyspark"], ["spark-plan", "--example", "3", "--out", "plan"],
     "spark-plan needs pyspark: pip install 'kafkagroup[spark]'"),
    (["pyarrow"], ["spark-plan", "--local", "--example", "3", "--out", "plan"],
     "spark-plan --local needs pyarrow: pip install 'kafkagroup[spark]'"),
    (["kio"], ["serve", "--listen", "127.0.0.1:0"], "serve needs kio: pip install 'kafkagroup[serve]'"),
    (["matplotlib"], ["assign", "GROUP", "--plot", "x.png"],
     "assign --plot needs matplotlib: pip install 'kafkagroup[plot]'"),
    (["matplotlib"], ["simulate", "--example", "scale-out", "--plot", "x.png"],
     "simulate --plot needs matplotlib: pip install 'kafkagroup[plot]'"),
    (["matplotlib"], ["bench", "--quick", "--no-java"], "bench (report.png) needs matplotlib: pip install 'kafkagroup[plot]'"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, blocked, argv, expected) -> None:
    group = write_group(tmp_path, GROUP)
    done = run_blocked(blocked, *[group if a == "GROUP" else a for a in argv], cwd=tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (2, f"kafkagroup: {expected}\n", "")
    assert not (tmp_path / "plan").exists()


def test_without_rich_the_commands_print_plain_tables(tmp_path) -> None:
    group = write_group(tmp_path, GROUP)
    done = run_blocked(["rich"], "assign", group, "--strategy", "range")
    assert done.returncode == 0 and done.stderr == ""
    assert "range: assignment" in done.stdout and "C0      2  t0: 0-1" in done.stdout
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("strategy"))
    assert header.split() == ["strategy", "balance_gap", "max", "min", "moved", "moved_lower_bound", "withheld",
                              "unassigned", "engine", "ms", "total", "ms"]
    scenario = write_group(tmp_path, SCENARIO, "scenario.json")
    done = run_blocked(["rich"], "simulate", scenario, "--strategies", "range")
    assert done.returncode == 0 and "small: rebalance cost by strategy" in done.stdout


def test_plain_tables_keep_every_digit() -> None:
    table = Table("t", [("name", "left"), ("value", "right")])
    table.add_row("a", "123,456,789,012")
    table.add_row("bb", "7")
    assert str(table).splitlines() == ["t", "name            value", "----  ---------------",
                                       "a     123,456,789,012", "bb                  7"]


# ----------------------------------------------------------------------------------- simulate


def test_simulate_members_is_a_count(tmp_path, capsys) -> None:
    scenario = write_group(tmp_path, SCENARIO, "scenario.json")
    run = run_cli(capsys, "simulate", scenario, "--members", "10", "--strategies", "range", "--format", "json")
    assert run.code == 0, run.err
    (report,) = json.loads(run.out)
    assert len(report["member_reports"]) == 10
    bad = run_cli(capsys, "simulate", scenario, "--members", "0")
    assert bad.code == 2 and bad.err_lines == ["kafkagroup simulate: --members: members: 0 is out of range 1 .. 100,000"]


def test_progress_on_a_terminal_and_quiet_when_piped(tmp_path) -> None:
    scenario = write_group(tmp_path, {**SCENARIO, "steps": [{"action": "scale", "members": 6}]}, "scenario.json")
    argv = [sys.executable, "-m", "kafkagroup", "simulate", scenario, "--strategies", "range,sticky"]
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and piped.stderr == ""                  # nothing but results when piped
    assert "small: rebalance cost by strategy" in piped.stdout
    # stderr on a terminal (a pseudo-terminal here): rich draws the bar there; stdout stays the results
    leader, follower = pty.openpty()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:           # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out, _ = child.communicate(timeout=300)
    os.close(leader)
    assert child.returncode == 0 and "small: rebalance cost by strategy" in out
    assert b"simulating small" in seen


# ----------------------------------------------------------------------------------- serve's start


def test_serve_and_ctl_do_not_load_the_engine() -> None:
    """`kafkagroup serve` imports what serving needs: not numpy, not the native engine, not the other
    commands' modules (issue 25: serve took 0.52 s to its first answer, most of it imports)."""
    script = ("import sys\n"
              "from kafkagroup.cli import build_parser\n"
              "build_parser(['serve']).parse_args(['serve'])\n"
              "import kafkagroup.server.app, kafkagroup.server.handlers, kafkagroup.testing.http\n"
              "build_parser(['ctl']).parse_args(['ctl', 'groups'])\n"
              "loaded = sorted(m for m in ('numpy', 'kafkagroup._core', 'kafkagroup._codec', 'kafkagroup.sim.cli',\n"
              "                            'kafkagroup.spark.cli', 'kafkagroup.bench.cli', 'matplotlib', 'rich')\n"
              "                if m in sys.modules)\n"
              "print(loaded)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
