"""The engine refuses a problem over MAX_PARTITIONS before allocating for it (issue 10, defect 5).

``assign_arrays("roundrobin", partition_count=[2**31-1], ...)`` used to allocate owner[] and working arrays
for two billion partitions (24 GB seen) until the OS killed the process.  The refusals run in a child
process whose address space is capped at 2 GiB, so a regression fails the test (MemoryError or a dead
child) instead of taking the machine down.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kafkagroup
from kafkagroup import _core
from kafkagroup.cli import main
from kafkagroup.engine import MAX_PARTITIONS
from kafkagroup.errors import InvalidGroupError

REPO = Path(__file__).resolve().parents[2]
STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def test_the_bound_is_2_to_the_28_and_documented() -> None:
    assert MAX_PARTITIONS == _core.MAX_PARTITIONS == 2**28
    assert "MAX_PARTITIONS" in kafkagroup.engine.__doc__
    assert "2**28" in (REPO / "README.md").read_text()


def _address_sanitizer_loaded() -> bool:
    """True when this interpreter runs with AddressSanitizer (tools/sanitize.sh preloads libasan)."""
    try:
        return "libasan" in Path("/proc/self/maps").read_text()
    except OSError:
        return "libasan" in os.environ.get("LD_PRELOAD", "")


# AddressSanitizer reserves terabytes of address space for its shadow memory at start-up, so a child
# capped at 2 GiB (RLIMIT_AS) dies before running a line; the refusal itself is covered by the
# uncapped tests here, and the sanitizer checks every allocation of the others.
needs_address_space_cap = pytest.mark.skipif(
    _address_sanitizer_loaded(),
    reason="skipped under AddressSanitizer: its shadow memory cannot live under a 2 GiB RLIMIT_AS cap")


def run_capped(code: str) -> str:
    """Run ``code`` in a child limited to 2 GiB of address space; returns its stdout."""
    script = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        import kafkagroup
        from kafkagroup.errors import InvalidGroupError
    """) + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@needs_address_space_cap
@pytest.mark.parametrize("counts, topic, total", [
    ([2**31 - 1], 0, 2**31 - 1),
    ([5, 2**28 - 5, 1], 2, 2**28 + 1),
    ([2**27, 2**27, 2**27], 2, 3 * 2**27),
])
def test_array_api_refuses_before_allocating(counts: list[int], topic: int, total: int) -> None:
    out = run_capped(f"""
        for strategy in {STRATEGIES!r}:
            try:
                kafkagroup.assign_arrays(strategy, partition_count={counts!r}, sub_offsets=[0, 1, 2],
                                         sub_topics=[0, 0])
            except InvalidGroupError as e:
                print(e)
            else:
                print("assigned")
    """)
    lines = out.splitlines()
    assert len(lines) == len(STRATEGIES)
    for line in lines:
        assert line == (f"topic {topic}: {counts[topic]} partitions bring the total to {total}, "
                        f"over the engine's limit of {MAX_PARTITIONS} (2^28) partitions")


@needs_address_space_cap
def test_named_api_refuses_naming_the_topic() -> None:
    out = run_capped("""
        try:
            kafkagroup.assign("roundrobin", {"small": 3, "huge": 2**31 - 1}, {"C0": {"topics": ["small", "huge"]}})
        except InvalidGroupError as e:
            print(e)
    """)
    assert out.strip() == ("topic 'huge': 2147483647 partitions bring the total to 2147483647, over the "
                           f"engine's limit of {MAX_PARTITIONS} (2^28) partitions")   # 'huge' sorts first


def test_build_group_accepts_exactly_the_bound_and_refuses_one_more() -> None:
    group = kafkagroup.build_group({"a": MAX_PARTITIONS - 1, "b": 1}, {"C0": {"topics": ["a", "b"]}})
    assert int(group.topic_base[-1]) == MAX_PARTITIONS
    with pytest.raises(InvalidGroupError, match=r"topic 'b': 2 partitions bring the total to 268435457"):
        kafkagroup.build_group({"a": MAX_PARTITIONS - 1, "b": 2}, {"C0": {"topics": ["a", "b"]}})
    # topics nobody subscribes to do not count
    kafkagroup.build_group({"a": 1, "b": 2**31 - 1}, {"C0": {"topics": ["a"]}})


def test_cli_refuses_with_a_message_and_no_traceback(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"topics": {"t0": 2**31 - 1}, "members": {"C0": {"topics": ["t0"]}}}))
    assert main(["assign", str(path), "--strategy", "roundrobin"]) == 2
    err = capsys.readouterr().err
    # the CLI's own, lower bound on group files (kafkagroup/groupfile.py) answers first
    assert err == (f"kafkagroup: {path}: topic 't0': 2,147,483,647 partitions; kafkagroup assign takes at most "
                   f"2,000,000 partitions per group (kafkagroup.assign_arrays for larger)\n")
