"""The bench's browser: the calls ``clients.bot.play_match`` makes, as a browser makes them on
the gateway's web port: Connect with binary protobuf, HTTP/2 or HTTP/1.1, a WatchMatch stream
per seat and one POST per move. A Connect error comes back as the ``grpc.aio.AioRpcError``
the native client would raise, so the bot retries and counts exactly as it does natively.

The HTTP clients are lean on purpose, so that the browser rows of ``make bench`` measure the
server, not their load generator: HTTP/2 is the h2 state machine on an asyncio protocol (one
connection, every call a stream of it, windows opened once so that no frame acknowledges
data), HTTP/1.1 is written and read on raw asyncio streams (a kept-alive connection per call
in flight). Only what the web port answers is understood: a status, a body whole or
chunked, a Connect stream's envelopes.
"""

from __future__ import annotations

import asyncio
import collections
import gzip
import json
import struct
import uuid
from collections.abc import AsyncIterator
from typing import Any, Protocol

import grpc
import h2.config
import h2.connection
import h2.events
import h2.settings
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient, game_modules
from services.catalog import rules_module

_END_STREAM = 0x02
_MAX_WINDOW = 2**31 - 1
# As a browser's fetch sends them: every browser accepts gzip (the web port gzips large answers).
_UNARY_HEADERS = (
    (b"content-type", b"application/proto"),
    (b"connect-protocol-version", b"1"),
    (b"accept-encoding", b"gzip, deflate, br, zstd"),
)
_STREAM_HEADERS = ((b"content-type", b"application/connect+proto"), (b"connect-protocol-version", b"1"))


class HttpCut(ConnectionError):
    """The connection ended before the answer did."""


def _error(status: dict[str, Any]) -> grpc.aio.AioRpcError:
    code = status.get("code", "unknown").upper()
    code = {"CANCELED": "CANCELLED"}.get(code, code)
    return grpc.aio.AioRpcError(
        grpc.StatusCode[code], grpc.aio.Metadata(), grpc.aio.Metadata(), status.get("message", "")
    )


def _cut(error: BaseException) -> grpc.aio.AioRpcError:
    return _error({"code": "unavailable", "message": f"connection lost: {error!r}"})


class Answer(Protocol):
    """An answer being read: its status, then its body chunk by chunk."""

    status: int
    gzipped: bool

    async def started(self) -> None: ...
    async def chunk(self) -> bytes | None: ...
    def cancel(self) -> None: ...


class Http(Protocol):
    async def call(self, path: str, headers: tuple[tuple[bytes, bytes], ...], body: bytes) -> Answer: ...
    async def close(self) -> None: ...


async def _whole(answer: Answer) -> bytes:
    parts = []
    while (part := await answer.chunk()) is not None:
        parts.append(part)
    return b"".join(parts)


# -- HTTP/2 --------------------------------------------------------------------------------


class _H2Answer:
    __slots__ = ("_chunks", "_connection", "_ended", "_failed", "_stream_id", "_waiter", "gzipped", "status")

    def __init__(self, connection: _H2Protocol, stream_id: int) -> None:
        self._connection, self._stream_id = connection, stream_id
        self._chunks: collections.deque[bytes] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._failed: BaseException | None = None
        self.status = 0
        self.gzipped = False

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # What the connection tells its answers, as the server's frames come.

    def responded(self, headers: dict[bytes, bytes]) -> None:
        self.status = int(headers[b":status"])
        self.gzipped = headers.get(b"content-encoding") == b"gzip"
        self._wake()

    def received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._wake()

    def ended(self, failure: BaseException | None = None) -> None:
        """The stream's end; ``failure`` when it was reset or the connection lost."""
        if failure is not None and not self._ended:
            self._failed = failure
        self._ended = True
        self._wake()

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def started(self) -> None:
        while not self.status:
            if self._failed is not None:
                raise self._failed
            await self._wait()

    async def chunk(self) -> bytes | None:
        while not self._chunks:
            if self._failed is not None:
                raise self._failed
            if self._ended:
                return None
            await self._wait()
        return self._chunks.popleft()

    def cancel(self) -> None:
        if not self._ended and self._failed is None:
            self._connection.reset(self._stream_id)
        self._ended = True


