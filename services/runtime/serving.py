"""Process plumbing shared by game services and the gateway: health, reflection, shutdown."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.runtime.interceptors import ContextInterceptor
from services.runtime.limits import ClientBudgets
from services.runtime.settings import InputLimits

log = structlog.get_logger("serving")


# Connections that stay up through real networks, for the gateway and the services alike.
KEEPALIVE_OPTIONS = [
    # Accept client pings as often as every 5 s, with or without calls in flight: mobile
    # clients ping every 10 s, and gRPC's default (one per 5 min on a quiet connection)
    # answers them with GOAWAY too_many_pings after three.
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    # Ping quiet clients ourselves and drop those that stopped answering, so a vanished
    # client's streams end within ~40 s even if nothing is written to them.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
]


def new_server(
    limits: InputLimits, budgets: ClientBudgets | None = None, connection_age_s: int = 300
) -> grpc.aio.Server:
    """A server with the keepalive policy, the input limits and the shared interceptor.

    Clients are asked to reconnect after ``connection_age_s`` (GOAWAY; calls in flight get
    as long again to finish), so a balancer spreads them over replicas started since."""
    return grpc.aio.server(
        interceptors=[ContextInterceptor(limits, budgets)],
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            *KEEPALIVE_OPTIONS,
            ("grpc.max_connection_age_ms", connection_age_s * 1000),
            ("grpc.max_connection_age_grace_ms", connection_age_s * 1000),
        ],
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
