"""kafkagroup.bench.idle: the benches wait for a peer's process to go quiet before timing another side."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kafkagroup.bench.idle import cpu_seconds, wait_idle

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# busy for `burn` seconds of its own CPU time, then idle (sleeping) until killed; "busy" once started: the tests
# wait for it, since the interpreter's start may wait on the disk long enough (a loaded machine) to look idle
_BUSY_THEN_IDLE = "import time, sys\nend = float(sys.argv[1])\nprint('busy', flush=True)\n" \
                  "while time.process_time() < end: pass\nprint('idle', flush=True)\ntime.sleep(60)\n"


def _busy_child(burn: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", _BUSY_THEN_IDLE, burn], stdout=subprocess.PIPE, text=True)
    if child.stdout.readline() != "busy\n":
        child.kill()
        child.wait()
        pytest.fail("the busy child did not start")
    return child


def test_waits_until_the_process_has_done_its_work():
    child = _busy_child("0.6")
    try:
        wait_idle(child.pid, timeout_s=30)
        assert cpu_seconds(child.pid) >= 0.5          # it returned only after the busy part (in 10 ms ticks)
        assert child.stdout.readline() == "idle\n"
    finally:
        child.kill()
        child.wait()


def test_a_process_that_never_goes_quiet_is_waited_for_at_most_the_timeout():
    child = _busy_child("1000")
    try:
        waited = wait_idle(child.pid, timeout_s=0.5)
        assert waited >= 0.5
        assert cpu_seconds(child.pid) < 1000           # (still busy: it gave up, as asked)
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_counts_as_idle():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cpu_seconds(child.pid) is None
    assert wait_idle(child.pid, timeout_s=30) < 30
    assert cpu_seconds(1 << 30) is None   # (beyond pid_max)


def test_own_cpu_time_grows_while_busy():
    import os
    import time
    before = cpu_seconds(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert cpu_seconds(os.getpid()) >= before + 0.2