class _H2Protocol(asyncio.Protocol):
    def __init__(self, authority: bytes) -> None:
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding=None,
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            validate_inbound_headers=False,
            normalize_inbound_headers=False,
        )
        self.h2 = h2.connection.H2Connection(config)
        self.authority = authority
        self.answers: dict[int, _H2Answer] = {}
        self.transport: asyncio.Transport | None = None
        self.lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.h2.initiate_connection()
        self.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _MAX_WINDOW})
        self.h2.increment_flow_control_window(_MAX_WINDOW - 65_535)
        self._flush()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and self.transport is not None:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        for event in self.h2.receive_data(data):
            answer = self.answers.get(getattr(event, "stream_id", 0))
            if isinstance(event, h2.events.DataReceived):
                if answer is not None:
                    answer.received(event.data)
            elif isinstance(event, h2.events.ResponseReceived):
                if answer is not None:
                    answer.responded(dict(event.headers))
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                if answer is not None:
                    reset = event.error_code if isinstance(event, h2.events.StreamReset) else None
                    answer.ended(None if reset is None else HttpCut(f"stream reset: {reset!r}"))
                    del self.answers[event.stream_id]
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._fail(HttpCut(f"GOAWAY: {event.error_code!r}"))
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or HttpCut("connection closed"))
        self.transport = None

    def _fail(self, error: BaseException) -> None:
        self.lost = error
        for answer in self.answers.values():
            answer.ended(error)
        self.answers.clear()

    def close(self) -> None:
        if self.transport is not None:
            self.h2.close_connection()
            self._flush()
            self.transport.close()

    def reset(self, stream_id: int) -> None:
        if self.answers.pop(stream_id, None) is not None and self.lost is None:
            self.h2.reset_stream(stream_id)
            self._flush()

    def call(self, path: bytes, headers: tuple[tuple[bytes, bytes], ...], body: bytes) -> _H2Answer:
        if self.lost is not None:
            raise self.lost
        stream_id = self.h2.get_next_available_stream_id()
        request = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":authority", self.authority),
            (b":path", path),
            *headers,
            (b"content-length", str(len(body)).encode()),
        ]
        self.h2.send_headers(stream_id, request)
        self.h2.send_data(stream_id, body, end_stream=True)
        answer = self.answers[stream_id] = _H2Answer(self, stream_id)
        self._flush()
        return answer


class H2Http:
    """One HTTP/2 connection (cleartext, prior knowledge) carrying every call as a stream."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._protocol: _H2Protocol | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()

    async def _connected(self) -> _H2Protocol:
        async with self._connecting:
            if self._protocol is None or self._protocol.lost is not None:
                loop = asyncio.get_running_loop()
                authority = f"{self.host}:{self.port}".encode()
                _, self._protocol = await loop.create_connection(
                    lambda: _H2Protocol(authority), self.host, self.port
                )
            return self._protocol

    async def call(self, path: str, headers: tuple[tuple[bytes, bytes], ...], body: bytes) -> Answer:
        return (await self._connected()).call(path.encode(), headers, body)

    async def close(self) -> None:
        if self._protocol is not None:
            self._protocol.close()


# -- HTTP/1.1 ------------------------------------------------------------------------------


class _H1Answer:
    __slots__ = ("_chunked", "_done", "_http", "_length", "_reader", "_writer", "gzipped", "status")

    def __init__(self, http: H1Http, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._http, self._reader, self._writer = http, reader, writer
        self._length: int | None = None
        self._chunked = False
        self._done = False
        self.status = 0
        self.gzipped = False

    async def started(self) -> None:
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        self.status = int(lines[0].split(b" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                self._length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                self._chunked = True
            elif name == b"content-encoding":
                self.gzipped = value.strip() == b"gzip"

    async def chunk(self) -> bytes | None:
        if self._done:
            return None
        if self._chunked:
            size = int((await self._reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
            if size:
                return (await self._reader.readexactly(size + 2))[:-2]
            while await self._reader.readuntil(b"\r\n") != b"\r\n":
                pass  # a trailer
        elif self._length is not None:
            data = await self._reader.readexactly(self._length)
            self._finish(keep=True)
            return data
        else:
            data = await self._reader.read()
            self._finish(keep=False)
            return data or None
        self._finish(keep=True)
        return None

    def _finish(self, keep: bool) -> None:
        self._done = True
        if keep:
            self._http._idle.append((self._reader, self._writer))
        else:
            self._writer.close()

    def cancel(self) -> None:
        if not self._done:
            self._done = True
            self._writer.close()  # a half-read answer: the connection cannot carry another call


class H1Http:
    """HTTP/1.1 connections kept alive, one per call in flight (as a browser opens them)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._all: list[asyncio.StreamWriter] = []
        self._host = f"host: {host}:{port}\r\n".encode()

    async def call(self, path: str, headers: tuple[tuple[bytes, bytes], ...], body: bytes) -> Answer:
        head = b"".join(
            [
                b"POST ",
                path.encode(),
                b" HTTP/1.1\r\n",
                self._host,
                *(name + b": " + value + b"\r\n" for name, value in headers),
                b"content-length: ",
                str(len(body)).encode(),
                b"\r\n\r\n",
            ]
        )
        while self._idle:
            reader, writer = self._idle.pop()
            if not writer.is_closing() and not reader.at_eof():
                writer.write(head + body)
                return _H1Answer(self, reader, writer)
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self._all = [*(w for w in self._all if not w.is_closing()), writer]
        writer.write(head + body)
        return _H1Answer(self, reader, writer)

    async def close(self) -> None:
        for writer in self._all:
            writer.close()


