"""PlayMatch for browsers: one WebSocket per stream on the web port.

A browser's ``fetch`` cannot stream a request body while it reads the answer, so a browser
cannot make the bidirectional call; a WebSocket can. The framing is improbable-eng/grpc-web's
websocket transport (subprotocol ``grpc-websockets``), which its TypeScript client speaks:

- the client opens ``ws(s)://<web port>/<package>.<Service>/PlayMatch`` asking for the
  subprotocol; its first message holds the call's headers as HTTP/1 header lines
  (``authorization: Bearer <token>\\r\\n``: a browser cannot set headers on a WebSocket);
- then each request is a binary message: a byte 0, then the gRPC-Web frame (flag byte 0,
  a 4-byte big-endian length, the protobuf message); a message holding the single byte 1
  is the client's half-close;
- the server sends the gRPC-Web response body, each frame in a binary message of its own:
  a header frame (flag 0x80, the response headers as header lines), each response (flag
  0), and a trailer frame (0x80: ``grpc-status``, ``grpc-message`` percent-encoded,
  ``grpc-status-details-bin`` for the rich error details), then closes the WebSocket.

Each request and response goes between the WebSocket and the replica's PlayMatch stream as
the bytes it is, never parsed: the move costs what a native PlayMatch move does. The token
routes the call to its match's replica and is checked there, as natively. A replica's cut
(it stops and hands its streams over, or vanishes) reaches the browser as UNAVAILABLE, the
cue to open the stream again from the last event received.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import struct
import urllib.parse
from typing import Any

import grpc
import structlog
from google.protobuf import descriptor_pool

from gateway.backends import ReplicaPool
from services.runtime.auth import bearer_token, match_of_token
from services.runtime.errors import (
    InvalidArgument,
    ResourceExhausted,
    ServiceError,
    Unimplemented,
    relayed_failure,
    resume_elsewhere,
    to_status,
)
from services.runtime.limits import FORWARDED_CLIENT, client_named
from services.runtime.settings import InputLimits

log = structlog.get_logger("web")

SUBPROTOCOL = "grpc-websockets"
HALF_CLOSE = b"\x01"
_DATA = 0
_HEADERS_FLAG = 0x80
_FLAG_REFUSED = {0x01: "compressed messages are not accepted: send them as they are (flag 0)"}
_PREFIX = struct.Struct(">BI")
_PREFIX_LEN = _PREFIX.size
# Header names that belong to the transport or the browser, not to the call; the gateway's
# own word on who the client is is never the browser's.
_DROP_PREFIXES = ("grpc-", "content-", ":", "sec-")
_DROP_NAMES = frozenset(
    {"host", "origin", "user-agent", "x-user-agent", "x-grpc-web", "te", "cookie", FORWARDED_CLIENT}
)
_TIMEOUT = re.compile(r"^(\d{1,8})([HMSmun])$")
_TIMEOUT_UNIT_S = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
_NORMAL_CLOSURE = 1000
_RESPONSE_HEADERS = b"content-type: application/grpc-web+proto\r\n"
# Lines this module writes itself, never copied from the replica's metadata.
_OWN_LINES = frozenset({"content-type", "grpc-status", "grpc-message"})
_STOPPING = "the gateway is stopping: open the stream again to resume"


def _too_large(what: str, limit: int) -> ResourceExhausted:
    return ResourceExhausted(
        f"{what} over the limit of {limit} bytes (MOGAMES_MAX_MESSAGE_BYTES)", 0, reason="message_too_large"
    )


class _Refused(Exception):
    """The browser broke the framing or a limit: the call ends with ``status``."""

    def __init__(self, error: ServiceError) -> None:
        super().__init__(error.message)
        self.status = to_status(error)


def frame(flag: int, payload: bytes) -> bytes:
    """One gRPC-Web frame: the flag byte, the payload's length, the payload."""
    return _PREFIX.pack(flag, len(payload)) + payload


def header_lines(pairs: Any) -> bytes:
    """Metadata as gRPC-Web writes it: ``name: value\\r\\n``, binary values in base64."""
    lines = []
    for key, value in pairs or ():
        if key.startswith(":") or key in _OWN_LINES:
            continue
        text = base64.b64encode(value).decode() if isinstance(value, bytes) else value
        lines.append(f"{key}: {text}\r\n")
    return "".join(lines).encode()


