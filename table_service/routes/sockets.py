"""A WebSocket's connection as the stream hub writes live frames to it (:class:`Live`).

A live frame of a table goes to each of its ~25-35 subscribers, one after another on the
event loop; through the ASGI ``send`` each took a turn of the subscriber's task, then the
WebSocket frame built for it alone and the ASGI layers (Starlette's, uvicorn's) before its
socket's write. Under ``serve`` the connection is uvicorn's ``websockets-sansio`` protocol
(``LIVETABLE_STREAM_WEBSOCKET``): the hub hands it the frame's bytes (built once per event
and audience) itself, through the same checks the ASGI ``send`` makes first (the
connection open, no close sent, nothing of the protocol's own waiting to go out, the
transport not paused: otherwise the subscriber's task sends it, through ``send``, waiting
as it did). Any other implementation, or a connection that negotiated an extension
(permessage-deflate: each frame compressed in its connection's context), is left to
``send``.
"""

from __future__ import annotations

from typing import Any

from starlette.websockets import WebSocket
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

# What ready() reads of uvicorn's protocol and of websockets' connection: not public API,
# so a connection of a version without one of them is left to ``send`` (as any other
# implementation is) rather than failing its subscriber's frames.
_PROTOCOL_PARTS = ("writable", "disconnected", "close_sent", "initial_response", "transport")
_CONNECTION_PARTS = ("state", "expect_continuation_frame", "writes", "extensions")

CONNECTION = "livetable.connection"  # the scope's key for the server's connection


class Connections:
    """ASGI middleware, outermost: a WebSocket's ``send`` is its server protocol's own
    method there, and the protocol is kept in the scope (see :func:`socket_of`)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            scope[CONNECTION] = getattr(send, "__self__", None)
        await self.app(scope, receive, send)


class SansIOSocket:
    """The :class:`~table_service.table.stream.Socket` of a ``websockets-sansio``
    connection."""

    def __init__(self, protocol: WebSocketsSansIOProtocol) -> None:
        self.protocol = protocol
        self.conn = protocol.conn
        self.transport = protocol.transport

    def ready(self) -> bool:
        # What uvicorn's send waits for or refuses (writable, disconnected, close_sent,
        # an HTTP answer instead of the handshake) and websockets' send_text refuses (not
        # open, a fragmented message begun); and the protocol's own frames not yet
        # written (a pong, a close), which go first.
        protocol, conn = self.protocol, self.conn
        return (
            protocol.writable.is_set()
            and not protocol.disconnected
            and not protocol.close_sent
            and protocol.initial_response is None
            and conn.state is State.OPEN
            and not conn.expect_continuation_frame
            and not conn.writes
            and not self.transport.is_closing()
        )

    def write(self, data: bytes) -> None:
        self.transport.write(data)


def socket_of(websocket: WebSocket) -> SansIOSocket | None:
    """The connection of an accepted WebSocket, for the hub to write to; None if it is not
    a ``websockets-sansio`` one without extensions (its frames then go through ``send``)."""
    protocol = websocket.scope.get(CONNECTION)
    if not isinstance(protocol, WebSocketsSansIOProtocol):
        return None
    conn = getattr(protocol, "conn", None)
    if not all(hasattr(protocol, part) for part in _PROTOCOL_PARTS) or not all(
        hasattr(conn, part) for part in _CONNECTION_PARTS
    ):
        return None
    if protocol.conn.extensions:
        return None
    return SansIOSocket(protocol)
