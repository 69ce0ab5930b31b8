"""The README's cluster recipe on a real standalone Spark cluster: a master and a worker started on
127.0.0.1 with pyspark's own spark-class, executors running a packed environment shipped with
spark.archives, ``kafkagroup spark-plan --example`` run through them.

The packed environment is built once per session the way the README builds it, minus the network and
the compiler: a venv of this Python's base interpreter without pip, the distributions pip would install
copied in (kafkagroup from the tree under test, numpy, pyarrow, pandas and their dependencies), no
pyspark inside (executors import the Spark installation's own pyspark.zip), packed by venv-pack. The
README steps themselves were run verbatim by hand (see the README for the sizes).
"""
from __future__ import annotations

import glob
import importlib.metadata
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EXECUTOR_NEEDS = ("numpy", "pyarrow", "pandas")      # kafkagroup's executor code and pyspark's Arrow worker


def closure(names) -> list[str]:
    """The installed distributions `names` need, dependencies included (extras left out), as pip installs them."""
    from packaging.requirements import Requirement

    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = importlib.metadata.distribution(name)
        for text in seen[key].requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@pytest.fixture(scope="session")
def packed_env(tmp_path_factory) -> Path:
    if shutil.which("venv-pack", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("venv-pack is not installed (test extra)")
    root = tmp_path_factory.mktemp("kg-env")
    env = root / "kg-env"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(glob.glob(str(env / "lib" / "python3*" / "site-packages"))[0])
    for name in closure(EXECUTOR_NEEDS):
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            source = Path(dist.locate_file(file))
            if file.parts[0] == ".." or "__pycache__" in file.parts or not source.is_file():
                continue                      # console scripts live outside site-packages; caches are rebuilt
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    shutil.copytree(REPO / "kafkagroup", site / "kafkagroup", ignore=shutil.ignore_patterns("__pycache__"))
    # .tar.gz, as in the README: Spark unpacks it with the system's tar, which keeps the venv's symlinks
    # (bin/python3 -> python3.11); a plain .tar goes through Spark's Java unpacker, which fails on them.
    # Level 0 (stored): packing takes seconds instead of a minute.
    archive = root / "kg-env.tar.gz"
    # No --python-prefix: venv-pack 0.2.0 writes a broken link with it on Python 3.10+ (bin/python3.11 ->
    # <prefix>/bin/python3.113.11). The venv's python links to the base interpreter it was made from,
    # which is the interpreter executors run: here this machine's, on a cluster the image's.
    subprocess.run([str(Path(sys.executable).parent / "venv-pack"), "-q", "-p", str(env), "-o", str(archive),
                    "--compress-level", "0"], check=True)
    return archive


def wait_for(path: Path, text: str, process: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise AssertionError(f"{path.name}: process exited with {process.returncode}:\n{path.read_text()[-3000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{path.name}: no {text!r} in time:\n{path.read_text()[-3000:] if path.exists() else ''}")


@pytest.fixture
def standalone_cluster(tmp_path):
    """A master and one worker on 127.0.0.1 (free ports), stopped by PID afterwards."""
    spark_class = spark_home() / "bin" / "spark-class"
    port, master_ui, worker_ui = free_port(), free_port(), free_port()
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path), "SPARK_WORKER_DIR": str(tmp_path / "work")}
    env.pop("PYSPARK_PYTHON", None)
    logs, processes = [], []
    try:
        master_log = tmp_path / "master.log"
        logs.append(master_log.open("w"))
        processes.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(master_ui)], env=env, stdout=logs[-1], stderr=subprocess.STDOUT,
            start_new_session=True))
        deadline = time.monotonic() + 120
        wait_for(master_log, "I have been elected leader", processes[0], deadline)
        worker_log = tmp_path / "worker.log"
        logs.append(worker_log.open("w"))
        processes.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
             "--host", "127.0.0.1", "--webui-port", str(worker_ui), "--cores", "2", "--memory", "2g",
             "--work-dir", str(tmp_path / "work")], env=env, stdout=logs[-1], stderr=subprocess.STDOUT,
            start_new_session=True))
        wait_for(worker_log, "Successfully registered with master", processes[1], deadline)
        yield f"spark://127.0.0.1:{port}", tmp_path / "work"
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in logs:
            log.close()


def test_spark_plan_example_on_a_standalone_cluster(packed_env, standalone_cluster, tmp_path):
    master, work_dir = standalone_cluster
    out = tmp_path / "plan"
    env = {**os.environ, "PYSPARK_PYTHON": "./environment/bin/python", "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    run = subprocess.run(
        [sys.executable, "-m", "kafkagroup.cli", "spark-plan", "--master", master, "--example", "12",
         "--strategy", "cooperative-sticky", "--out", str(out),
         "--conf", f"spark.archives={packed_env}#environment", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.executor.memory=1g", "--conf", "spark.sql.shuffle.partitions=2"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "Traceback" not in run.stderr
    import pyarrow.parquet as pq

    metrics = pq.read_table(out / "metrics")
    assert metrics.num_rows == 12 and metrics.column("error").null_count == 12
    assignments = pq.read_table(out / "assignments")
    assert assignments.num_rows == sum(metrics.column("assigned").to_pylist())
    # the executors ran the unpacked archive's interpreter, not this one
    unpacked = glob.glob(str(work_dir / "app-*" / "*" / "environment" / "bin" / "python"))
    assert unpacked, sorted(glob.glob(str(work_dir / "**"), recursive=True))[:50]
    stderr_logs = " ".join(Path(p).read_text(errors="replace") for p in glob.glob(str(work_dir / "app-*" / "*" / "stderr")))
    assert "ModuleNotFoundError" not in stderr_logs
