"""``kafkagroup serve``: run the group coordinator on Kafka's wire protocol until Ctrl-C / SIGTERM.

    kafkagroup serve --listen 127.0.0.1:9092 --store groups.sqlite --topic orders:6 \\
        --config group.initial.rebalance.delay.ms=0

The first line on stdout (flushed) is ``kafkagroup serve: listening on HOST:PORT`` with the bound port
(``--listen 127.0.0.1:0`` picks a free one); with ``--control HOST:PORT`` the second is ``kafkagroup serve:
control on http://HOST:PORT``, the test control endpoint (kafkagroup.testing.http; ``kafkagroup ctl``).  SIGINT and SIGTERM stop accepting, close every connection
and the store (every acknowledged commit is already durable), and exit 0.

Wiring (kafkagroup/cli.py): ``EXTRA_COMMANDS["serve"] = (HELP, add_arguments, run)``.  kio is imported only
by ``run``, so ``kafkagroup --help`` works without it.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sqlite3
import sys
from typing import Any

HELP = "run the group coordinator on Kafka's wire protocol for real clients (in-memory record log)"

DESCRIPTION = """\
Run one Kafka node (id 0) that real consumers and producers (Java, librdkafka/confluent-kafka,
kafka-python, aiokafka) connect to: kafkagroup's group coordinator answers FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit/OffsetFetch and the admin group APIs; a small log answers
Produce, Fetch and ListOffsets so that records flow, and the topic admin APIs (CreateTopics,
CreatePartitions, DeleteTopics, DeleteRecords, DescribeConfigs).

THE RECORD LOG IS IN MEMORY: records are lost when the server stops. Committed offsets and group state
are kept in --store (SQLite) and survive a restart; without --store they are in memory too.

--config KEY=VALUE takes Kafka's broker config names:
{config}
Not implemented: transactions (a transactional producer is refused at once with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), fetch sessions, more than one node, TLS/SASL; an API that is not
implemented is not advertised, or answered UNSUPPORTED_VERSION where Kafka 4.4 does so with its feature off."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kafkagroup.server.config import describe_config

    parser.description = DESCRIPTION.format(config=describe_config())
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--listen", default="127.0.0.1:9092", metavar="HOST:PORT",
                        help="address to listen on and advertise as node 0 (port 0: any free port; "
                             "default 127.0.0.1:9092)")
    parser.add_argument("--store", metavar="PATH",
                        help="SQLite file for committed offsets and group state (default: in memory, "
                             "lost on exit)")
    parser.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS",
                        help="create a topic at start (repeatable); others are auto-created with "
                             "num.partitions")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a Kafka broker config (repeatable; names listed above)")
    parser.add_argument("--control", metavar="HOST:PORT",
                        help="also serve the test control endpoint (JSON over HTTP: observe groups, wait, expire "
                             "members, inject errors and delays; kafkagroup ctl) on this address; keep it on "
                             "127.0.0.1, it has no authentication")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                        help="stderr log level (default info)")


def _parse_topics(specs: list[str]) -> dict[str, int]:
    topics: dict[str, int] = {}
    for spec in specs:
        name, sep, count = spec.rpartition(":")
        if not sep or not name:
            raise ValueError(f"--topic {spec!r}: expected NAME:PARTITIONS")
        try:
            topics[name] = int(count)
        except ValueError:
            raise ValueError(f"--topic {spec!r}: partition count {count!r} is not a number") from None
    return topics


def _parse_value(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        return text


def _parse_config(specs: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--config {spec!r}: expected KEY=VALUE")
        config[key.strip()] = _parse_value(value)
    return config


async def _run(listen: str, store: str | None, topics: dict[str, int], config: dict[str, Any],
               control: str | None = None) -> None:
    from contextlib import AsyncExitStack

    from kafkagroup.server.app import serve

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        server = await stack.enter_async_context(serve(listen, store=store, topics=topics, config=config))
        # Everything imported and built so far lives as long as the process: keep it out of the cyclic
        # garbage collector's full passes, which would otherwise walk it (~100 ms with the loop held, a
        # pause every group's heartbeats would feel) whenever enough short-lived request objects pile up.
        gc.collect()
        gc.freeze()
        print(f"kafkagroup serve: listening on {server.bootstrap}", flush=not control)
        if control is not None:
            from kafkagroup.testing.http import control_endpoint

            url = await stack.enter_async_context(control_endpoint(server, control))
            print(f"kafkagroup serve: control on {url}", flush=True)
        await stop.wait()
        logging.getLogger("kafkagroup.server").info("stopping (signal received)")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from kafkagroup.extras import require

    require("serve", ("kio", "cramjam"), "serve")
    try:
        topics = _parse_topics(args.topic)
        config = _parse_config(args.config)
        asyncio.run(_run(args.listen, args.store, topics, config, args.control))
    except (ValueError, OSError, sqlite3.Error) as e:
        print(f"kafkagroup serve: {e}", file=sys.stderr)
        return 2
    return 0
