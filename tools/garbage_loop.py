"""What the garbage drivers (engine_garbage.py, codec_garbage.py) share: their common options, and the loop
that runs cases, counts outcomes, reports failures and keeps a progress file current.

A driver's case returns the name of its outcome ("assigned", "rejected", ...) or raises AssertionError
saying what is wrong. The progress file always holds the case being run, so an abort under the sanitizers
(which kills the process without a Python traceback) still names the case to ``--replay``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from typing import Callable


def parser(doc: str | None, cases_help: str | None = None) -> argparse.ArgumentParser:
    """An argument parser with the options every driver takes: --cases, --seed, --replay, --progress."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=20000, help=cases_help)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--replay", type=int, help="run only case I, printing it")
    ap.add_argument("--progress", help="file that always holds the case being run (survives an abort)")
    return ap


class CaseLoop:
    """Runs batches of cases; ``failures`` counts the cases that raised AssertionError over all batches."""

    def __init__(self, progress_path: str | None) -> None:
        self._progress = (os.open(progress_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                          if progress_path else None)
        self.failures = 0

    def run(self, label: str, cases: int, case: Callable[[int], str]) -> tuple[Counter[str], float]:
        """``case(i)`` for i in range(cases): the outcomes counted by name, and the seconds the batch took."""
        tally: Counter[str] = Counter()
        start = time.perf_counter()
        for i in range(cases):
            if self._progress is not None:
                os.pwrite(self._progress, f"{label} case={i}\n".ljust(64).encode(), 0)
            try:
                tally[case(i)] += 1
            except AssertionError as e:
                self.failures += 1
                print(f"FAIL {label} case={i}: {e}", file=sys.stderr)
        return tally, time.perf_counter() - start

    def exit_status(self) -> int:
        return 1 if self.failures else 0
