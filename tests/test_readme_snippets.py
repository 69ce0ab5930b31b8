"""Every ```python block of README.md runs as written (issue 25), each in a fresh interpreter in an empty
folder: a block is a program on its own, except one that starts with ``# continued from the block above``,
which runs after the blocks it continues. A block that starts with ``# test_<name>.py`` is a pytest file
and is run by pytest (the kafka_server fixture comes from the installed plugin). Blocks that talk to
``kafkagroup serve`` get one on a free port through ``KAFKA_BOOTSTRAP``; the Spark block is a spark test.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
CONTINUED = "# continued from the block above"


def programs() -> list[tuple[int, str]]:
    """(line of the first block, program) for each runnable example."""
    text = README.read_text()
    out: list[tuple[int, str]] = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        line = text.count("\n", 0, match.start()) + 1
        block = match.group(1)
        if block.startswith(CONTINUED):
            first, previous = out[-1]
            out[-1] = (first, previous + "\n" + block)
        else:
            out.append((line, block))
    return out


PROGRAMS = programs()


def _marks(program: str) -> list:
    return [pytest.mark.spark] if "pyspark" in program else []


@pytest.mark.parametrize("program", [pytest.param(p, id=f"README.md:{line}", marks=_marks(p))
                                     for line, p in PROGRAMS])
def test_readme_example_runs(program: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    server = None
    if "KAFKA_BOOTSTRAP" in program:
        from kafkagroup.testing import start_server

        server = start_server({"orders": 6})
        env["KAFKA_BOOTSTRAP"] = server.bootstrap
    try:
        first = program.splitlines()[0]
        if first.startswith("# test_") and first.endswith(".py"):
            (tmp_path / first[2:]).write_text(program)
            argvs = [[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", first[2:], *mode]
                     for mode in ([], ["--kafka-server=subprocess"])]     # both kinds of kafka_server
        else:
            (tmp_path / "example.py").write_text(program)
            argvs = [[sys.executable, "example.py"]]
        for argv in argvs:
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, (argv, done.stdout[-3000:], done.stderr[-3000:])
    finally:
        if server is not None:
            server.stop()


def test_the_examples_are_found() -> None:
    assert len(PROGRAMS) >= 9
    assert any(p.startswith("# test_") for _, p in PROGRAMS)          # the kafkagroup.testing example
