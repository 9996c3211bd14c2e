"""Connect endpoints, built from the services' descriptors, that forward each call over gRPC.

connectrpc does the web protocols (Connect JSON and binary, gRPC-Web): framing, codecs,
deadlines from ``connect-timeout-ms``/``grpc-timeout``, and cancelling the handler when the
browser goes away. Each endpoint here only forwards: the request's metadata (the seat's
bearer token among it) and remaining deadline go to the backend; the backend's status,
message and rich error details (``ErrorInfo.reason``) come back as a Connect error, and a
cancelled handler cancels the backend call.

Calls fail fast, as on the native port (gateway/proxy.py): the replica is chosen by the
same pool, and a call is never made to wait for a replica to come back (no
``wait_for_ready``), which would hold it for its whole deadline. A replica that is down
answers UNAVAILABLE at once, with the same message and rich details as natively
(``no_replica`` and a RetryInfo, also when it went down after it was chosen); only a
replica still making its first connection is waited for, for that connection's outcome.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.codec import Codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import Endpoint
from google.protobuf import descriptor, descriptor_pb2, json_format, message_factory
from google.rpc import status_pb2
from protobuf.wkt import Any as AnyDetail

from gateway.proxy import DEFAULT_UNARY_TIMEOUT_S, route_key, routes_match_id
from services.runtime.errors import ServiceError, to_status, unreached
from services.runtime.limits import FORWARDED_CLIENT, client_named
from services.runtime.settings import InputLimits

# Where one call goes: (the channel's factory, unary_unary or unary_stream; the method's
# path; the match id the request names, or b"") -> the multicallable of a replica of the
# game (the one the match id hashes to, as on the native port), or of the gateway's own port.
Backend = Callable[[str, str, bytes], Awaitable[Any]]

_STATUS_DETAILS = "grpc-status-details-bin"
# Request headers that belong to HTTP, the browser or the web protocol, not to the call.
_DROP_PREFIXES = ("connect-", "grpc-", "content-", "accept", "sec-", "access-control-", ":")
_DROP_NAMES = {
    "host",
    "origin",
    "referer",
    "user-agent",
    "x-user-agent",
    "x-grpc-web",
    "cookie",
    "connection",
    "keep-alive",
    "te",
    "transfer-encoding",
    "upgrade",
    "http2-settings",
    "cache-control",
    "pragma",
    "priority",
    "dnt",
    FORWARDED_CLIENT,
}
_IDEMPOTENCY = {
    descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS: IdempotencyLevel.NO_SIDE_EFFECTS,
    descriptor_pb2.MethodOptions.IDEMPOTENT: IdempotencyLevel.IDEMPOTENT,
}


class Raw:
    """One message as its protobuf bytes, forwarded as they came: a binary call's bytes go
    from the browser's stream to the replica's and back without being parsed or written
    again; only JSON is translated (``CODECS``). Each method has its own subclasses, which
    name the message they carry."""

    __slots__ = ("data",)
    message_class: Any

    def __init__(self, data: bytes | bytearray) -> None:
        self.data = bytes(data)


def _raw_class(message_class: Any) -> type[Raw]:
    return type(f"Raw{message_class.__name__}", (Raw,), {"__slots__": (), "message_class": message_class})


class _RawBinaryCodec(Codec[Raw, Raw]):
    def name(self) -> str:
        return "proto"

    def encode(self, message: Raw) -> bytes:
        return message.data

    def decode(self, data: bytes | bytearray, message_class: type[Raw]) -> Raw:
        return message_class(data)


class _RawJSONCodec(Codec[Raw, Raw]):
    """Connect's JSON (the protobuf JSON mapping), read into and written from the bytes."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Raw) -> bytes:
        return json_format.MessageToJson(message.message_class.FromString(message.data)).encode()

    def decode(self, data: bytes | bytearray, message_class: type[Raw]) -> Raw:
        parsed = json_format.Parse(bytes(data), message_class.message_class(), ignore_unknown_fields=True)
        return message_class(parsed.SerializeToString())


# The web port's codecs, for the messages of ``endpoints``.
CODECS: list[Codec[Any, Any]] = [_RawBinaryCodec(), _RawJSONCodec()]


def _metadata(ctx: RequestContext[Any, Any], limits: InputLimits) -> tuple[tuple[str, str | bytes], ...]:
    forwarded: list[tuple[str, str | bytes]] = []
    headers = [(key.lower(), value) for key, value in ctx.request_headers.allitems()]
    for key, value in headers:
        if key.startswith(_DROP_PREFIXES) or key in _DROP_NAMES:
            continue
        # Binary metadata travels base64-encoded in HTTP headers (both web protocols).
        forwarded.append((key, base64.b64decode(value + "===") if key.endswith("-bin") else value))
    # Who the client is, for the per-client budgets: our word, not the browser's.
    host = (ctx.client_address or "").rpartition(":")[0].strip("[]")
    forwarded.append((FORWARDED_CLIENT, client_named(headers, host, limits)))
    return tuple(forwarded)


def _copy_metadata(source: Any, target: Any) -> None:
    for key, value in source or ():
        if key.startswith(("grpc-", ":")) or key == "content-type":
            continue
        target.add(key, base64.b64encode(value).decode() if isinstance(value, bytes) else value)


