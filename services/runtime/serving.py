"""Process plumbing shared by game services and the gateway: health, reflection, shutdown."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterable

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.runtime.interceptors import ContextInterceptor

log = structlog.get_logger("serving")


def new_server(options: Iterable[tuple[str, int]] = ()) -> grpc.aio.Server:
    return grpc.aio.server(
        interceptors=[ContextInterceptor()],
        options=[("grpc.so_reuseport", 0), *options],
    )


async def add_health_and_reflection(
    server: grpc.aio.Server, services: list[str]
) -> health.aio.HealthServicer:
    """Standard health (overall and per service, all SERVING) and server reflection."""
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    for name in ["", *services]:
        await checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection(
        [*services, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
        server,
    )
    return checker


async def serve_until_signalled(
    server: grpc.aio.Server,
    checker: health.aio.HealthServicer,
    grace_s: float,
    on_stop: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run until SIGTERM/SIGINT, then stop taking calls and let those in flight finish."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    log.info("serving")
    await stop.wait()
    log.info("shutting_down", grace_s=grace_s)
    await checker.enter_graceful_shutdown()
    await server.stop(grace_s)
    if on_stop is not None:
        await on_stop()
    log.info("stopped")


def run(main: Awaitable[None]) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        asyncio.run(main)  # type: ignore[arg-type]
    else:
        uvloop.run(main)  # type: ignore[arg-type]
