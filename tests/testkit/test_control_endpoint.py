"""The control endpoint of `kafkagroup serve --control` and `kafkagroup ctl` (issue 25), with kafka-python
consumers in a group on a serve subprocess: what the shell sees matches what the clients see."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from kafkagroup.server.faults import error_answer
from kafkagroup.server.framing import Request, encode_response
from kafkagroup.server.versions import SUPPORTED
from kafkagroup.testing import ControlClient, start_server
from kafkagroup.testing.control import api_key, error_code


def ctl(url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkagroup", "ctl", "--control", url, *args],
                          capture_output=True, text=True, timeout=60)


def _kafka_python_consumer(bootstrap: str, group: str):
    from kafka import KafkaConsumer

    return KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=100, consumer_timeout_ms=100)


def _poll_until(consumers, done, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "condition not reached"
        for c in consumers:
            c.poll(timeout_ms=50)


def test_serve_subprocess_observed_and_steered_from_ctl(kafka_python_finishes_pending_joins: None) -> None:
    """Two in-process kafka-python consumers observed and steered through ``kafkagroup ctl``; kafka-python's
    pending-join defect (tests/server/test_kafka_python_pending_join.py) is worked around, so a short poll that
    gives up during a join round cannot strand a member and decide the outcome."""
    with start_server({"orders": 4}, subprocess=True) as server:
        assert isinstance(server.control, ControlClient) and server.control_url.startswith("http://127.0.0.1:")
        url = server.control_url
        a = _kafka_python_consumer(server.bootstrap, "app")
        b = _kafka_python_consumer(server.bootstrap, "app")
        _poll_until([a, b], lambda: len(a.assignment()) + len(b.assignment()) == 4 and a.assignment()
                    and b.assignment())
        waited = ctl(url, "--json", "wait", "app", "--members", "2", "--timeout", "20")
        assert waited.returncode == 0, waited.stderr
        view = json.loads(waited.stdout)
        assert view["state"] == "Stable" and len(view["members"]) == 2
        by_member = {m["member_id"]: m["assignment"]["orders"] for m in view["members"]}
        # what each client holds is what the control reports for its member id
        assert by_member[a._coordinator._generation.member_id] == sorted(tp.partition for tp in a.assignment())
        assert by_member[b._coordinator._generation.member_id] == sorted(tp.partition for tp in b.assignment())
        listed = ctl(url, "groups")
        assert listed.returncode == 0 and f"app  Stable  generation {view['generation']}" in listed.stdout

        # b leaves (LeaveGroup): a gets all four; then a's session is expired from the shell
        old_b = b._coordinator._generation.member_id
        b.close(autocommit=False)      # sends LeaveGroup; the group rebalances to a alone
        _poll_until([a], lambda: len(a.assignment()) == 4)
        expired = ctl(url, "expire", "app", a._coordinator._generation.member_id)
        assert expired.returncode == 0 and expired.stdout.startswith("expired ")
        assert ctl(url, "expire", "app", old_b).returncode == 1      # gone already
        # a finds out at its next heartbeat and rejoins under a new member id
        old_a = a._coordinator._generation.member_id
        _poll_until([a], lambda: a._coordinator._generation.member_id not in ("", old_a) and len(a.assignment()) == 4)

        # a wait that cannot be met: exit 1 and a line naming what was seen
        timed_out = ctl(url, "wait", "app", "--members", "3", "--timeout", "0.2")
        assert timed_out.returncode == 1 and "not Stable with 3 member(s)" in timed_out.stderr
        a.close(autocommit=False)


def test_ctl_fault_commands_and_mistakes() -> None:
    with start_server({"orders": 1}, subprocess=True) as server:
        url = server.control_url
        added = ctl(url, "--json", "error", "join_group", "NOT_COORDINATOR", "--count", "2", "--client-id", "c1")
        assert added.returncode == 0, added.stderr
        assert json.loads(added.stdout) == {"api_key": 11, "action": "error", "count": 2, "error_code": 16,
                                            "delay_ms": 0, "client_id": "c1", "applied": 0}
        assert ctl(url, "delay", "Fetch", "250", "--count", "0").returncode == 0
        rules = json.loads(ctl(url, "--json", "faults").stdout)
        assert [(r["action"], r["count"]) for r in rules] == [("error", 2), ("delay", None)]
        assert ctl(url, "clear").returncode == 0 and json.loads(ctl(url, "--json", "faults").stdout) == []
        for args, message in ((("error", "Nope", "1"), "unknown API 'Nope'"),
                              (("error", "Heartbeat", "NO_SUCH_ERROR"), "unknown error code 'NO_SUCH_ERROR'")):
            bad = ctl(url, *args)
            assert bad.returncode == 2 and message in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
    gone = ctl(url, "groups")          # the server has stopped
    assert gone.returncode == 2 and "cannot reach" in gone.stderr and "Traceback" not in gone.stderr


@pytest.mark.parametrize("key", sorted(SUPPORTED))
def test_an_error_answer_encodes_for_every_api_and_version(key: int) -> None:
    """A request with no arrays (an empty body): the answer of every version encodes, its errors set."""
    _, low, high = SUPPORTED[key]
    for version in range(low, high + 1):
        entity = error_answer(Request(key, version, 7, "c", SimpleNamespace()), 16)
        assert len(encode_response(key, version, 7, entity)) > 8
        if hasattr(entity, "error_code"):
            assert int(entity.error_code) == 16


def test_names_and_numbers() -> None:
    assert api_key("JoinGroup") == api_key("join_group") == api_key(11) == 11
    assert error_code("not_coordinator") == error_code(16) == 16
    with pytest.raises(ValueError, match="unknown API"):
        api_key(999)
