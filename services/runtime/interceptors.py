"""Server interceptor shared by every process: what every call goes through before its handler.

In order: the call's log context; decoding the request (an undecodable body is
INVALID_ARGUMENT, not gRPC's UNKNOWN); bounds on its fields; the client's budget
(CreateMatch/JoinMatch); then the handler (on PlayMatch, each request message is decoded
and bounded the same way), whose errors are mapped to status codes here;
and an RPC count and latency for the metrics.

The wrapper runs inside the call's own task, so the structlog contextvars it binds
(``rpc``, then ``match_id``/``seat``/``request_id`` bound by the servicer) belong to
that call alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog

from services.runtime import metrics
from services.runtime.errors import clip, invalid_request, resume_elsewhere, to_service_error, to_status
from services.runtime.limits import ClientBudgets, check_fields
from services.runtime.settings import InputLimits

log = structlog.get_logger("rpc")

Decode = Callable[[bytes], Any]


def _code(context: grpc.aio.ServicerContext) -> str:
    code = context.code()
    if code is None:
        return "OK"
    return code.name if isinstance(code, grpc.StatusCode) else str(code)


async def _abort(context: grpc.aio.ServicerContext, error: Exception, rpc: str, started: float) -> None:
    mapped = to_service_error(error)
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    if mapped is None:
        log.exception("rpc_failed", code="INTERNAL", ms=elapsed_ms)
        await context.abort(grpc.StatusCode.INTERNAL, f"{rpc}: internal error")
        return
    log.info(
        "rpc_refused", code=mapped.code.name, reason=mapped.reason, error=clip(mapped.message), ms=elapsed_ms
    )
    status = to_status(mapped)
    await context.abort(status.code, status.details, status.trailing_metadata)


class _Call:
    """What one method's calls share: its name, decoder, bounds, budget and metrics."""

    def __init__(
        self, method: str, decode: Decode | None, limits: InputLimits | None, budgets: ClientBudgets | None
    ) -> None:
        service, _, rpc = method.strip("/").rpartition("/")
        self.service = service
        self.rpc = rpc
        self.decode = decode
        self.type_name = getattr(getattr(decode, "__self__", None), "DESCRIPTOR", None)
        self.limits = limits
        self.budgets = budgets if budgets is not None and rpc in budgets.METHODS else None
        self.seconds = metrics.RPC_SECONDS.labels(method=rpc)
        self.counts: dict[str, Any] = {}

    def request(self, raw: Any) -> Any:
        if self.decode is None:
            return raw
        try:
            request = self.decode(raw)
        except Exception:
            name = self.type_name.full_name if self.type_name is not None else "request"
            raise invalid_request(name) from None
        if self.limits is not None:
            check_fields(request, self.limits)
        return request

    def done(self, context: grpc.aio.ServicerContext, started: float, timed: bool) -> None:
        code = _code(context)
        counter = self.counts.get(code)
        if counter is None:
            counter = self.counts[code] = metrics.RPCS.labels(method=self.rpc, code=code)
        counter.inc()
        if timed:
            self.seconds.observe(time.perf_counter() - started)


class _Stream:
    """One open stream: its task, whether it is handing a message to gRPC (suspended at its
    ``yield``, where a cancellation would land in gRPC's code, not ours), whether it was
    told to hand over, and whether it is ending so."""

    __slots__ = ("ending", "handed", "task", "yielding")

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        self.task = task
        self.yielding = False
        self.handed = False
        self.ending = False


class HandOver(Exception):
    """Raised in a stream told to hand over, where it resumes after a message."""


