"""One client connection: one request read, handled and answered at a time -- as a Kafka broker does.

A broker mutes a connection from the moment it reads a request until its answer is sent, so answers leave
in request order and a pipelined burst costs one request's memory, not the burst's.  This connection does
the same: :class:`Channel` (the socket's protocol) cuts what arrives into frames
(:class:`~kafkagroup.server.framing.FrameBuffer`) and stops reading from the socket while a complete frame
waits beyond ``_READ_LIMIT`` bytes; :func:`serve_connection` takes one frame, handles it, writes the
answer in slices of ``_WRITE_SLICE`` bytes, waiting for the socket to drain whenever more than
``_WRITE_HIGH_WATER`` bytes are queued (a client that does not read its answers holds one answer, not its
whole backlog), then takes the next frame.  Between two requests of one connection, and after every
``_SLICES_PER_TURN`` slices of a large answer, the loop serves every other connection, so no client's
pipeline delays another group's heartbeats by more than one request's share of work.

A parked JoinGroup or SyncGroup, or a Fetch waiting for data, suspends only this coroutine, and is dropped
when its client goes away (end of stream or a reset), closing the connection at once as Kafka does: a
waiting Fetch is forgotten by the log instead of being kept (and woken on every append) until its max_wait
ends; a parked JoinGroup/SyncGroup stops waiting for the coordinator's answer (bounded only by the
rebalance timeout) -- the coordinator is not told: the member stays until its session or rebalance
timeout, as in Kafka, and the answer, when it comes, goes nowhere.

Answer memory: a request holds an :class:`~kafkagroup.server.answer_budget.AnswerHold` from the moment its
handler reserves (a Fetch, before copying records) or its answer is encoded, until the answer has been
handed to the socket.  A Metadata request answered before (same bytes, topics unchanged) is answered from
:class:`~kafkagroup.server.answer_cache.MetadataCache` without being decoded again.

A frame that does not parse (garbage, truncation, a size above ``socket.request.max.bytes``, a null where
Kafka forbids one), an API key or version outside :data:`kafkagroup.server.versions.ADVERTISED`, or a
handler failure closes this connection with one logged line naming the peer and the reason; answers to
the requests before it are still sent; nothing else is touched.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from kafkagroup.messages.deferred import NotReadyError
from kafkagroup.server.answer_budget import AnswerBudget, AnswerHold, reset_current_hold, set_current_hold
from kafkagroup.server.answer_cache import METADATA as _METADATA, MetadataCache
from kafkagroup.server.entities import to_entity
from kafkagroup.server.framing import EncodedBody, FrameBuffer, FrameError, Request, decode_request, encode_response_pieces, \
    response_header
from kafkagroup.server.handlers import HANDLERS
from kafkagroup.server.state import NO_RESPONSE, NodeState
from kafkagroup.server.versions import API_NAMES, response_class

__all__ = ["Channel", "serve_connection"]

log = logging.getLogger("kafkagroup.server")
_READ_LIMIT = 64 * 1024            # stop reading while a complete frame waits and this much is buffered
_WRITE_HIGH_WATER = 256 * 1024     # wait for the socket to drain above this many queued bytes
_WRITE_LOW_WATER = 64 * 1024
_WRITE_SLICE = 256 * 1024          # a large answer is handed to the socket in slices of this size
_SLICES_PER_TURN = 4               # ... and the loop serves other clients after every 4 (1 MiB)
_FETCH = 1
_PARKED_APIS = frozenset({_FETCH, 11, 14})   # Fetch, JoinGroup, SyncGroup: answered when data or the group is ready


class PeerGone(Exception):
    """The client closed its side (or the connection broke) while its request waited."""


class Channel(asyncio.Protocol):
    """The socket side of one connection: frames in, with reading paused while a request waits; answers
    out, with flow control; ``gone`` set at the client's end of stream or when the connection is lost."""

    def __init__(self, max_request_bytes: int, on_open: Any) -> None:
        self.frames = FrameBuffer(max_request_bytes)
        self.transport: asyncio.Transport | None = None
        self.peername: Any = None
        self._on_open = on_open
        self._loop = asyncio.get_running_loop()
        self.gone: asyncio.Future[None] = self._loop.create_future()
        self._eof = False
        self._lost = False
        self._reading_paused = False
        self._writing_paused = False
        self._frame_waiter: asyncio.Future[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.peername = transport.get_extra_info("peername")
        transport.set_write_buffer_limits(high=_WRITE_HIGH_WATER, low=_WRITE_LOW_WATER)
        self._on_open(self)

    def data_received(self, data: bytes) -> None:
        self.frames.feed(data)
        if len(self.frames) >= _READ_LIMIT and self.frames.has_frame() and not self._reading_paused:
            self._reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self._eof = True
        self._set_gone()
        self._wake_reader()
        return True      # keep the transport: answers to requests already read may still be written

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._set_gone()
        self._wake_reader()
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("connection lost"))

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ------------------------------------------------------------------ for serve_connection
    def _set_gone(self) -> None:
        if not self.gone.done():
            self.gone.set_result(None)

    def _wake_reader(self) -> None:
        waiter, self._frame_waiter = self._frame_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_frame(self) -> bytes | None:
        """The next request frame; None at the end of the stream (a partial frame left is a FrameError)."""
        while True:
            frame = self.frames.next_frame()
            if frame is not None:
                if self._reading_paused and not (len(self.frames) >= _READ_LIMIT and self.frames.has_frame()):
                    self._reading_paused = False
                    assert self.transport is not None
                    if not self._lost:
                        self.transport.resume_reading()
                return frame
            if self._eof or self._lost:
                self.frames.check_end()
                return None
            self._frame_waiter = self._loop.create_future()
            await self._frame_waiter

    def has_frame(self) -> bool:
        return self.frames.has_frame()

    async def write(self, pieces: list[bytes], size: int) -> None:
        """Hand an answer (``pieces`` of ``size`` bytes in all) to the socket: at once when small, else slice
        by slice, waiting for the socket to drain whenever more than the high-water mark is queued."""
        transport = self.transport
        assert transport is not None
        if self._lost:
            raise ConnectionResetError("connection lost")
        if size <= _WRITE_SLICE:
            transport.write(b"".join(pieces))
        else:
            slices = 0
            for piece in pieces:
                view = memoryview(piece)
                for start in range(0, len(view), _WRITE_SLICE):
                    if self._writing_paused:
                        await self._drain()
                    elif slices % _SLICES_PER_TURN == _SLICES_PER_TURN - 1:
                        await asyncio.sleep(0)    # the socket keeps taking it: let other clients go between
                    transport.write(view[start:start + _WRITE_SLICE])
                    slices += 1
        await self._drain()

    async def _drain(self) -> None:
        if self._lost:
            raise ConnectionResetError("connection lost")
        if not self._writing_paused:
            return
        self._drain_waiter = self._loop.create_future()
        await self._drain_waiter

    async def unless_gone(self, awaitable: Any) -> Any:
        """Await ``awaitable`` as a task; cancel it and raise :class:`PeerGone` if the client goes first.
        The task is awaited directly (its answer reaches the connection one loop pass after it completes,
        as an awaitable awaited inline would: the shutdown's loop passes for parked answers still suffice)."""
        task = asyncio.ensure_future(awaitable)

        def stop(_: Any) -> None:
            task.cancel()

        self.gone.add_done_callback(stop)
        try:
            return await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if task.cancelled() and self.gone.done() and not (me is not None and me.cancelling()):
                raise PeerGone() from None
            raise
        finally:
            self.gone.remove_done_callback(stop)
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def serve_connection(state: NodeState, channel: Channel, budget: AnswerBudget,
                           metadata: MetadataCache) -> None:
    peername = channel.peername
    # the member's client host as Kafka records it: InetAddress.toString() of an unresolved address, "/ip"
    peer_host = f"/{peername[0]}" if isinstance(peername, tuple) else str(peername)
    peer = f"{peername[0]}:{peername[1]}" if isinstance(peername, tuple) else str(peername)
    request: Request | None = None
    try:
        while (frame := await channel.next_frame()) is not None:
            hold = AnswerHold(budget)
            token = set_current_hold(hold)
            try:
                # a test's injected faults must see every request: no cached answers while any is set
                cacheable = metadata.key(frame) if state.faults is None or not state.faults.active() else None
                cached = metadata.get(cacheable[0]) if cacheable is not None else None
                if cached is not None:              # a Metadata request answered before, topics unchanged
                    (version, _), correlation_id = cacheable  # type: ignore[misc]
                    answer: list[bytes] | None = [response_header(_METADATA, version, correlation_id, len(cached)),
                                                  cached]
                else:
                    request = decode_request(frame)
                    del frame
                    answer, keep = await _answer(state, channel, request, peer_host)
                    if cacheable is not None and answer is not None and keep:
                        metadata.put(cacheable[0], b"".join(answer[1:]))
                if answer is not None:
                    size = sum(map(len, answer))
                    if not hold.bytes:
                        hold.count(size)
                    await channel.write(answer, size)
                    del answer
            finally:
                hold.release()
                reset_current_hold(token)
            request = None
            if channel.has_frame():
                await asyncio.sleep(0)     # the next request is here already: let every other client go first
    except FrameError as e:
        log.warning("closing connection from %s: %s", peer, e)
    except NotReadyError as e:
        log.info("closing connection from %s: %s (Kafka never answers it; the client times out)", peer, e)
    except PeerGone:
        what = API_NAMES.get(request.api_key, request.api_key) if request else "request"
        log.debug("closing connection from %s: the client went away while its %s waited", peer, what)
    except ConnectionError:
        pass
    except asyncio.CancelledError:
        raise
    except Exception:
        what = (f"{API_NAMES.get(request.api_key, request.api_key)} v{request.api_version} "
                f"(correlation id {request.correlation_id})") if request else "a request"
        log.exception("closing connection from %s: internal error handling %s", peer, what)
    finally:
        channel.close()


async def _answer(state: NodeState, channel: Channel, request: Request, peer_host: str
                  ) -> tuple[list[bytes] | None, bool]:
    """The answer to ``request`` as pieces to write (size prefix and header first), None when Kafka sends none;
    and whether the whole-answer Metadata cache may keep it."""
    version = request.api_version if request.body is not None else 0
    handle = HANDLERS[request.api_key]
    # a test's injected fault (kafkagroup.server.faults), else None: the request is handled as usual
    result = None if state.faults is None else state.faults.answer(request, lambda: handle(state, request, peer_host))
    if result is None:
        result = handle(state, request, peer_host)
    if inspect.isawaitable(result):
        result = await (channel.unless_gone(result) if request.api_key in _PARKED_APIS else result)
    if result is NO_RESPONSE:
        return None, False
    if isinstance(result, EncodedBody):          # Metadata: assembled from kept pieces by its handler
        size = sum(map(len, result.pieces))
        return [response_header(request.api_key, version, request.correlation_id, size), *result.pieces], \
            result.cacheable
    body = to_entity(response_class(request.api_key, version), result)
    del result
    return encode_response_pieces(request.api_key, version, request.correlation_id, body), True
