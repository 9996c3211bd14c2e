"""The gateway's web port: Connect (JSON and binary) and gRPC-Web for browsers, and the page.

Served by hypercorn (HTTP/1.1 and HTTP/2; HTTPS with the native port's certificate when the
gateway has one) inside the gateway process, on its event loop. Game RPCs go straight to
the same replica pools as native gRPC; the lobby and health, which the gateway answers
itself, go to the gateway's own gRPC server, so that they behave exactly as for native
clients (interceptors, FindMatch's wait) without a second implementation. The gateway
process reaches it over a private Unix socket (``own_listener``), whatever its public port
speaks (TLS there is for the network, not for this hop); without one (a gateway built
in-process by a test) over its plaintext port on loopback. Any other path is a file of the
built page (``make web``).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import structlog
from connectrpc.compat import google_protobuf_codecs
from connectrpc.server import ConnectASGIApplication
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2
from hypercorn.asyncio import serve
from hypercorn.config import Config
from mogames.lobby.v1 import lobby_pb2
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from gateway.backends import ReplicaPool
from gateway.web_rpc import endpoints
from services.runtime.serving import StartupError
from services.runtime.settings import GatewaySettings, InputLimits
from services.runtime.tasks import cancel_until_done

log = structlog.get_logger("web")

# What a browser may send and read across origins (the two web protocols' headers).
_ALLOWED_HEADERS = [
    "authorization",
    "mogames-session",
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "grpc-timeout",
    "x-grpc-web",
    "x-user-agent",
]
_EXPOSED_HEADERS = ["grpc-status", "grpc-message", "grpc-status-details-bin"]
_NOT_BUILT = "The web page is not built here: run `make web` (or `make run`), then reload.\n"


class _Forwarder(ConnectASGIApplication[None]):
    """Every forwarded RPC in one application (connectrpc routes on the full path)."""

    path = "/"


def _rpc_endpoints(
    pools: list[ReplicaPool], gateway: grpc.aio.Channel, limits: InputLimits
) -> dict[str, Any]:
    known = descriptor_pool.Default()
    routes: dict[str, Any] = {}
    for pool in pools:
        routes.update(endpoints(known.FindServiceByName(pool.service), pool.pick, limits))
    for own in (
        lobby_pb2.DESCRIPTOR.services_by_name["Lobby"],
        health_pb2.DESCRIPTOR.services_by_name["Health"],
    ):
        routes.update(endpoints(own, lambda: gateway, limits))
    return routes


def web_app(
    pools: list[ReplicaPool],
    gateway: grpc.aio.Channel,
    origins: tuple[str, ...],
    root: Path,
    limits: InputLimits | None = None,
) -> Any:
    """The ASGI application of the web port."""
    routes = _rpc_endpoints(pools, gateway, limits or InputLimits())
    rpc = _Forwarder(service=None, endpoints=lambda _: routes, codecs=google_protobuf_codecs())
    # Inside a Starlette app, whose error handling turns a missing file into a 404 answer.
    page: Any = (
        Starlette(routes=[Mount("/", app=StaticFiles(directory=root, html=True))])
        if root.is_dir()
        else PlainTextResponse(_NOT_BUILT, 404)
    )

    async def route(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] not in routes:
            await page(scope, receive, send)
        else:
            await rpc(scope, receive, send)

    return CORSMiddleware(
        route,
        allow_origins=origins,
        allow_methods=["GET", "POST"],
        allow_headers=_ALLOWED_HEADERS,
        expose_headers=_EXPOSED_HEADERS,
        max_age=7200,
    )


def _bound_socket(listen: str) -> socket.socket:
    """The listening socket, bound here so that port 0 (tests) tells us its port."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _loopback(listen: str, port: int) -> str:
    host = listen.rpartition(":")[0].strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def own_listener(server: grpc.aio.Server) -> str:
    """Adds a plaintext listener on a Unix socket in a new private folder (mode 0700: only
    this user reaches it) to the gateway's ``server`` before it starts; its target."""
    folder = tempfile.mkdtemp(prefix="mogames-gateway-")
    target = f"unix:{folder}/grpc.sock"
    server.add_insecure_port(target)
    return target


@dataclass
class WebServer:
    port: int
    grace_s: float
    _stop: asyncio.Event
    _task: asyncio.Task[None]
    _gateway: grpc.aio.Channel
    # The private folder of the gateway's own listener, removed at the end.
    _own_folder: str | None = None

    async def stop(self) -> None:
        """Stop taking requests; calls in flight get the grace period, then are cut."""
        self._stop.set()
        await asyncio.wait([self._task], timeout=self.grace_s + 2)
        await cancel_until_done([self._task])  # cut what outlives the grace
        if not self._task.cancelled() and self._task.exception() is not None:
            log.warning("web_port_stopped_with_error", error=repr(self._task.exception()))
        await self._gateway.close()
        if self._own_folder:
            shutil.rmtree(self._own_folder, ignore_errors=True)


async def start_web(
    settings: GatewaySettings, pools: list[ReplicaPool], gateway_port: int, own_target: str | None = None
) -> WebServer | None:
    """Serve the web port next to the gateway's native port (None when it is switched off).

    ``own_target``: where the gateway's own services answer (``own_listener``); without it
    its port ``gateway_port`` on loopback, which must then be plaintext."""
    if not settings.web_listen:
        return None
    if own_target is None and settings.tls_cert:
        raise ValueError("the gateway's port speaks TLS: give the web port its own_listener")
    own_folder = own_target.removeprefix("unix:").rpartition("/")[0] if own_target else None
    try:
        sock = _bound_socket(settings.web_listen)
    except OSError as error:
        if settings.web_listen_chosen:
            message = f"cannot listen on {settings.web_listen} (MOGAMES_WEB_LISTEN): {error.strerror}"
            raise StartupError(message) from None
        log.warning("web_port_unavailable", listen=settings.web_listen, error=str(error))
        if own_folder:
            shutil.rmtree(own_folder, ignore_errors=True)
        return None
    gateway = grpc.aio.insecure_channel(own_target or _loopback(settings.listen, gateway_port))
    app = web_app(pools, gateway, settings.web_origins, Path(settings.web_root), settings.limits)
    port = int(sock.getsockname()[1])
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.graceful_timeout = settings.shutdown_grace_s
    config.accesslog = None
    if settings.tls_cert:
        # The native port's certificate: a browser's bearer token never crosses the network
        # in clear either (HTTPS, HTTP/2 by ALPN or HTTP/1.1).
        config.certfile, config.keyfile = settings.tls_cert, settings.tls_key
    # A watch is quiet between moves: heartbeats keep it alive, not a short idle timeout.
    config.keep_alive_timeout = 75
    stop = asyncio.Event()
    task = asyncio.create_task(serve(app, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    log.info(
        "web",
        port=port,
        tls=bool(settings.tls_cert),
        origins=list(settings.web_origins),
        root=settings.web_root,
    )
    return WebServer(port, settings.shutdown_grace_s, stop, task, gateway, own_folder)
