"""Forwards every game RPC, unary and streaming, as raw bytes to that game's replicas.

Deadlines, metadata (the seat token among them) and cancellation pass through; a
backend's status, message and rich details come back to the client unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from gateway.backends import ReplicaPool

# A unary call with no client deadline still gets one here: it waits for a replica that
# is (re)starting, and must not wait forever when none comes back.
DEFAULT_UNARY_TIMEOUT_S = 30.0

# Hop-by-hop and transport headers that the outgoing call sets for itself.
_DROP_HEADERS = ("grpc-", ":")
_DROP_NAMES = {"user-agent", "content-type", "te", "host"}


def _forwarded(context: grpc.aio.ServicerContext) -> tuple[tuple[str, Any], ...]:
    return tuple(
        (key, value)
        for key, value in context.invocation_metadata() or ()
        if not key.startswith(_DROP_HEADERS) and key not in _DROP_NAMES
    )


async def _abort_like(context: grpc.aio.ServicerContext, error: grpc.aio.AioRpcError) -> None:
    trailing = tuple(
        (k, v) for k, v in (error.trailing_metadata() or ()) if not k.startswith(_DROP_HEADERS[1])
    )
    await context.abort(error.code(), error.details() or "", trailing)


class GameProxy(grpc.GenericRpcHandler):
    """Routes ``/mogames.<game>.v1.<Service>/<Method>`` to the pool of that service."""

    def __init__(self, routes: dict[str, tuple[ReplicaPool, bool]]) -> None:
        # method path -> (replica pool, server streaming?)
        self.routes = routes

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        route = self.routes.get(handler_call_details.method)
        if route is None:
            return None
        pool, streaming = route
        method = handler_call_details.method
        if streaming:
            return grpc.unary_stream_rpc_method_handler(self._stream(pool, method))
        return grpc.unary_unary_rpc_method_handler(self._unary(pool, method))

    @staticmethod
    def _unary(pool: ReplicaPool, method: str) -> Any:
        async def forward(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            call = pool.pick().unary_unary(method)
            try:
                return await call(
                    request,
                    metadata=_forwarded(context),
                    timeout=context.time_remaining() or DEFAULT_UNARY_TIMEOUT_S,
                    wait_for_ready=True,
                )
            except grpc.aio.AioRpcError as error:
                await _abort_like(context, error)
                raise

        return forward

    @staticmethod
    def _stream(pool: ReplicaPool, method: str) -> Any:
        async def forward(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            call = pool.pick().unary_stream(method)(
                request, metadata=_forwarded(context), timeout=context.time_remaining(), wait_for_ready=True
            )
            try:
                async for response in call:
                    yield response
            except grpc.aio.AioRpcError as error:
                await _abort_like(context, error)
            finally:
                call.cancel()  # the client went away (or we are done): release the backend stream

        return forward
