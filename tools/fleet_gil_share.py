"""The fleet loop's GIL-held share of CPU (issue 26): the part of the loop that cannot run on two threads at once.

Runs kafkagroup.spark.fleet.assign_fleet_local on one thread under `perf record` (cpu-clock samples with
DWARF call stacks) and classifies each sample taken during the loop: GIL released when a frame is in the
engine (the ``kafkagroup::`` C++ namespace: _core releases the GIL around every engine call), in
_core's free_without_gil (large engine buffers freed by numpy), or in an Arrow compute kernel (pyarrow
releases the GIL inside them); held otherwise (the interpreter, numpy, pyarrow's glue, pybind11's
argument conversion). Sampling CPU time, not wall time, keeps the share independent of the machine's
other load.

What the share bounds: the held parts of the threads run one at a time, but each overlaps the other
threads' native work, so N threads reach at most min(N, 1 / held) times one thread's speed (not Amdahl's
1 / (held + (1 - held) / N), which would hold if nothing ran beside a held part). Below that bound what
costs is threads wanting the GIL at the same moment (each wait is a voluntary context switch: the bench
counts them) and batches ending unevenly.

Usage: .venv/bin/python tools/fleet_gil_share.py [--groups 10000] [--batch-groups 1250] [--strategy range]
[--keep-output-bytes N] (the loop picks 2,500 per batch for 10,000 groups on 2 threads, 1,250 on 4;
--keep-output-bytes 0: no output memory kept, as before csrc/kafkagroup/output_memory.hpp; needs perf and
about a minute).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

RELEASED = re.compile(r"^kafkagroup::|free_without_gil|arrow::compute::")
LOOP_MARK = "kafkagroup::assignment_rows"

CHILD = """
import sys, time
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet
groups, batch_groups, strategy, rounds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
keep_bytes = int(sys.argv[5])
if keep_bytes >= 0:
    from kafkagroup import _core
    _core.output_memory(keep_bytes)
fleet = generate_fleet(groups, seed=7, members=(2, 12), partitions=(30, 150))
for _ in range(rounds + 1):
    assign_fleet_local(fleet.groups, fleet.topics, strategy, threads=1, batch_groups=batch_groups)
"""


def samples(script_output: str) -> list[tuple[float, list[str]]]:
    """(time, frames leaf first) of each sample of `perf script -F time,ip,sym,dso`."""
    out: list[tuple[float, list[str]]] = []
    frames: list[str] = []
    when = 0.0
    for line in script_output.splitlines():
        if not line.strip():
            if frames:
                out.append((when, frames))
            frames = []
        elif not line[0].isspace():
            when = float(line.strip().rstrip(":"))
        else:
            parts = line.strip().split(None, 1)
            frames.append(parts[1] if len(parts) > 1 else "")
    if frames:
        out.append((when, frames))
    return out


def held_share(all_samples: list[tuple[float, list[str]]]) -> tuple[float, int]:
    """GIL-held share of the samples between the first and last engine call (the first 0.3 s skipped:
    the warm-up call), and how many samples that is."""
    marked = [t for t, frames in all_samples if any(LOOP_MARK in f for f in frames)]
    if not marked:
        raise SystemExit("no sample inside the engine: is perf allowed to sample this process?")
    loop = [frames for t, frames in all_samples if marked[0] + 0.3 < t <= marked[-1]]
    held = sum(1 for frames in loop if not any(RELEASED.search(f) for f in frames))
    return held / len(loop), len(loop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--batch-groups", type=int, default=1250)
    parser.add_argument("--strategy", default="range")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--keep-output-bytes", type=int, default=-1,
                        help="_core.output_memory's limit (0: nothing kept, as before it existed; default: the library's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "perf.data")
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "400", "--call-graph", "dwarf,16384",
                        "-o", data, "--", sys.executable, "-c", CHILD, str(args.groups), str(args.batch_groups),
                        args.strategy, str(args.rounds), str(args.keep_output_bytes)],
                       check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "time,ip,sym,dso"], check=True,
                                capture_output=True, text=True).stdout
    share, n = held_share(samples(script))
    kept = "" if args.keep_output_bytes < 0 else f", output memory kept up to {args.keep_output_bytes:,} bytes"
    print(f"fleet loop, {args.groups:,} groups, {args.batch_groups:,} per batch{kept}, {args.strategy}, one thread: "
          f"GIL held {share:.1%} of {n:,} CPU samples; threads' speed-up at most {1 / share:.0f}x "
          f"(1 / held; on 2 threads min(2, 1 / held) = {min(2.0, 1 / share):.2f}x)")


if __name__ == "__main__":
    main()