class OpenStreams:
    """The calls a server holds, so that a stopping server can hand its streams over: each
    is ended with UNAVAILABLE (``resume_elsewhere``), which tells its client to open it
    again, on another replica, after the last event it received; and wait for its unary
    calls to be answered."""

    def __init__(self) -> None:
        self._streams: dict[asyncio.Task[Any] | None, _Stream] = {}
        self.draining = False
        self.unary_in_flight = 0
        self._idle: asyncio.Event | None = None

    def enter(self) -> _Stream:
        task = asyncio.current_task()
        stream = self._streams[task] = _Stream(task)
        return stream

    def leave(self, stream: _Stream) -> None:
        self._streams.pop(stream.task, None)
        self.call_ended()

    def drain(self) -> int:
        """Tell every open stream to hand over (and any that starts after): one waiting
        inside the handler is cancelled, one handing a message to gRPC stops once it is
        handed. Called again, it cancels again those whose handler let the cancellation
        pass. How many are not ending yet."""
        self.draining = True
        left = 0
        for stream in self._streams.values():
            if stream.ending:
                continue
            left += 1
            stream.handed = True
            if not stream.yielding and stream.task is not None:
                stream.task.cancel()
        return left

    def cancelled_here(self) -> bool:
        """Whether the current call's cancellation is drain()'s (not its client's)."""
        stream = self._streams.get(asyncio.current_task())
        if stream is None or not stream.handed:
            return False
        stream.ending = True
        while stream.task is not None and stream.task.uncancel():
            pass
        return True

    def call_ended(self) -> None:
        if self._idle is not None and not self._streams and not self.unary_in_flight:
            self._idle.set()

    async def wait_idle(self, timeout_s: float) -> bool:
        """Once no call is open (or ``timeout_s`` passed: False)."""
        self._idle = asyncio.Event()
        self.call_ended()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def handed_over(self, context: grpc.aio.ServicerContext, rpc: str) -> None:
        message = f"{rpc}: this replica is stopping: open the stream again to resume"
        status = to_status(resume_elsewhere(message))
        await context.abort(status.code, status.details, status.trailing_metadata)


async def _through(responses: AsyncIterator[Any], stream: _Stream | None) -> AsyncGenerator[Any, None]:
    """``responses``, marking the stream as handing a message over while it is suspended
    at the yield, and raising HandOver after one if it was told to hand over meanwhile."""
    async for response in responses:
        if stream is None:
            yield response
            continue
        stream.yielding = True
        try:
            yield response
        finally:
            stream.yielding = False
        if stream.handed:
            stream.ending = True
            raise HandOver


def _handed_over(streams: OpenStreams | None) -> bool:
    return streams is not None and streams.cancelled_here()


@contextlib.asynccontextmanager
async def _stream_ending(
    context: grpc.aio.ServicerContext, rpc: str, started: float, streams: OpenStreams | None
) -> AsyncIterator[None]:
    """How a stream's handler ends when an error leaves it (WatchMatch's and PlayMatch's alike):
    an abort as it was; a cancellation this replica made to hand its streams over (or a
    HandOver) as UNAVAILABLE with where to resume; any other error mapped to its status."""
    try:
        yield
    except grpc.aio.AbortError:
        raise
    except asyncio.CancelledError:
        if not _handed_over(streams):
            raise
        assert streams is not None
        await streams.handed_over(context, rpc)
    except HandOver:
        assert streams is not None
        await streams.handed_over(context, rpc)
    except Exception as error:
        await _abort(context, error, rpc, started)


def _unary(
    call: _Call, behavior: Callable[..., Awaitable[Any]], streams: OpenStreams | None = None
) -> Callable[..., Awaitable[Any]]:
    rpc = call.rpc

    async def handle(raw: Any, context: grpc.aio.ServicerContext) -> Any:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=rpc)
        started = time.perf_counter()
        if streams is not None:
            streams.unary_in_flight += 1
        try:
            request = call.request(raw)
            if call.budgets is None:
                response = await behavior(request, context)
            else:
                client = call.budgets.who(context)
                reservation = await call.budgets.admit(rpc, client)
                try:
                    response = await behavior(request, context)
                except BaseException:
                    await call.budgets.release(client, reservation)
                    raise
                await call.budgets.answered(rpc, client, response, reservation)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort(context, error, rpc, started)
            raise AssertionError("unreachable: abort raises") from error
        finally:
            if streams is not None:
                streams.unary_in_flight -= 1
                streams.call_ended()
            call.done(context, started, timed=True)
        log.debug("rpc_ok", ms=round((time.perf_counter() - started) * 1000, 2))
        return response

    return handle


