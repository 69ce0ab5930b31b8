from __future__ import annotations

import pytest

from server_wire import ServerThread


@pytest.fixture
def server():
    s = ServerThread(topics={"t": 3}, config={"group.initial.rebalance.delay.ms": 0,
                                              "group.min.session.timeout.ms": 10})
    yield s
    s.stop()
