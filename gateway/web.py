"""The gateway's web port: Connect (JSON and binary) and gRPC-Web for browsers, PlayMatch over
a WebSocket (gateway/web_socket.py), and the page.

Served by granian (HTTP/1.1 and HTTP/2, cleartext or HTTPS with the native port's certificate
when the gateway has one; the framing done natively, in Rust) inside the gateway process, on
its event loop. Game RPCs go straight to the same replica pools as native gRPC; the lobby
and health, which the gateway answers itself, go to the gateway's own gRPC server, so that
they behave exactly as for native clients (interceptors, FindMatch's wait) without a second
implementation. The gateway
process reaches it over a private Unix socket (``own_listener``), whatever its public port
speaks (TLS there is for the network, not for this hop); without one (a gateway built
in-process by a test) over its plaintext port on loopback. Any other path is a file of the
built page (``make web``).
"""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import structlog
from connectrpc.server import ConnectASGIApplication
from google.protobuf import descriptor_pool
from granian.constants import HTTPModes, Interfaces, SSLProtocols
from granian.http import HTTP2Settings
from granian.log import LogLevels
from grpc_health.v1 import health_pb2
from mogames.lobby.v1 import lobby_pb2
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from gateway.backends import ReplicaPool
from gateway.granian_private import BoundGranian
from gateway.web_rpc import CODECS, Backend, endpoints
from gateway.web_socket import PlayOverWebSocket
from services.runtime.serving import StartupError
from services.runtime.settings import GatewaySettings, InputLimits
from services.runtime.tasks import cancel_until_done

log = structlog.get_logger("web")
# How often an HTTP/2 connection is pinged, and how long its answer may take: a browser
# that vanished without closing its connection is let go after this.
_H2_PING_S = 20
_MAX_CALLS = 100_000

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
# An answer smaller than this goes uncompressed, whatever the browser accepts: gzip would
# cost more CPU than the bytes it saves (every browser sends Accept-Encoding: gzip).
GZIP_MIN_BYTES = 1024
_BODY_HEADERS = (b"content-encoding", b"content-length")
_NOT_BUILT = "The web page is not built here: run `make web` (or `make run`), then reload.\n"


class _Forwarder(ConnectASGIApplication[None]):
    """Every forwarded RPC in one application (connectrpc routes on the full path)."""

    path = "/"


class _GzipLarge:
    """Unary answers gzipped only from GZIP_MIN_BYTES on (connectrpc gzips every answer to
    a client that accepts it, whatever its size). Streams are not concerned: their
    compression is asked by headers of their own, which browsers do not send."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = scope.get("headers", ())
        if not any(key == b"accept-encoding" and b"gzip" in value for key, value in headers):
            await self.app(scope, receive, send)
            return
        scope = {**scope, "headers": [(k, v) for k, v in headers if k != b"accept-encoding"]}
        start: dict[str, Any] | None = None

        async def gzip_large(message: dict[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if start is not None:
                body = message.get("body", b"")
                if not message.get("more_body") and len(body) >= GZIP_MIN_BYTES:
                    kept = [(k, v) for k, v in start["headers"] if k not in _BODY_HEADERS]
                    start = {**start, "headers": [*kept, (b"content-encoding", b"gzip")]}
                    message = {**message, "body": gzip.compress(body, compresslevel=6)}
                await send(start)
                start = None
            await send(message)

        await self.app(scope, receive, gzip_large)


def _replicas(pool: ReplicaPool) -> Backend:
    """A game's replicas, chosen as the native port chooses them (backends.ReplicaPool)."""

    async def backend(kind: str, path: str, key: bytes) -> Any:
        return (await pool.choose(key)).call(kind, path)

    return backend


def _own(gateway: grpc.aio.Channel) -> Backend:
    """The gateway's own services, on its own port; each method's call made once."""
    made: dict[tuple[str, str], Any] = {}

    async def backend(kind: str, path: str, key: bytes) -> Any:
        call = made.get((kind, path))
        if call is None:
            call = made[(kind, path)] = getattr(gateway, kind)(path)
        return call

    return backend


def _rpc_endpoints(
    pools: list[ReplicaPool], gateway: grpc.aio.Channel, limits: InputLimits
) -> dict[str, Any]:
    known = descriptor_pool.Default()
    routes: dict[str, Any] = {}
    for pool in pools:
        routes.update(endpoints(known.FindServiceByName(pool.service), _replicas(pool), limits))
    own = _own(gateway)
    for service in (
        lobby_pb2.DESCRIPTOR.services_by_name["Lobby"],
        health_pb2.DESCRIPTOR.services_by_name["Health"],
    ):
        routes.update(endpoints(service, own, limits, replicas=False))
    return routes


