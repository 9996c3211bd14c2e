"""Real parts for the integration tests: a redis-server on a free port, and for every game
two service replicas plus a gateway, all real grpc.aio servers on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis

from clients.game_client import GameClient
from deploy.redis_server import running_redis
from gateway.server import build as build_gateway
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.limits import InputLimits
from services.runtime.server import GameService
from services.runtime.server import build as build_service
from services.runtime.settings import GatewaySettings, ServiceSettings
from tests.helpers import bounded

pytest_plugins = ["tests.activity_entries", "tests.cluster_fixtures", "tests.machine_share"]

TOKEN_SECRET = b"test-secret-0123456789abcdef"
REPLICAS = 2


def available_games() -> list[str]:
    """Every game in the catalog (a game missing its engine or contract fails here, loudly).

    MOGAMES_TEST_GAMES=a,b narrows the cluster while working on one game.
    """
    wanted = [g for g in os.environ.get("MOGAMES_TEST_GAMES", "").split(",") if g] or list(GAME_PACKAGES)
    for game in wanted:
        rules_module(game)
    return wanted


def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's bound, with what each asyncio task awaits printed when it strikes
    (the thread dump it makes alone shows only the event loop's idle select)."""
    if settings.timeout <= 0:
        return None

    def strike(_signum: int, _frame: Any) -> None:
        loop = asyncio._get_running_loop()
        for task in asyncio.all_tasks(loop) if loop is not None else ():
            print(f"task {task.get_name()}: {' > '.join(_awaits(task.get_coro()))}", file=sys.stderr)
        pytest.fail(f"Timeout (>{settings.timeout} s): where each asyncio task waits is above", pytrace=False)

    signal.signal(signal.SIGALRM, strike)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True


def _awaits(coroutine: Any) -> list[str]:
    """Where a suspended coroutine waits, through everything it awaits in turn."""
    where = []
    while coroutine is not None and len(where) < 30:
        frame = next(
            (getattr(coroutine, a) for a in ("cr_frame", "gi_frame", "ag_frame") if hasattr(coroutine, a)),
            None,
        )
        if frame is not None:
            where.append(
                f"{frame.f_code.co_name} ({frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})"
            )
        coroutine = next(
            (
                getattr(coroutine, a)
                for a in ("cr_await", "gi_yieldfrom", "ag_await")
                if hasattr(coroutine, a)
            ),
            None,
        )
    return where


def pytest_timeout_cancel_timer(item: pytest.Item) -> bool:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    return True


def service_settings(game: str, redis_url: str) -> ServiceSettings:
    return ServiceSettings(
        game=game,
        listen="127.0.0.1:0",
        redis_url=redis_url,
        token_secret=TOKEN_SECRET,
        finished_ttl_s=600,
        abandon_after_s=3600,
        game_stream_maxlen=10_000,
        shutdown_grace_s=1,
        log_level="warning",
        # Tests replay deals by seed; the server default refuses client seeds.
        allow_client_seed=True,
    )


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with running_redis() as url:
        yield url


@pytest.fixture(scope="session")
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@dataclass
class Cluster:
    """Two replicas of every game behind one gateway."""

    gateway: grpc.aio.Channel
    replicas: dict[str, list[grpc.aio.Channel]]
    replicas_addresses: dict[str, list[str]]
    # Every gateway (the first is ``gateway``).
    gateways: list[grpc.aio.Channel] = field(default_factory=list)
    # Their host:port addresses, in the same order.
    gateway_addresses: list[str] = field(default_factory=list)
    # The replicas themselves (in-process), by game, in the order of ``replicas``.
    services: dict[str, list[GameService]] = field(default_factory=dict)

    def client(self, game: str) -> GameClient:
        return GameClient(self.gateway, game)

    def replica_client(self, game: str, index: int) -> GameClient:
        return GameClient(self.replicas[game][index], game)


@contextlib.asynccontextmanager
async def services_on_own_redis(games: list[str]) -> AsyncIterator[tuple[Cluster, aioredis.Redis]]:
    """``running_services`` of ``games`` on a Redis started for the caller alone, with a client
    of it: for a test that counts or watches Redis's commands, which Redis counts server-wide
    (the session's shared one serves other tests' matches meanwhile)."""
    with running_redis() as url:
        async with running_services(url, games=games) as own:
            redis = aioredis.Redis.from_url(url)
            try:
                yield own, redis
            finally:
                await redis.aclose()


@contextlib.asynccontextmanager
async def running_services(
    redis_url: str,
    games: list[str] | None = None,
    gateways: int = 1,
    players_backends: tuple[str, ...] = (),
    gateway_limits: InputLimits | None = None,
    **overrides: Any,
) -> AsyncIterator[Cluster]:
    """Two replicas of every game (or of ``games``, with service settings changed by
    ``overrides``) and ``gateways`` gateways on loopback, using ``redis_url``; the gateways
    route the players service to ``players_backends`` when given, and take ``gateway_limits``
    (their trusted proxies, say) instead of the defaults."""
    servers = []
    by_game: dict[str, list[GameService]] = {}
    addresses: dict[str, list[str]] = {}
    for game in games or available_games():
        for _ in range(REPLICAS):
            settings = dataclasses.replace(service_settings(game, redis_url), **overrides)
            service = await build_service(settings)
            await service.server.start()
            servers.append(service)
            by_game.setdefault(game, []).append(service)
            addresses.setdefault(game, []).append(f"127.0.0.1:{service.port}")
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={game: tuple(a) for game, a in addresses.items()},
        shutdown_grace_s=1,
        log_level="warning",
        redis_url=redis_url,
        players_backends=players_backends,
        token_secret=TOKEN_SECRET,
    )
    if gateway_limits is not None:
        settings = dataclasses.replace(settings, limits=gateway_limits)
    gateway_servers, pools, channels, gateway_addresses = [], [], [], []
    for _ in range(gateways):
        gateway, _checker, gateway_pools, gateway_port = await build_gateway(settings)
        await gateway.start()
        gateway_servers.append(gateway)
        pools += gateway_pools
        gateway_addresses.append(f"127.0.0.1:{gateway_port}")
        channels.append(grpc.aio.insecure_channel(gateway_addresses[-1]))
    replica_channels = {
        game: [grpc.aio.insecure_channel(address) for address in game_addresses]
        for game, game_addresses in addresses.items()
    }
    try:
        yield Cluster(channels[0], replica_channels, addresses, channels, gateway_addresses, by_game)
    finally:
        for channel in channels:
            await bounded(channel.close(), "closing a gateway channel")
        for replicas in replica_channels.values():
            for replica in replicas:
                await bounded(replica.close(), "closing a replica channel")
        for gateway in gateway_servers:
            await bounded(gateway.stop(None), "stopping a gateway")
        for pool in pools:
            await bounded(pool.close(), "closing a replica pool")
        for service in servers:
            await bounded(service.stop(None), f"stopping a {service.scheduler.service.game.name} replica")


@pytest.fixture(scope="session")
async def cluster(redis_url: str) -> AsyncIterator[Cluster]:
    async with running_services(redis_url) as services:
        yield services
