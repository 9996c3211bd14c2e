"""Forwards every game RPC, unary and streaming, as raw bytes to that game's replicas.

Deadlines, metadata (the seat token among them) and cancellation pass through; a
backend's status, message and rich details come back to the client unchanged. A call
about a match goes to the replica its match id hashes to (see backends.ReplicaPool).
Calls fail fast: one whose replica went down after it was chosen, before answering
anything, gets the UNAVAILABLE ``no_replica`` a game with no replica up gets.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from mogames.common.v1 import common_pb2

from gateway.backends import ReplicaPool
from services.runtime.auth import bearer_token, match_of_token
from services.runtime.errors import relayed_failure, to_status
from services.runtime.limits import FORWARDED_CLIENT, client_id
from services.runtime.settings import InputLimits

# A unary call with no client deadline still gets one here: a backend that hangs must not
# hold the call forever.
DEFAULT_UNARY_TIMEOUT_S = 30.0

# Headers the outgoing call sets for itself, and the one only the gateway may set.
_DROP_NAMES = frozenset({"user-agent", "content-type", "te", "host", FORWARDED_CLIENT})

# Every request but CreateMatch has the match id as field 1: reading just that field
# (the rest stays unparsed) is enough to route.
_match_id_of = common_pb2.GetMatchRequest.FromString


def _forwarded(metadata: Any) -> tuple[tuple[str, Any], ...] | None:
    kept = tuple(m for m in metadata or () if m[0] not in _DROP_NAMES and not m[0].startswith(("grpc-", ":")))
    return kept or None


async def _abort_like(
    context: grpc.aio.ServicerContext, error: grpc.aio.AioRpcError, service: str, answered: bool
) -> None:
    """The client's call ends as the replica's did; ``answered``: the replica sent a message."""
    relayed = relayed_failure(service, error, answered)
    if relayed is not None:
        status = to_status(relayed)
        await context.abort(status.code, status.details, status.trailing_metadata)
    trailing = tuple((k, v) for k, v in (error.trailing_metadata() or ()) if not k.startswith(":"))
    await context.abort(error.code(), error.details() or "", trailing)


def route_key(request: bytes) -> bytes:
    """The match id a request names (its field 1), as the replicas are hashed on."""
    try:
        return _match_id_of(request).match_id.encode()
    except (DecodeError, UnicodeError):
        return b""  # the replica will say what is wrong with it


def routes_match_id(method: Any) -> bool:
    """Whether a method's call names its match: as field 1 of its request (all unary and
    server-streaming methods but CreateMatch), or in its seat token (PlayMatch)."""
    if method.client_streaming:
        return True
    first = method.input_type.fields_by_number.get(1)
    return first is not None and first.name == "match_id"


@dataclass
class Route:
    """One method of one game: where it goes and how it is forwarded."""

    pool: ReplicaPool
    method: str
    streaming: bool
    by_match: bool  # route by the request's match id (field 1; PlayMatch: its seat token's)
    # Budgets are per client: tell the replica who the client is (see limits.client_id).
    names_client: bool
    limits: InputLimits = field(default_factory=InputLimits)
    # Requests stream too (PlayMatch): routed by the token's match id, before any request.
    client_streaming: bool = False

    @property
    def kind(self) -> str:
        """The channel's factory for this method's calls (see backends.Replica.call)."""
        if self.client_streaming:
            return "stream_stream"
        return "unary_stream" if self.streaming else "unary_unary"

    def metadata(self, context: grpc.aio.ServicerContext) -> tuple[tuple[str, Any], ...] | None:
        incoming = context.invocation_metadata()
        kept = _forwarded(incoming)
        if not self.names_client:
            return kept
        client = client_id(incoming, context.peer(), self.limits)
        return (*(kept or ()), (FORWARDED_CLIENT, client))

    async def target(self, request: bytes) -> Any:
        replica = await self.pool.choose(route_key(request) if self.by_match else b"")
        return replica.call(self.kind, self.method)

    async def target_of_stream(self, context: grpc.aio.ServicerContext) -> Any:
        token = bearer_token(context.invocation_metadata()) if self.by_match else None
        replica = await self.pool.choose(match_of_token(token).encode() if token else b"")
        return replica.call(self.kind, self.method)


def _handler(route: Route) -> grpc.RpcMethodHandler:
    if route.client_streaming:
        return grpc.stream_stream_rpc_method_handler(_bidi(route))
    if route.streaming:
        return grpc.unary_stream_rpc_method_handler(_stream(route))
    return grpc.unary_unary_rpc_method_handler(_unary(route))


class GameProxy(grpc.GenericRpcHandler):
    """Routes ``/mogames.<game>.v1.<Service>/<Method>`` to the pool of that service."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.handlers = {method: _handler(route) for method, route in routes.items()}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return self.handlers.get(handler_call_details.method)


def _unary(route: Route) -> Any:
    async def forward(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        call = await route.target(request)
        try:
            return await call(
                request,
                metadata=route.metadata(context),
                timeout=context.time_remaining() or DEFAULT_UNARY_TIMEOUT_S,
            )
        except grpc.aio.AioRpcError as error:
            await _abort_like(context, error, route.pool.service, answered=False)
            raise

    return forward


def _stream(route: Route) -> Any:
    async def forward(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        target = await route.target(request)
        call = target(request, metadata=route.metadata(context), timeout=context.time_remaining())
        answered = False
        try:
            async for response in call:
                answered = True
                yield response
        except grpc.aio.AioRpcError as error:
            await _abort_like(context, error, route.pool.service, answered)
        finally:
            call.cancel()  # the client went away (or we are done): release the backend stream

    return forward


def _bidi(route: Route) -> Any:
    async def forward(
        requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        target = await route.target_of_stream(context)
        call = target(metadata=route.metadata(context), timeout=context.time_remaining())

        async def send() -> None:
            # The backend call may end first: its status then comes on the read side.
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                async for request in requests:
                    await call.write(request)
                await call.done_writing()

        sending = asyncio.create_task(send())
        answered = False
        try:
            async for response in call:
                answered = True
                yield response
        except grpc.aio.AioRpcError as error:
            await _abort_like(context, error, route.pool.service, answered)
        finally:
            sending.cancel()
            call.cancel()

    return forward
