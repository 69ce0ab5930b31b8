"""The command line, run as a user runs it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafkagroup.cli import compact_partitions, main
from kafkagroup.structs import TopicPartition as TP

VECTORS = Path(__file__).resolve().parents[2] / ".." / "shared" / "vectors" / "assignor_vectors.json"


def test_assign_json_matches_kafka(tmp_path, capsys):
    vector = json.loads(VECTORS.read_text())["vectors"][2]
    path = tmp_path / "group.json"
    path.write_text(json.dumps(vector["scenario"]))
    assert main(["assign", str(path), "--strategy", "range", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {m: sorted(ps) for m, ps in out["range"]["assignment"].items()}
    assert got == {m: sorted(ps) for m, ps in vector["expected"]["range"].items()}
    assert out["range"]["metrics"]["unassigned"] == 0


def test_assign_table_all_strategies(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"topics": {"t0": 4}, "members": {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0"]}}}))
    assert main(["assign", str(path)]) == 0
    out = capsys.readouterr().out
    assert "range: assignment" in out and "roundrobin: assignment" in out and "t0: 0-1" in out


def test_assign_bad_group_exits_2_with_message(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"topics": {"t": 1}, "members": {"C0": {"topics": ["t"], "owned": [["t", 9]]}}}))
    assert main(["assign", str(path)]) == 2
    assert "member 'C0' claims partition t-9" in capsys.readouterr().err


def test_demo_runs_as_installed_command():
    out = subprocess.run([sys.executable, "-m", "kafkagroup.cli", "demo", "--topics", "5", "--partitions", "20",
                          "--members", "7"], capture_output=True, text=True, check=True).stdout
    assert "Sample group" in out and "native engine at scale" in out


def test_compact_partitions():
    assert compact_partitions([TP("t0", 0), TP("t0", 1), TP("t0", 2), TP("t0", 5), TP("t1", 1)]) == "t0: 0-2,5  t1: 1"
