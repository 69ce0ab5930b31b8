"""A kafkagroup node for tests, started in this process (a thread running its event loop) or as a
``kafkagroup serve`` subprocess, on a free loopback port, with no initial rebalance delay.

    with start_server({"orders": 6}) as kafka:               # in process (default)
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, ...})
        kafka.control.wait("billing", members=1)

``subprocess=True`` runs ``python -m kafkagroup serve --listen 127.0.0.1:0 --control 127.0.0.1:0`` and
controls it over HTTP (:class:`~kafkagroup.testing.control.ControlClient`); the in-process node is
controlled directly (:class:`~kafkagroup.testing.control.Control`). ``config`` takes the broker keys of
``kafkagroup serve --config``; ``group.initial.rebalance.delay.ms`` defaults to 0 here (Kafka's test
brokers do the same; a production broker waits 3 s for more members before the first rebalance).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import asyncio
import os
import subprocess as _subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["KafkaServer", "start_server", "TEST_DEFAULTS"]

TEST_DEFAULTS: Mapping[str, Any] = {"group.initial.rebalance.delay.ms": 0}


class KafkaServer(ABC):
    """A running node: ``bootstrap`` ("127.0.0.1:PORT"), ``control``, ``control_url`` (subprocess, or
    in process once :meth:`control_endpoint` was asked for), ``stop()`` (also on leaving ``with``)."""

    bootstrap: str
    control: Any
    control_url: str | None

    def __enter__(self) -> "KafkaServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @abstractmethod
    def stop(self) -> None:
        """Stop the node (idempotent)."""


class _InProcess(KafkaServer):
    def __init__(self, topics: Mapping[str, int], config: Mapping[str, Any], store: str | None,
                 control_listen: str | None) -> None:
        from kafkagroup.server.app import serve
        from kafkagroup.testing.control import Control

        self.control_url = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                async with serve("127.0.0.1:0", store=store, topics=topics, config=config) as server:
                    self.server = server
                    self.bootstrap = server.bootstrap
                    self.control = Control(server, self._loop)
                    if control_listen is not None:
                        from kafkagroup.testing.http import control_endpoint

                        async with control_endpoint(server, control_listen) as url:
                            self.control_url = url
                            self._ready.set()
                            await self._stop.wait()
                    else:
                        self._ready.set()
                        await self._stop.wait()
            except BaseException as e:     # handed to the starting thread
                self._error = e
                self._ready.set()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(main())
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="kafkagroup-test-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    def stop(self) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join()


class _Subprocess(KafkaServer):
    def __init__(self, topics: Mapping[str, int], config: Mapping[str, Any], store: str | None) -> None:
        from kafkagroup.testing.control import ControlClient

        cmd = [sys.executable, "-m", "kafkagroup", "serve", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0",
               "--log-level", "warning"]
        if store is not None:
            cmd += ["--store", store]
        for name, partitions in topics.items():
            cmd += ["--topic", f"{name}:{partitions}"]
        for key, value in config.items():
            cmd += ["--config", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
        self._proc = _subprocess.Popen(cmd, stdout=_subprocess.PIPE, text=True, env={**os.environ})
        lines = []
        assert self._proc.stdout is not None
        while len(lines) < 2:
            line = self._proc.stdout.readline()
            if not line:
                code = self._proc.wait()
                raise RuntimeError(f"kafkagroup serve exited with {code} before listening: {' '.join(lines)}")
            lines.append(line.strip())
        self.bootstrap = lines[0].rsplit(" ", 1)[1]
        self.control_url = lines[1].rsplit(" ", 1)[1]
        self.control = ControlClient(self.control_url)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except _subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def start_server(topics: Mapping[str, int] | None = None, config: Mapping[str, Any] | None = None, *,
                 subprocess: bool = False, store: str | None = None,
                 control_listen: str | None = None) -> KafkaServer:
    """Start a node (module docstring). ``control_listen`` ("127.0.0.1:0") also opens the HTTP control
    endpoint of an in-process node (a subprocess always has one)."""
    merged = {**TEST_DEFAULTS, **(config or {})}
    if subprocess:
        return _Subprocess(dict(topics or {}), merged, store)
    return _InProcess(dict(topics or {}), merged, store, control_listen)
