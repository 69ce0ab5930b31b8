"""Waiting until a peer's process is idle, so that timing one side never overlaps the other's leftover work.

A JVM keeps working after it has answered: the JIT compiles the code paths the last call took and the
collector runs, on threads of their own. Measured here (a 2-core VM) after one 1,000-member call of Kafka's
UniformAssignor on a group shape new to the JVM: 0.85 s of CPU in the 2.4 s after the reply. A call of ours
timed meanwhile would share the machine with that work, so the benches call :func:`wait_idle` on the peer's pid
before timing ours. (It did not explain why the server-assignor grid's smallest incremental rows read slower
inside the whole grid than alone: the whole grid run with it, 2026-11-28, still did.)

Linux only (the process's CPU time from ``/proc/<pid>/stat``); elsewhere it returns at once.
"""
from __future__ import annotations

import os
import time


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` (every thread), or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # fields after the command name (which may hold spaces and parentheses): state is the first,
    # utime and stime the 12th and 13th
    fields = stat[stat.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_idle(pid: int, *, quiet_s: float = 0.2, timeout_s: float = 20.0, poll_s: float = 0.05) -> float:
    """Block until process ``pid`` has used less than 5% of one core over the last ``quiet_s`` seconds, or
    ``timeout_s`` has passed; return the seconds waited. A process that cannot be read counts as idle."""
    start = time.monotonic()
    samples: list[tuple[float, float]] = []
    while True:
        now, used = time.monotonic(), cpu_seconds(pid)
        if used is None:
            return now - start
        samples.append((now, used))
        # the oldest sample at least quiet_s old: the CPU used since then, over that window
        while len(samples) > 1 and now - samples[1][0] >= quiet_s:
            samples.pop(0)
        then, used_then = samples[0]
        if now - then >= quiet_s and used - used_then <= 0.05 * (now - then):
            return now - start
        if now - start >= timeout_s:
            return now - start
        time.sleep(poll_s)