def _trailers(code: grpc.StatusCode, message: str, trailing: Any) -> bytes:
    quoted = urllib.parse.quote(message, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")
    status = f"grpc-status: {code.value[0]}\r\ngrpc-message: {quoted}\r\n".encode()
    return frame(_HEADERS_FLAG, status + header_lines(trailing))


def _status_trailers(status: grpc.Status) -> bytes:
    return _trailers(status.code, status.details, status.trailing_metadata)


def _parse_headers(block: bytes | str, limits: InputLimits) -> list[tuple[str, str | bytes]]:
    if len(block) > limits.max_message_bytes:
        raise _Refused(_too_large("the headers are", limits.max_message_bytes))
    text = block.decode("latin-1") if isinstance(block, bytes) else block
    pairs: list[tuple[str, str | bytes]] = []
    for line in text.split("\r\n"):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        name = name.strip().lower()
        if not colon or not name:
            raise _Refused(InvalidArgument("the first message must be header lines 'name: value'"))
        value = value.strip()
        if name.endswith("-bin"):
            try:
                pairs.append((name, base64.b64decode(value + "===")))
            except ValueError:
                raise _Refused(InvalidArgument(f"header {name}: not base64")) from None
        else:
            pairs.append((name, value))
    return pairs


def _forwarded(
    headers: list[tuple[str, str | bytes]], scope: dict[str, Any], limits: InputLimits
) -> tuple[tuple[str, str | bytes], ...]:
    """The call's metadata: the browser's headers less the transport's, and who the client is
    for the budgets, in the gateway's word (from the upgrade request, as a proxy in front set
    it), never the browser's."""
    kept = [(k, v) for k, v in headers if not k.startswith(_DROP_PREFIXES) and k not in _DROP_NAMES]
    upgrade = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers") or ()]
    host = (scope.get("client") or ("",))[0]
    return (*kept, (FORWARDED_CLIENT, client_named(upgrade, host, limits)))


def _timeout_s(headers: list[tuple[str, str | bytes]]) -> float | None:
    for key, value in headers:
        if key == "grpc-timeout":
            found = _TIMEOUT.match(str(value))
            if not found:
                raise _Refused(InvalidArgument(f"grpc-timeout: not a gRPC timeout: {value!r}"))
            return int(found[1]) * _TIMEOUT_UNIT_S[found[2]]
    return None


def _origin_allowed(scope: dict[str, Any], origins: tuple[str, ...]) -> bool:
    """A page from an origin the web port's CORS list allows, or from the web port itself; a
    client that is no browser sends no Origin (its token is its credential either way)."""
    headers = dict(scope.get("headers") or ())
    origin = headers.get(b"origin")
    if origin is None or "*" in origins:
        return True
    text = origin.decode("latin-1").rstrip("/")
    if text in origins:
        return True
    host = headers.get(b"host", b"").decode("latin-1")
    return bool(host) and urllib.parse.urlsplit(text).netloc == host


class PlayOverWebSocket:
    """The ASGI application of the web port's WebSockets: the client-streaming methods of
    ``pools``' services, each forwarded to the replica of its token's match."""

    def __init__(self, pools: list[ReplicaPool], origins: tuple[str, ...], limits: InputLimits) -> None:
        self.origins = origins
        self.limits = limits
        # The streams open now, each with the task serving it, for the hand-over.
        self.open: dict[_Call, asyncio.Task[Any]] = {}
        self.stopping = False
        self.routes: dict[str, ReplicaPool] = {}
        known = descriptor_pool.Default()
        for pool in pools:
            with contextlib.suppress(KeyError):
                service = known.FindServiceByName(pool.service)
                for method in service.methods:
                    if method.client_streaming:
                        self.routes[f"/{service.full_name}/{method.name}"] = pool

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        if SUBPROTOCOL not in scope.get("subprotocols", ()) or not _origin_allowed(scope, self.origins):
            # Refused before the handshake: the browser gets 403 and no WebSocket.
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "websocket.accept", "subprotocol": SUBPROTOCOL})
        call = _Call(self, scope, receive, send)
        task = asyncio.current_task()
        assert task is not None
        self.open[call] = task
        try:
            await call.run()
        finally:
            del self.open[call]

    async def hand_over(self, grace_s: float) -> None:
        """End every stream with UNAVAILABLE now (the web port stops): each browser opens its
        stream again, on another gateway, after the last event it received. Waits at most
        ``grace_s`` for them to be told."""
        self.stopping = True
        for call in list(self.open):
            call.hand_over()
        if self.open:
            await asyncio.wait(list(self.open.values()), timeout=grace_s)


