"""One client connection: requests handled one at a time, in order -- as a Kafka broker does.

A broker handles one request of a connection at a time (it mutes the channel until the answer is sent),
so answers leave in request order and a request is never handled before the previous one is answered.
This connection does the same with a coroutine per connection: it reads whatever the socket holds, cuts
it into frames (:class:`~kafkagroup.server.framing.FrameBuffer`) and handles them in order; the answers
of requests handled at once (pipelined heartbeats, say) leave in one write.  A parked JoinGroup or
SyncGroup, or a Fetch waiting for data, suspends only this coroutine (earlier answers are written first)
while the loop serves every other connection and the coordinator's timers.

A frame that does not parse (garbage, truncation, a size above ``socket.request.max.bytes``, a null where
Kafka forbids one), an API key or version outside :data:`kafkagroup.server.versions.ADVERTISED`, or a
handler failure closes this connection with one logged line naming the peer and the reason; answers to
the requests before it are still sent; nothing else is touched.  A client that goes away while its
JoinGroup is parked is noticed by the coordinator's session timeout, as in Kafka.
"""
from __future__ import annotations

import asyncio
import inspect
import logging

from kafkagroup.messages.deferred import NotReadyError
from kafkagroup.server.entities import to_entity
from kafkagroup.server.framing import FrameBuffer, FrameError, Request, decode_request, encode_response
from kafkagroup.server.handlers import HANDLERS
from kafkagroup.server.state import NO_RESPONSE, NodeState
from kafkagroup.server.versions import API_NAMES, response_class

__all__ = ["serve_connection"]

log = logging.getLogger("kafkagroup.server")
_READ_SIZE = 256 * 1024
_WRITE_HIGH_WATER = 256 * 1024     # await drain() only when this much is buffered


async def serve_connection(state: NodeState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           max_request_bytes: int) -> None:
    peername = writer.get_extra_info("peername")
    # the member's client host as Kafka records it: InetAddress.toString() of an unresolved address, "/ip"
    peer_host = f"/{peername[0]}" if isinstance(peername, tuple) else str(peername)
    peer = f"{peername[0]}:{peername[1]}" if isinstance(peername, tuple) else str(peername)
    frames = FrameBuffer(max_request_bytes)
    answers: list[bytes] = []
    request: Request | None = None

    def flush() -> None:
        if answers:
            writer.write(b"".join(answers))
            answers.clear()

    try:
        while True:
            chunk = await reader.read(_READ_SIZE)
            if not chunk:
                frames.check_end()
                break
            frames.feed(chunk)
            while (frame := frames.next_frame()) is not None:
                request = decode_request(frame)
                handle = HANDLERS[request.api_key]
                # a test's injected fault (kafkagroup.server.faults), else None: the request is handled as usual
                result = None if state.faults is None else \
                    state.faults.answer(request, lambda: handle(state, request, peer_host))
                if result is None:
                    result = handle(state, request, peer_host)
                if inspect.isawaitable(result):
                    flush()
                    result = await result
                if result is not NO_RESPONSE:
                    version = request.api_version if request.body is not None else 0
                    body = to_entity(response_class(request.api_key, version), result)
                    answers.append(encode_response(request.api_key, version, request.correlation_id, body))
                request = None
            flush()
            if writer.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                await writer.drain()
    except FrameError as e:
        log.warning("closing connection from %s: %s", peer, e)
    except NotReadyError as e:
        log.info("closing connection from %s: %s (Kafka never answers it; the client times out)", peer, e)
    except ConnectionError:
        pass
    except asyncio.CancelledError:
        raise
    except Exception:
        what = (f"{API_NAMES.get(request.api_key, request.api_key)} v{request.api_version} "
                f"(correlation id {request.correlation_id})") if request else "a request"
        log.exception("closing connection from %s: internal error handling %s", peer, what)
    finally:
        try:
            flush()
        except Exception:   # the transport may already be gone; nothing more can be sent
            pass
        writer.close()
