"""The gateway process: ``python -m gateway``. One public port for every game."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc
from mogames.players.v1 import players_pb2

from gateway.backends import ReplicaPool, watch_health
from gateway.discovery import Resolver, system_resolver
from gateway.health_port import start_health_port
from gateway.lobby import LobbyServicer
from gateway.proxy import GameProxy, Route, routes_match_id
from gateway.web import own_listener, start_web
from services.catalog import rules_module
from services.runtime import logs, metrics, serving
from services.runtime.codec import generated_modules
from services.runtime.limits import ClientBudgets
from services.runtime.redis_client import connect
from services.runtime.settings import GatewaySettings, SettingsError


def _bind(server: grpc.aio.Server, settings: GatewaySettings) -> int:
    if not settings.tls_cert:
        return serving.bind(server.add_insecure_port, settings.listen)
    credentials = grpc.ssl_server_credentials(
        [(Path(settings.tls_key).read_bytes(), Path(settings.tls_cert).read_bytes())]
    )
    return serving.bind(lambda listen: server.add_secure_port(listen, credentials), settings.listen)


async def build(
    settings: GatewaySettings, resolver: Resolver = system_resolver
) -> tuple[grpc.aio.Server, serving.health.aio.HealthServicer, list[ReplicaPool], int]:
    routes: dict[str, Route] = {}
    pools = []
    games = []
    pools_by_game = {}
    for game_name, addresses in settings.backends.items():
        game = rules_module(game_name).GAME
        games.append(game)
        pool = ReplicaPool(game.full_service, addresses, resolver)
        pools.append(pool)
        pools_by_game[game_name] = pool
        # Importing the game's generated code also registers its descriptors for reflection.
        service = generated_modules(game)[0].DESCRIPTOR.services_by_name[game.service]
        for method in service.methods:
            routes[f"/{service.full_name}/{method.name}"] = Route(
                pool,
                f"/{service.full_name}/{method.name}",
                streaming=method.server_streaming,
                by_match=routes_match_id(method),
                names_client=method.name in ClientBudgets.METHODS,
                limits=settings.limits,
                client_streaming=method.client_streaming,
            )
    own_services = []
    if settings.players_backends:
        players = players_pb2.DESCRIPTOR.services_by_name["Players"]
        pool = ReplicaPool(players.full_name, settings.players_backends, resolver)
        pools.append(pool)
        own_services.append(players.full_name)
        for method in players.methods:
            path = f"/{players.full_name}/{method.name}"
            # Every call names its client: the players service budgets sign-ins per client.
            routes[path] = Route(
                pool,
                path,
                streaming=method.server_streaming,
                by_match=False,
                names_client=True,
                limits=settings.limits,
            )
    server = serving.new_server(settings.limits, connection_age_s=settings.max_connection_age_s)
    server.add_generic_rpc_handlers([GameProxy(routes)])
    # The lobby's indexes and matchmaking pools; connected lazily, at the first lobby call.
    lobby_redis = connect(settings.redis_url, settings.redis_password)
    lobby = LobbyServicer(
        games, pools_by_game, lobby_redis, settings.find_wait_s, settings.limits, settings.token_secret
    )
    lobby_pb2_grpc.add_LobbyServicer_to_server(lobby, server)
    lobby_service = lobby_pb2.DESCRIPTOR.services_by_name["Lobby"].full_name
    checker = await serving.add_health_and_reflection(
        server, [lobby_service, *(g.full_service for g in games), *own_services]
    )
    port = _bind(server, settings)
    return server, checker, pools, port


async def main(settings: GatewaySettings, resolver: Resolver = system_resolver) -> None:
    server, checker, pools, port = await build(settings, resolver)
    # Until watch_health has seen a game's replicas answer, the gateway cannot serve it: a
    # probe or client told SERVING at start would meet UNAVAILABLE while they still connect.
    # Set before the web and health ports open, which answer health from the same checker.
    for pool in pools:
        await checker.set(pool.service, health_pb2.HealthCheckResponse.NOT_SERVING)
    await checker.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    own = own_listener(server) if settings.web_listen else None
    web = await start_web(settings, pools, port, own)
    health_port = await start_health_port(settings.health_listen, checker) if settings.health_listen else None
    if settings.metrics_listen:
        metrics.serve(settings.metrics_listen)
    serving.log.info(
        "gateway",
        port=port,
        web_port=web and web.port,
        games=sorted(settings.backends),
        tls=bool(settings.tls_cert),
        metrics=settings.metrics_listen or None,
        health_port=health_port and health_port[1],
    )
    health_watch = asyncio.create_task(watch_health(checker, pools))

    async def close() -> None:
        health_watch.cancel()
        if web is not None:
            await web.stop()
        for pool in pools:
            await pool.close()
        if health_port is not None:  # after the grace: probes saw NOT_SERVING during it
            await health_port[0].stop(None)

    await serving.serve_until_signalled(server, checker, settings.shutdown_grace_s, close)


def cli() -> None:
    try:
        settings = GatewaySettings.from_env()
    except SettingsError as error:
        sys.exit(f"mogames gateway: bad settings: {error}")
    logs.configure(settings.log_level, service="gateway", replica=settings.listen)
    serving.run(main(settings), "mogames gateway")


if __name__ == "__main__":
    cli()