def _stream(
    call: _Call, behavior: Callable[..., AsyncIterator[Any]], streams: OpenStreams | None = None
) -> Callable[..., AsyncIterator[Any]]:
    rpc = call.rpc
    watches = metrics.watch_count(call.service) if rpc == "WatchMatch" else None

    async def handle(raw: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=rpc)
        started = time.perf_counter()
        match_id = None
        stream = streams.enter() if streams is not None else None
        try:
            async with _stream_ending(context, rpc, started, streams):
                if streams is not None and streams.draining:
                    await streams.handed_over(context, rpc)
                request = call.request(raw)
                if watches is not None and call.decode is not None:
                    match_id = request.match_id
                    watches.opened(match_id)
                async with contextlib.aclosing(_through(behavior(request, context), stream)) as responses:
                    async for response in responses:
                        yield response
        finally:
            if streams is not None and stream is not None:
                streams.leave(stream)
            if match_id is not None and watches is not None:
                watches.closed(match_id)
            call.done(context, started, timed=False)
        log.debug("rpc_ok", ms=round((time.perf_counter() - started) * 1000, 2))

    return handle


def _bidi(
    call: _Call, behavior: Callable[..., AsyncIterator[Any]], streams: OpenStreams | None = None
) -> Callable[..., AsyncIterator[Any]]:
    """PlayMatch: every request message decoded and bounded as a unary request is; an
    error the handler lets out (an undecodable message among them) ends the stream with
    its status."""
    rpc = call.rpc
    # A PlayMatch is a watch too: counted with the WatchMatch streams once its first
    # message (the watch) names the match.
    watches = metrics.watch_count(call.service) if rpc == "PlayMatch" and call.decode is not None else None

    async def handle(
        raw_requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=rpc)
        started = time.perf_counter()
        watched: list[str] = []

        async def requests() -> AsyncIterator[Any]:
            async for raw in raw_requests:
                request = call.request(raw)
                if watches is not None and not watched and request.WhichOneof("kind") == "watch":
                    watched.append(request.watch.match_id)
                    watches.opened(request.watch.match_id)
                yield request

        stream = streams.enter() if streams is not None else None
        try:
            async with _stream_ending(context, rpc, started, streams):
                if streams is not None and streams.draining:
                    await streams.handed_over(context, rpc)
                async with contextlib.aclosing(_through(behavior(requests(), context), stream)) as responses:
                    async for response in responses:
                        yield response
        finally:
            if streams is not None and stream is not None:
                streams.leave(stream)
            if watches is not None and watched:
                watches.closed(watched[0])
            call.done(context, started, timed=False)
        log.debug("rpc_ok", ms=round((time.perf_counter() - started) * 1000, 2))

    return handle


class ContextInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, limits: InputLimits | None = None, budgets: ClientBudgets | None = None) -> None:
        self.limits = limits
        self.budgets = budgets
        self.streams = OpenStreams()
        # Method path -> the wrapped handler: built once, not on every call.
        self._handlers: dict[str, grpc.RpcMethodHandler | None] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        wrapped = self._handlers.get(method)
        if wrapped is None:
            handler = await continuation(handler_call_details)
            if handler is None:
                return handler
            wrapped = self._handlers[method] = self._wrap(method, handler)
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        call = _Call(method, handler.request_deserializer, self.limits, self.budgets)
        # The request arrives as bytes and is decoded in the wrapper (call.request), where a
        # decoding error can be answered as the client's mistake.
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                _unary(call, handler.unary_unary, self.streams), None, handler.response_serializer
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                _stream(call, handler.unary_stream, self.streams), None, handler.response_serializer
            )
        if handler.stream_stream:
            return grpc.stream_stream_rpc_method_handler(
                _bidi(call, handler.stream_stream, self.streams), None, handler.response_serializer
            )
        return handler