def web_http(version: str, base_url: str) -> Http:
    """A browser's connections to ``base_url`` (http://host:port): ``version`` "HTTP/2"
    (one connection, every call a stream of it) or "HTTP/1.1" (a connection per call in
    flight, kept alive)."""
    host, _, port = base_url.removeprefix("http://").rpartition(":")
    return H2Http(host, int(port)) if version == "HTTP/2" else H1Http(host, int(port))


# -- the game's calls ------------------------------------------------------------------------


class _Watch:
    """A WatchMatch stream: iterate it, ``cancel()`` it (as the native call object)."""

    def __init__(self, messages: AsyncIterator[Any]) -> None:
        self._messages = messages
        self._closing: asyncio.Task[None] | None = None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._messages

    def cancel(self) -> None:
        self._closing = asyncio.ensure_future(self._messages.aclose())  # type: ignore[attr-defined]


class WebGameClient(GameClient):
    """``GameClient``'s calls on the web port (Connect, binary) over ``http``."""

    def __init__(self, http: Http, game: str) -> None:
        self.game = game
        self.info = rules_module(game).GAME
        self.pb2, _grpc = game_modules(game)
        self.http = http
        self.base = f"/{self.info.full_service}/"
        self.timeout_s = 10.0

    @staticmethod
    def _headers(kind: tuple[tuple[bytes, bytes], ...], token: str | None) -> tuple[tuple[bytes, bytes], ...]:
        return (*kind, (b"authorization", b"Bearer " + token.encode())) if token else kind

    async def _unary(self, method: str, request: Any, reply: Any, token: str | None = None) -> Any:
        try:
            answer = await self.http.call(
                self.base + method, self._headers(_UNARY_HEADERS, token), request.SerializeToString()
            )
            await answer.started()
            body = await _whole(answer)
            if answer.gzipped:
                body = gzip.decompress(body)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
            raise _cut(error) from None
        if answer.status != 200:
            raise _error(json.loads(body or b"{}"))
        return reply.FromString(body)

    async def create(
        self, players: int, seed: int | None = None, options: Any = None, table: Any = None
    ) -> Any:
        request = self.pb2.CreateMatchRequest(players=players, seed=seed)
        if isinstance(table, common_pb2.TableOptions):
            request.table.CopyFrom(table)
        return await self._unary("CreateMatch", request, common_pb2.Match)

    async def join(self, match_id: str, name: str, request_id: str = "", session: str = "") -> Any:
        request = common_pb2.JoinMatchRequest(match_id=match_id, player_name=name, request_id=request_id)
        return await self._unary("JoinMatch", request, common_pb2.JoinMatchResponse)

    async def match(self, match_id: str) -> Any:
        return await self._unary("GetMatch", common_pb2.GetMatchRequest(match_id=match_id), common_pb2.Match)

    async def submit(
        self,
        match_id: str,
        token: str,
        move: Any,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> Any:
        request = self._move_request(move, expected_version, request_id or uuid.uuid4().hex, match_id)
        return await self._unary("SubmitMove", request, self.pb2.SubmitMoveResponse, token)

    def watch(
        self,
        match_id: str,
        token: str | None = None,
        after_version: int | None = None,
        after_seq: int = 0,
        timeout_s: float | None = None,
    ) -> Any:
        request = common_pb2.WatchMatchRequest(match_id=match_id, after_seq=after_seq)
        if after_version is not None:
            request.after_version = after_version
        return _Watch(self._stream("WatchMatch", request, self.pb2.MatchEvent, token))

    async def _stream(self, method: str, request: Any, reply: Any, token: str | None) -> AsyncIterator[Any]:
        body = request.SerializeToString()
        answer: Answer | None = None
        try:
            answer = await self.http.call(
                self.base + method,
                self._headers(_STREAM_HEADERS, token),
                struct.pack(">BI", 0, len(body)) + body,
            )
            await answer.started()
            if answer.status != 200:
                raise _error(json.loads(await _whole(answer) or b"{}"))
            buffer = bytearray()
            while (chunk := await answer.chunk()) is not None:
                buffer += chunk
                while len(buffer) >= 5:
                    flags, length = struct.unpack_from(">BI", buffer)
                    if len(buffer) < 5 + length:
                        break
                    data = bytes(buffer[5 : 5 + length])
                    del buffer[: 5 + length]
                    if flags & _END_STREAM:
                        end = json.loads(data or b"{}")
                        if "error" in end:
                            raise _error(end["error"])
                        return
                    yield reply.FromString(data)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
            raise _cut(error) from None
        finally:
            if answer is not None:
                answer.cancel()
        raise _error({"code": "unavailable", "message": "the stream ended without its end message"})
