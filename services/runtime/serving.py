"""Process plumbing shared by game services and the gateway: health, reflection, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import signal
import socket
import sys
import weakref
from collections.abc import Awaitable, Callable

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.runtime import collector
from services.runtime.interceptors import ContextInterceptor, OpenStreams
from services.runtime.limits import ClientBudgets
from services.runtime.metrics import MetricsPortError
from services.runtime.redis_client import RedisStartupError
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

# Calls that arrived but that the Python side has not picked up yet. gRPC's default (1,000)
# answers the rest of a burst CANCELLED, which a client cannot tell from a cancellation of
# its own: 2,000 watchers opening at once lost one in ten. A burst now waits its turn.
PENDING_CALL_OPTIONS = [
    ("grpc.server.max_pending_requests", 20_000),
    ("grpc.server.max_pending_requests_hard_limit", 40_000),
]


class StartupError(RuntimeError):
    """The process cannot start; the message is one line for the operator."""


def bind(add_port: Callable[[str], int], listen: str) -> int:
    """``add_port(listen)`` (a server's add_insecure_port or a TLS one), a taken or foreign
    address told in one line instead of gRPC's RuntimeError (and its core's log line, for a
    port found taken before gRPC tries it)."""
    taken = _bind_error(listen)
    if taken is not None:
        raise StartupError(f"cannot listen on {listen}: {taken}")
    try:
        return add_port(listen)
    except RuntimeError:
        raise StartupError(
            f"cannot listen on {listen}: the port is in use, or the address is not this machine's"
        ) from None


def _bind_error(listen: str) -> str | None:
    """Why ``listen`` (host:port) cannot be bound now, if it cannot; None if it can or if
    only gRPC can tell (a port chosen by the system, a name it resolves itself)."""
    host, _, port = listen.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return None
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, int(port), type=socket.SOCK_STREAM)
    except OSError:
        return None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            return error.strerror or str(error)
    return None


def new_server(
    limits: InputLimits, budgets: ClientBudgets | None = None, connection_age_s: int = 0
) -> grpc.aio.Server:
    """A server with the keepalive policy, the input limits and the shared interceptor.

    Clients are asked to reconnect after ``connection_age_s`` (GOAWAY; calls in flight get
    as long again to finish), so a balancer spreads them over replicas started since;
    0: never (a service, whose clients are gateways: settings.ServiceSettings)."""
    interceptor = ContextInterceptor(limits, budgets)
    aging = [
        ("grpc.max_connection_age_ms", connection_age_s * 1000),
        ("grpc.max_connection_age_grace_ms", connection_age_s * 1000),
    ]
    server = grpc.aio.server(
        interceptors=[interceptor],
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            *KEEPALIVE_OPTIONS,
            *PENDING_CALL_OPTIONS,
            *(aging if connection_age_s else []),
        ],
    )
    _OPEN_STREAMS[server] = interceptor.streams
    return server


# Each server's open streams, for its shutdown to hand over.
_OPEN_STREAMS: weakref.WeakKeyDictionary[grpc.aio.Server, OpenStreams] = weakref.WeakKeyDictionary()


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


# glibc keeps the memory a burst freed (2,000 streams' buffers, spread over the arenas of
# gRPC's threads) inside the process; malloc_trim hands what is free back to the system.
GIVE_BACK_MEMORY_EVERY_S = 5.0


def _malloc_trim() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    library = ctypes.CDLL(name) if name else None
    trim = getattr(library, "malloc_trim", None)  # glibc only
    if trim is None:
        return None
    return lambda: trim(0)


async def give_back_freed_memory(every_s: float = GIVE_BACK_MEMORY_EVERY_S) -> None:
    trim = _malloc_trim()
    if trim is None:
        return
    while True:
        await asyncio.sleep(every_s)
        # ctypes lets go of the GIL for the call: the loop goes on meanwhile.
        await asyncio.to_thread(trim)


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
    upkeep = [asyncio.create_task(give_back_freed_memory()), asyncio.create_task(collector.keep_collecting())]
    await stop.wait()
    log.info("shutting_down", grace_s=grace_s)
    for task in upkeep:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await checker.enter_graceful_shutdown()
    # New calls are refused from here; unary calls in flight get the grace to finish, and
    # the streams held are handed over at once: each ends UNAVAILABLE, its client opens
    # it again on another replica, after the last event it received.
    stopping = asyncio.create_task(server.stop(grace_s))
    await asyncio.sleep(0)
    streams = _OPEN_STREAMS.get(server)
    if streams is not None:
        await _hand_over(streams)
        if not await streams.wait_idle(grace_s):
            log.warning("calls_cut_after_grace", grace_s=grace_s)
        # Every call of ours is answered: what gRPC may still hold (a call ended whose
        # peer has not closed its side) is not worth the rest of the grace.
        await server.stop(0)
    await stopping
    if on_stop is not None:
        await on_stop()
    log.info("stopped")


# A stream whose handler let the hand-over's cancellation pass is cancelled again this
# often, for as long as this.
HAND_OVER_EVERY_S, HAND_OVER_FOR_S = 0.1, 5.0


async def _hand_over(streams: OpenStreams) -> None:
    log.info("streams_handed_over", streams=streams.drain())
    for _ in range(round(HAND_OVER_FOR_S / HAND_OVER_EVERY_S)):
        await asyncio.sleep(HAND_OVER_EVERY_S)
        left = streams.drain()
        if not left:
            return
        log.info("streams_still_open", streams=left)


def run(main: Awaitable[None], program: str = "mogames") -> None:
    """Runs ``main`` on uvloop, with the collector set for a server's allocation pattern
    (services/runtime/collector.py).
    A start-up failure ends the process with one line naming it, and exit code 1."""
    try:
        _run(main)
    except (StartupError, RedisStartupError, MetricsPortError) as error:
        sys.exit(f"{program}: cannot start: {error}")


def _run(main: Awaitable[None]) -> None:
    collector.configure()
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        asyncio.run(main)  # type: ignore[arg-type]
    else:
        uvloop.run(main)  # type: ignore[arg-type]
