"""The release wheel, installed where a user installs it (issue 25): `make test-dist` builds dist/ (sdist, a
wheel from it, auditwheel repair) and runs this file. A fresh venv outside the checkout gets the wheel
(pip fetches numpy, and kio for [serve]); `kafkagroup assign`, `simulate` and `serve` run from there.

Not collected by `make test` (the name does not match test_*.py): building the wheel takes minutes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

DIST = Path(os.environ.get("KAFKAGROUP_DIST", Path(__file__).resolve().parents[2] / "dist"))
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel() -> Path:
    wheels = sorted(DIST.glob("kafkagroup-*-manylinux_*.whl"))
    assert len(wheels) == 1, f"one manylinux wheel expected in {DIST}: {wheels} (make dist)"
    return wheels[0]


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    root = tmp_path_factory.mktemp("user")
    assert not root.resolve().is_relative_to(REPO)
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    pip = [str(root / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel)], check=True, timeout=600)
    return root / "venv"


def run(venv: Path, *argv: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(venv / "bin" / "kafkagroup"), *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, **kwargs)


def site_packages_bytes(venv: Path) -> int:
    (site,) = (venv / "lib").glob("python3*/site-packages")
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file())


def test_the_wheel_is_manylinux_and_carries_the_licence(wheel) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        tags = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Tag: cp3" in tags and "manylinux_" in tags
    assert not [n for n in names if "libstdc++" in n]          # linked in statically, not grafted
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size:,} bytes")


def test_a_plain_install_pulls_numpy_only_and_runs_assign_and_simulate(venv, tmp_path) -> None:
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True).stdout
    names = {d["name"].lower() for d in json.loads(listed)} - {"pip", "setuptools", "wheel"}
    assert names == {"kafkagroup", "numpy"}
    print(f"\nplain install: site-packages {site_packages_bytes(venv) / 2**20:.1f} MiB")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import kafkagroup._core as c; print(c.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert Path(where.strip()).resolve().is_relative_to(venv.resolve())
    (tmp_path / "group.json").write_text(json.dumps({"topics": {"t0": 3}, "members": {"C0": ["t0"], "C1": ["t0"]}}))
    assigned = run(venv, "assign", "group.json", "--strategy", "roundrobin", "--format", "json", cwd=tmp_path)
    assert assigned.returncode == 0, assigned.stderr
    assert json.loads(assigned.stdout)["roundrobin"]["assignment"] == {"C0": [["t0", 0], ["t0", 2]], "C1": [["t0", 1]]}
    table = run(venv, "assign", "group.json", cwd=tmp_path)             # no rich: plain tables
    assert table.returncode == 0 and "sticky: assignment" in table.stdout
    simulated = run(venv, "simulate", "--example", "scale-out", "--strategies", "range,cooperative-sticky",
                    "--format", "json", cwd=tmp_path)
    assert simulated.returncode == 0, simulated.stderr
    eager, coop = json.loads(simulated.stdout)
    assert coop["moved_partitions"] < eager["moved_partitions"]
    plot = run(venv, "assign", "group.json", "--plot", "x.png", cwd=tmp_path)
    assert (plot.returncode, plot.stderr) == (2, "kafkagroup: assign --plot needs matplotlib: "
                                                 "pip install 'kafkagroup[plot]'\n")
    serve = run(venv, "serve", cwd=tmp_path)
    assert (serve.returncode, serve.stderr) == (2, "kafkagroup: serve needs kio, cramjam: pip install 'kafkagroup[serve]'\n")


def test_serve_from_the_installed_wheel_answers_a_real_client(venv, wheel, tmp_path) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    f"{wheel}[serve]"], check=True, timeout=600)
    from confluent_kafka import Consumer

    server = subprocess.Popen([str(venv / "bin" / "kafkagroup"), "serve", "--listen", "127.0.0.1:0", "--control",
                               "127.0.0.1:0", "--topic", "orders:3", "--config", "group.initial.rebalance.delay.ms=0"],
                              cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        bootstrap = server.stdout.readline().split()[-1]
        control = server.stdout.readline().split()[-1]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "session.timeout.ms": 6000})
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline
            consumer.poll(0.1)
        waited = run(venv, "ctl", "--control", control, "--json", "wait", "g", "--members", "1", cwd=tmp_path)
        assert waited.returncode == 0, waited.stderr
        assert json.loads(waited.stdout)["members"][0]["assignment"] == {"orders": [0, 1, 2]}
        consumer.close()
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0
