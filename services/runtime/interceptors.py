"""Server interceptor shared by every process: per-call log context, access log, error mapping.

The wrapper runs inside the call's own task, so the structlog contextvars it binds
(``rpc``, then ``match_id``/``seat``/``request_id`` bound by the servicer) belong to
that call alone.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog

from services.runtime.errors import to_service_error, to_status

log = structlog.get_logger("rpc")


async def _abort(context: grpc.aio.ServicerContext, error: Exception, rpc: str, started: float) -> None:
    mapped = to_service_error(error)
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    if mapped is None:
        log.exception("rpc_failed", code="INTERNAL", ms=elapsed_ms)
        await context.abort(grpc.StatusCode.INTERNAL, f"{rpc}: internal error")
        return
    log.info("rpc_refused", code=mapped.code.name, reason=mapped.reason, error=mapped.message, ms=elapsed_ms)
    status = to_status(mapped)
    await context.abort(status.code, status.details, status.trailing_metadata)


def _unary(rpc: str, behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=rpc)
        started = time.perf_counter()
        try:
            response = await behavior(request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort(context, error, rpc, started)
            raise AssertionError("unreachable: abort raises") from error
        log.debug("rpc_ok", ms=round((time.perf_counter() - started) * 1000, 2))
        return response

    return handle


def _stream(rpc: str, behavior: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=rpc)
        started = time.perf_counter()
        try:
            async for response in behavior(request, context):
                yield response
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort(context, error, rpc, started)
        log.debug("rpc_ok", ms=round((time.perf_counter() - started) * 1000, 2))

    return handle


class ContextInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        rpc = handler_call_details.method.rsplit("/", 1)[-1]
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                _unary(rpc, handler.unary_unary), handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                _stream(rpc, handler.unary_stream), handler.request_deserializer, handler.response_serializer
            )
        return handler
