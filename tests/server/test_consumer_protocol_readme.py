"""The README's KIP-848 example runs as written against `kafkagroup serve` (its address swapped for the test
server's): the consumer with group.protocol=consumer reads the 100 records it produced."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from server_wire import ServerThread

from tests.coordinator.consumer_helpers import needs_server_assignors

README = Path(__file__).resolve().parents[2] / "README.md"


@needs_server_assignors
def test_readme_consumer_protocol_example_runs_as_written():
    text = README.read_text(encoding="utf-8")
    section = text.split("### The consumer group protocol (KIP-848)", 1)[1].split("\n### ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    server = ServerThread(topics={"orders": 6})
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace("127.0.0.1:9092", server.bootstrap), "README.md", "exec"), {})
    finally:
        server.stop()
    printed = out.getvalue().splitlines()
    # close() leaves the group: the partitions are revoked on the way out
    assert printed == ["assigned [0, 1, 2, 3, 4, 5]", "read 100", "revoked [0, 1, 2, 3, 4, 5]"], printed