def web_app(
    pools: list[ReplicaPool],
    gateway: grpc.aio.Channel,
    origins: tuple[str, ...],
    root: Path,
    limits: InputLimits | None = None,
    sockets: PlayOverWebSocket | None = None,
) -> Any:
    """The ASGI application of the web port; ``sockets`` serves its WebSockets."""
    routes = _rpc_endpoints(pools, gateway, limits or InputLimits())
    rpc = _GzipLarge(_Forwarder(service=None, endpoints=lambda _: routes, codecs=CODECS))
    # Inside a Starlette app, whose error handling turns a missing file into a 404 answer.
    page: Any = (
        Starlette(routes=[Mount("/", app=StaticFiles(directory=root, html=True))])
        if root.is_dir()
        else PlainTextResponse(_NOT_BUILT, 404)
    )

    sockets = sockets or PlayOverWebSocket(pools, origins, limits or InputLimits())

    async def route(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await sockets(scope, receive, send)
        elif scope["type"] == "http" and scope["path"] not in routes:
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
    # Each message of a watch goes out at once (no Nagle delay waiting for the browser's
    # ACK); the connections accepted inherit it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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


class _Calls:
    """The web port's calls in flight, to give them the grace at shutdown, then cut them."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.running: set[asyncio.Task[Any]] = set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.running.add(task)
        try:
            await self.app(scope, receive, send)
        finally:
            self.running.discard(task)

    async def finish(self, grace_s: float) -> None:
        """Let the calls in flight end within ``grace_s``; cut those that do not."""
        if self.running:
            await asyncio.wait(list(self.running), timeout=grace_s)
        await cancel_until_done(list(self.running))


@dataclass
class WebServer:
    port: int
    grace_s: float
    _server: BoundGranian
    _calls: _Calls
    _task: asyncio.Task[None]
    _gateway: grpc.aio.Channel
    # The private folder of the gateway's own listener, removed at the end.
    _own_folder: str | None = None
    _sockets: PlayOverWebSocket | None = None

    async def stop(self) -> None:
        """Stop taking requests; calls in flight get the grace period, then are cut; the
        WebSocket streams are handed over at once, as the replicas' streams are."""
        if self._sockets is not None:
            await self._sockets.hand_over(self.grace_s)
        self._server.stop()
        await self._calls.finish(self.grace_s)
        await asyncio.wait([self._task], timeout=2)
        await cancel_until_done([self._task])
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
    sockets = PlayOverWebSocket(pools, settings.web_origins, settings.limits)
    app = web_app(pools, gateway, settings.web_origins, Path(settings.web_root), settings.limits, sockets)
    port = int(sock.getsockname()[1])
    calls = _Calls(app)
    server = BoundGranian(
        sock,
        calls,
        interface=Interfaces.ASGINL,
        http=HTTPModes.auto,
        websockets=True,  # PlayMatch for browsers (gateway/web_socket.py)
        # Requests in flight before granian stops reading more: every watch is one for as
        # long as its browser stays, so only memory bounds them (the service's limits apply).
        backlog=1024,
        backpressure=_MAX_CALLS,
        # Its errors only: a warning says at each start that embedding it is new in granian.
        log_level=LogLevels.error,
        # The native port's certificate: a browser's bearer token never crosses the network
        # in clear either (HTTPS, HTTP/2 by ALPN or HTTP/1.1).
        ssl_cert=Path(settings.tls_cert) if settings.tls_cert else None,
        ssl_key=Path(settings.tls_key) if settings.tls_key else None,
        ssl_protocol_min=SSLProtocols.tls12,
        # A watch is quiet between moves: the service's heartbeats keep it alive. HTTP/2
        # pings find a browser that vanished without closing its connection.
        http2_settings=HTTP2Settings(keep_alive_interval=_H2_PING_S * 1000, keep_alive_timeout=_H2_PING_S),
    )
    task = asyncio.create_task(server.serve())
    log.info(
        "web",
        port=port,
        tls=bool(settings.tls_cert),
        origins=list(settings.web_origins),
        root=settings.web_root,
    )
    return WebServer(port, settings.shutdown_grace_s, server, calls, task, gateway, own_folder, sockets)
