from __future__ import annotations

from typing import Iterator

import pytest

from server_support import Consumers
from server_wire import ServerThread


@pytest.fixture
def server():
    s = ServerThread(topics={"t": 3}, config={"group.initial.rebalance.delay.ms": 0,
                                              "group.min.session.timeout.ms": 10})
    yield s
    s.stop()


@pytest.fixture
def consumers() -> Iterator[Consumers]:
    """Python client processes (no JVM), stopped after the test; modules with Java clients override it."""
    launcher = Consumers(None)
    try:
        yield launcher
    finally:
        launcher.stop_all()
