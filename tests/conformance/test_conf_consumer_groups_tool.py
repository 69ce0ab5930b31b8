"""Apache Kafka's own `kafka-consumer-groups` tool (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
from kafka-tools 4.4.0, as its shell script runs it) against a group a confluent-kafka consumer commits in:
describe (offsets, state, members) while it runs, reset-offsets refused while it is active, then, once its
session has expired, reset-offsets --to-earliest, --delete-offsets and --delete. The tool's printed tables
must be the same from both servers once ports, coordinator ids and generated member ids are normalised."""
from __future__ import annotations

import re
import subprocess

from conformance_support import wait_group, wait_settled
from kafka_broker import kafka4_lib
from server_support import produce, wait_until

TOPIC = "c.tool"        # 2 partitions
TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def tool(run, *args: str) -> list[list[str]]:
    """Run the tool; its stdout and stderr as lines of whitespace-separated words, normalised: host:port ->
    BROKER, "(node id)" -> (node), member ids (client id + UUID) -> MEMBER; the JVM's warnings dropped."""
    out = subprocess.run(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
                          "-cp", f"{kafka4_lib()}/*", TOOL, "--bootstrap-server", run.bootstrap, *args],
                         capture_output=True, text=True, timeout=120)
    lines = []
    for line in (out.stdout + "\n" + out.stderr).splitlines():
        if not line.strip() or line.startswith("SLF4J") or "WARN" in line:
            continue
        line = re.sub(r"\b[\w.-]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "MEMBER", line)
        line = re.sub(r"127\.0\.0\.1:\d+", "BROKER", line)
        line = re.sub(r"\(\d+\)", "(node)", line)
        lines.append(line.split())
    return lines + [["exit", str(out.returncode)]]


def test_describe_reset_delete(conformance):
    def scenario(run):
        group = run.group()
        seen = {}
        landed = produce(run.bootstrap, TOPIC, [f"{run.scenario_id}-{i}" for i in range(12)], offsets=True)
        end = {}
        for t, p, o in landed.values():
            end[(t, p)] = max(end.get((t, p), 0), o + 1)
        c = run.start("confluent", group, [TOPIC], name="c", group_instance_id="c", strategy="range",
                      session_timeout_ms=6000)
        wait_settled([c], {(TOPIC, 0), (TOPIC, 1)})
        wait_until(lambda: all(c.committed().get(tp, -1) >= n for tp, n in end.items()), 60,
                   "the consumer to commit what it read")
        wait_group(run.wire(), group, "Stable", members=1)
        seen["describe.active"] = tool(run, "--describe", "--group", group)
        seen["describe.state"] = tool(run, "--describe", "--group", group, "--state")
        seen["describe.members"] = tool(run, "--describe", "--group", group, "--members", "--verbose")
        seen["reset.active"] = tool(run, "--reset-offsets", "--group", group, "--topic", TOPIC, "--to-earliest",
                                    "--execute")
        c.kill()          # a static member: its session must expire before the group is Empty
        wait_group(run.wire(), group, "Empty", members=0, timeout=60)
        seen["reset.to_offset"] = tool(run, "--reset-offsets", "--group", group, "--topic", f"{TOPIC}:0",
                                       "--to-offset", "2", "--execute")
        seen["reset.shift_dry_run"] = tool(run, "--reset-offsets", "--group", group, "--topic", TOPIC,
                                           "--shift-by", "-1", "--dry-run")
        seen["describe.empty"] = tool(run, "--describe", "--group", group)
        seen["delete_offsets"] = tool(run, "--delete-offsets", "--group", group, "--topic", f"{TOPIC}:1")
        seen["delete"] = tool(run, "--delete", "--group", group)
        seen["describe.deleted"] = tool(run, "--describe", "--group", group)
        return seen

    conformance(scenario)
