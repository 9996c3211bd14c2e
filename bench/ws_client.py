"""PlayMatch over the web port's WebSocket (gateway/web_socket.py), as a browser plays it: the
framing of improbable-eng/grpc-web's websocket transport, on the ``websockets`` library.

``SocketGameClient`` is ``GameClient`` with its ``play`` streams on the WebSocket; its other
calls (create, join, a match's final state) stay native, once per match, as in the bench's
native PlayMatch row, so that the two rows differ by the moves' path only. A stream's
status comes back as the ``grpc.aio.AioRpcError`` the native call would raise, rich details
included, so ``clients.bot`` retries and resumes exactly as it does natively.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import struct
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import grpc
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from clients.game_client import GameClient, _watch_request

SUBPROTOCOL = "grpc-websockets"
# make bench's names for this way of playing, and for the page's (the seat's table on the
# stream: with_table).
WEB_SOCKET = "WebSocket"
WEB_SOCKET_TABLE = "WebSocket with_table"
WEB_SOCKETS = (WEB_SOCKET, WEB_SOCKET_TABLE)
HALF_CLOSE = b"\x01"
_PREFIX = struct.Struct(">BI")
_HEADERS_FLAG = 0x80


def request_frame(payload: bytes) -> bytes:
    """One request as the client sends it: a byte 0, then the gRPC-Web frame."""
    return b"\x00" + _PREFIX.pack(0, len(payload)) + payload


def header_block(metadata: tuple[tuple[str, str], ...]) -> bytes:
    return "".join(f"{key}: {value}\r\n" for key, value in metadata).encode()


def parse_header_lines(block: bytes) -> list[tuple[str, str | bytes]]:
    pairs: list[tuple[str, str | bytes]] = []
    for line in block.decode("latin-1").split("\r\n"):
        name, colon, value = line.partition(":")
        if colon:
            name, value = name.strip().lower(), value.strip()
            pairs.append((name, base64.b64decode(value + "===") if name.endswith("-bin") else value))
    return pairs


def status_error(trailers: list[tuple[str, str | bytes]]) -> grpc.aio.AioRpcError | None:
    """The call's status from its trailer frame: None when OK, else the error."""
    values = dict(trailers)
    code = next(c for c in grpc.StatusCode if c.value[0] == int(str(values.get("grpc-status", 2))))
    if code is grpc.StatusCode.OK:
        return None
    details = urllib.parse.unquote(str(values.get("grpc-message", "")))
    kept = ((k, v) for k, v in trailers if not k.startswith("grpc-") or k.endswith("-bin"))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*kept), details)


def _unavailable(details: str) -> grpc.aio.AioRpcError:
    empty = grpc.aio.Metadata()
    return grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, empty, empty, details)


class SocketCall:
    """One PlayMatch stream on a WebSocket, used as the native call object: ``write`` a
    request, iterate the responses, ``cancel()``; a status other than OK is raised."""

    def __init__(self, socket: ClientConnection, response_class: Any) -> None:
        self.socket = socket
        self.response_class = response_class
        self.headers: list[tuple[str, str | bytes]] | None = None
        self.trailers: list[tuple[str, str | bytes]] | None = None
        self._closing: asyncio.Task[None] | None = None

    async def write(self, request: Any) -> None:
        # A stream that ended tells its status on the reading side.
        with contextlib.suppress(ConnectionClosed):
            await self.socket.send(request_frame(request.SerializeToString()))

    async def done_writing(self) -> None:
        await self.socket.send(HALF_CLOSE)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._responses()

    async def _responses(self) -> AsyncIterator[Any]:
        parse = self.response_class.FromString
        try:
            async for message in self.socket:
                data = message if isinstance(message, bytes) else message.encode()
                if data[0] == 0:
                    yield parse(data[_PREFIX.size :])
                    continue
                lines = parse_header_lines(data[_PREFIX.size :])
                if self.headers is None:
                    self.headers = lines
                    continue
                self.trailers = lines
                error = status_error(lines)
                if error is not None:
                    raise error
                return
        except ConnectionClosed as closed:
            raise _unavailable(f"the WebSocket closed without a status: {closed}") from None
        raise _unavailable("the WebSocket closed without a status")

    def cancel(self) -> None:
        if self._closing is None:
            self._closing = asyncio.ensure_future(self.socket.close())


async def open_play(
    url: str, token: str, response_class: Any, origin: str | None = None, tls: ssl.SSLContext | None = None
) -> SocketCall:
    """A PlayMatch stream at ``url`` (``ws://host:port/<package>.<Service>/PlayMatch``, or
    ``wss://`` with ``tls``)."""
    socket = await connect(
        url,
        ssl=tls,
        subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
        origin=origin,  # type: ignore[arg-type]
        compression=None,
        max_size=None,
        open_timeout=10,
    )
    await socket.send(header_block((("authorization", f"Bearer {token}"),)))
    return SocketCall(socket, response_class)


class SocketGameClient(GameClient):
    """``GameClient`` whose ``play`` streams go over the web port's WebSocket at ``web_url``
    (``http://host:port``), asked ``with_table`` as the page asks them when told; its other
    calls go to ``channel``."""

    def __init__(self, channel: grpc.aio.Channel, game: str, web_url: str, with_table: bool = False) -> None:
        super().__init__(channel, game)
        self.with_table = with_table
        self.play_url = web_url.replace("http", "ws", 1) + f"/{self.info.full_service}/PlayMatch"

    async def play(
        self, match_id: str, token: str, after_version: int | None = None, after_seq: int = 0
    ) -> Any:
        try:
            call = await open_play(self.play_url, token, self.pb2.PlayMatchResponse)
        except (OSError, TimeoutError) as error:
            raise _unavailable(f"the web port refused the WebSocket: {error}") from None
        watch = _watch_request(match_id, after_version, after_seq)
        watch.with_table = self.with_table
        await call.write(self.pb2.PlayMatchRequest(watch=watch))
        return call