class _Call:
    """One stream: the browser's WebSocket and the replica's PlayMatch call."""

    def __init__(self, app: PlayOverWebSocket, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.app = app
        self.scope = scope
        self.receive = receive
        self.send = send
        self.call: Any = None
        self.service = ""
        self.headers_sent = False
        self.refusal: grpc.Status | None = None
        self.gone = False

    def hand_over(self) -> None:
        if self.call is not None:
            self.call.cancel()  # its status, UNAVAILABLE, is sent by _responses

    async def run(self) -> None:
        try:
            trailers = await self._forward()
        except _Refused as refused:
            trailers = _status_trailers(refused.status)
        except ServiceError as error:
            trailers = _status_trailers(to_status(error))
        if not self.gone:
            with contextlib.suppress(OSError, RuntimeError):
                await self._end(trailers)

    async def _end(self, trailers: bytes) -> None:
        if not self.headers_sent:
            await self.send({"type": "websocket.send", "bytes": frame(_HEADERS_FLAG, _RESPONSE_HEADERS)})
        await self.send({"type": "websocket.send", "bytes": trailers})
        await self.send({"type": "websocket.close", "code": _NORMAL_CLOSURE})

    async def _forward(self) -> bytes:
        pool = self.app.routes.get(self.scope["path"])
        if pool is None:
            raise Unimplemented(f"{self.scope['path']}: only PlayMatch is served over WebSocket")
        first = await self.receive()
        if first["type"] == "websocket.disconnect":
            self.gone = True
            return b""
        if self.app.stopping:
            raise resume_elsewhere(_STOPPING)
        headers = _parse_headers(first.get("bytes") or first.get("text") or b"", self.app.limits)
        token = bearer_token(tuple(headers))
        self.service = pool.service
        replica = await pool.choose(match_of_token(token).encode() if token else b"")
        # Fail-fast, as natively (no wait_for_ready): a replica gone answers UNAVAILABLE now,
        # not at the end of the stream's deadline.
        self.call = replica.call("stream_stream", self.scope["path"])(
            metadata=_forwarded(headers, self.scope, self.app.limits), timeout=_timeout_s(headers)
        )
        requests = asyncio.create_task(self._requests())
        try:
            return await self._responses()
        finally:
            requests.cancel()
            self.call.cancel()

    async def _responses(self) -> bytes:
        call = self.call
        send = self.send
        try:
            async for response in call:
                if not self.headers_sent:
                    extra = header_lines(await call.initial_metadata())
                    headers = frame(_HEADERS_FLAG, _RESPONSE_HEADERS + extra)
                    await send({"type": "websocket.send", "bytes": headers})
                    self.headers_sent = True
                await send({"type": "websocket.send", "bytes": _PREFIX.pack(_DATA, len(response)) + response})
        except grpc.aio.AioRpcError as error:
            relayed = relayed_failure(self.service, error, self.headers_sent)
            if relayed is not None:
                return _status_trailers(to_status(relayed))
            return _trailers(error.code(), error.details() or "", error.trailing_metadata())
        except asyncio.CancelledError:
            # The call was cancelled here (the browser left or broke the framing), not this task.
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise
            if self.refusal is not None:
                return _status_trailers(self.refusal)
            if self.app.stopping:
                return _status_trailers(to_status(resume_elsewhere(_STOPPING)))
            if not self.gone:
                raise
            return b""
        return _trailers(grpc.StatusCode.OK, "", await call.trailing_metadata())

    async def _requests(self) -> None:
        """The browser's messages onto the replica's stream, until its half-close or departure."""
        limit = self.app.limits.max_message_bytes
        pending = bytearray()
        closed = False
        receive = self.receive
        write = self.call.write
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    self.gone = True
                    self.call.cancel()
                    return
                data = message.get("bytes")
                if closed:
                    raise _Refused(InvalidArgument("a message after the client's half-close"))
                if data == HALF_CLOSE:
                    closed = True
                    with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                        await self.call.done_writing()
                    continue
                if not data or data[0] != _DATA:
                    raise _Refused(
                        InvalidArgument("a request must be binary: a byte 0, then a gRPC-Web frame")
                    )
                if not pending and len(data) > _PREFIX_LEN:
                    # The usual case, one whole frame per message: its payload sliced out once.
                    flag, length = _PREFIX.unpack_from(data, 1)
                    if len(data) == 1 + _PREFIX_LEN + length and length <= limit and not flag:
                        await write(data[1 + _PREFIX_LEN :])
                        continue
                pending += memoryview(data)[1:]
                while len(pending) >= _PREFIX_LEN:
                    flag, length = _PREFIX.unpack_from(pending)
                    if length > limit:
                        raise _Refused(_too_large(f"a message of {length} bytes is", limit))
                    if flag:
                        refused = _FLAG_REFUSED.get(flag, f"frame flag {flag}: not a request")
                        raise _Refused(InvalidArgument(refused))
                    if len(pending) < _PREFIX_LEN + length:
                        break
                    payload = bytes(pending[_PREFIX_LEN : _PREFIX_LEN + length])
                    del pending[: _PREFIX_LEN + length]
                    await write(payload)
        except _Refused as refused:
            self.refusal = refused.status
            self.call.cancel()
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            return  # the replica ended the call first: its status comes on the response side
