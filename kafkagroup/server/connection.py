"""One client connection: read a request, answer it, read the next -- as a Kafka broker does.

A broker handles one request of a connection at a time (it mutes the channel until the answer is sent),
so answers leave in request order and a request is never handled before the previous one is answered.
This connection does the same with a coroutine per connection: a client may pipeline as many requests as
it likes (they wait in the socket buffer), and a parked JoinGroup or SyncGroup suspends only this
coroutine while the loop serves every other connection and the coordinator's timers.

A frame that does not parse (garbage, truncation, a size above ``socket.request.max.bytes``), an API key or
version outside :data:`kafkagroup.server.versions.SUPPORTED`, or a handler failure closes this connection
with one logged line naming the peer and the reason; nothing else is touched.  A client that goes away
while its JoinGroup is parked is noticed by the coordinator's session timeout, as in Kafka.
"""
from __future__ import annotations

import asyncio
import inspect
import logging

from kafkagroup.messages.deferred import NotReadyError
from kafkagroup.server.entities import to_entity
from kafkagroup.server.framing import FrameError, Request, decode_request, encode_response, read_frame
from kafkagroup.server.handlers import HANDLERS
from kafkagroup.server.state import NO_RESPONSE, NodeState
from kafkagroup.server.versions import API_NAMES, response_class

__all__ = ["serve_connection"]

log = logging.getLogger("kafkagroup.server")
_WRITE_HIGH_WATER = 256 * 1024     # await drain() only when this much is buffered (pipelined answers)


async def serve_connection(state: NodeState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           max_request_bytes: int) -> None:
    peername = writer.get_extra_info("peername")
    # the member's client host as Kafka records it: InetAddress.toString() of an unresolved address, "/ip"
    peer_host = f"/{peername[0]}" if isinstance(peername, tuple) else str(peername)
    peer = f"{peername[0]}:{peername[1]}" if isinstance(peername, tuple) else str(peername)
    request: Request | None = None
    try:
        while True:
            request = None
            frame = await read_frame(reader, max_request_bytes)
            if frame is None:
                break
            request = decode_request(frame)
            result = HANDLERS[request.api_key](state, request, peer_host)
            if inspect.isawaitable(result):
                result = await result
            if result is NO_RESPONSE:
                continue
            version = request.api_version if request.body is not None else 0
            body = to_entity(response_class(request.api_key, version), result)
            writer.write(encode_response(request.api_key, version, request.correlation_id, body))
            if writer.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                await writer.drain()
    except FrameError as e:
        log.warning("closing connection from %s: %s", peer, e)
    except NotReadyError as e:
        log.info("closing connection from %s: %s (Kafka never answers it; the client times out)", peer, e)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    except asyncio.CancelledError:
        raise
    except Exception:
        what = (f"{API_NAMES.get(request.api_key, request.api_key)} v{request.api_version} "
                f"(correlation id {request.correlation_id})") if request else "a request"
        log.exception("closing connection from %s: internal error handling %s", peer, what)
    finally:
        writer.close()