def _timeout_s(ctx: RequestContext[Any, Any], default: float | None) -> float | None:
    remaining_ms = ctx.timeout_ms
    return default if remaining_ms is None else max(remaining_ms / 1000, 0.001)


def _connect_error(name: str, message: str, trailing: Any) -> ConnectError:
    code = Code.CANCELED if name == "CANCELLED" else Code[name]
    details: list[ErrorDetail] = []
    for key, value in trailing or ():
        if key == _STATUS_DETAILS and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            details = [ErrorDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details]
    return ConnectError(code, message, details)


def _service_error(error: ServiceError) -> ConnectError:
    status = to_status(error)
    return _connect_error(status.code.name, status.details, status.trailing_metadata)


def connect_error(error: grpc.aio.AioRpcError, game: str | None = None) -> ConnectError:
    """The backend's status as a Connect error, rich details included. ``game``: the call went
    to a replica of that service and had no answer yet, so a replica it never reached is
    ``no_replica``, as the native port answers it (errors.unreached)."""
    unreachable = unreached(game, error) if game else None
    if unreachable is not None:
        return _service_error(unreachable)
    return _connect_error(error.code().name, error.details() or "", error.trailing_metadata())


async def _target(backend: Backend, kind: str, path: str, key: bytes) -> Any:
    """The backend's multicallable; no replica reachable is UNAVAILABLE with its details,
    as the native port answers it."""
    try:
        return await backend(kind, path, key)
    except ServiceError as error:
        raise _service_error(error) from None


def _unary(
    path: str, backend: Backend, by_match: bool, output: type[Raw], limits: InputLimits, game: str | None
) -> Any:
    async def forward(request: Raw, ctx: RequestContext[Any, Any]) -> Raw:
        target = await _target(backend, "unary_unary", path, route_key(request.data) if by_match else b"")
        call = target(
            request.data,
            metadata=_metadata(ctx, limits),
            timeout=_timeout_s(ctx, DEFAULT_UNARY_TIMEOUT_S),
        )
        try:
            response = await call
        except grpc.aio.AioRpcError as error:
            raise connect_error(error, game) from None
        _copy_metadata(await call.initial_metadata(), ctx.response_headers)
        _copy_metadata(await call.trailing_metadata(), ctx.response_trailers)
        return output(response)

    return forward


def _server_stream(
    path: str, backend: Backend, by_match: bool, output: type[Raw], limits: InputLimits, game: str | None
) -> Any:
    async def forward(request: Raw, ctx: RequestContext[Any, Any]) -> AsyncIterator[Raw]:
        target = await _target(backend, "unary_stream", path, route_key(request.data) if by_match else b"")
        call = target(request.data, metadata=_metadata(ctx, limits), timeout=_timeout_s(ctx, None))
        first = True
        try:
            async for response in call:
                if first:
                    # Headers go out with the first message (connectrpc waits for it).
                    _copy_metadata(await call.initial_metadata(), ctx.response_headers)
                    first = False
                yield output(response)
            _copy_metadata(await call.trailing_metadata(), ctx.response_trailers)
        except grpc.aio.AioRpcError as error:
            raise connect_error(error, game if first else None) from None
        finally:
            # The browser went away (connectrpc cancels this generator) or the stream
            # ended: either way the backend's stream is released now.
            call.cancel()

    return forward


def endpoints(
    service: descriptor.ServiceDescriptor,
    backend: Backend,
    limits: InputLimits | None = None,
    replicas: bool = True,
) -> Mapping[str, Endpoint[Any, Any]]:
    """``/<package>.<Service>/<Method>`` -> an endpoint forwarding it to ``backend``, for
    every unary and server-streaming method of ``service``, its messages ``Raw`` (served with
    ``CODECS``); a call naming its match goes where the match's other calls go.
    ``replicas``: ``backend`` is the service's replicas (not the gateway's own port).
    PlayMatch (bidirectional) is not among them, a browser's fetch cannot stream a request:
    browsers open it over a WebSocket (gateway/web_socket.py)."""
    built: dict[str, Endpoint[Any, Any]] = {}
    limits = limits or InputLimits()
    game = service.full_name if replicas else None
    for method in service.methods:
        if method.client_streaming:
            continue
        input_class = _raw_class(message_factory.GetMessageClass(method.input_type))
        output_class = _raw_class(message_factory.GetMessageClass(method.output_type))
        info: MethodInfo[Any, Any] = MethodInfo(
            name=method.name,
            service_name=service.full_name,
            input=input_class,
            output=output_class,
            idempotency_level=_IDEMPOTENCY.get(
                method.GetOptions().idempotency_level, IdempotencyLevel.UNKNOWN
            ),
            stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
        )
        path = f"/{service.full_name}/{method.name}"
        by_match = routes_match_id(method)
        if method.server_streaming:
            forward = _server_stream(path, backend, by_match, output_class, limits, game)
            built[path] = Endpoint.server_stream(info, forward)
        else:
            built[path] = Endpoint.unary(info, _unary(path, backend, by_match, output_class, limits, game))
    return built
