"""One game service process: ``python -m services <game>``."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

import grpc
import structlog
from grpc_health.v1 import health_pb2

from services.catalog import rules_module
from services.runtime import cpus, logs, metrics, serving
from services.runtime.bot_pool import BotPool
from services.runtime.codec import Codec
from services.runtime.limits import ClientBudgets
from services.runtime.matches import MatchService
from services.runtime.presence import Presence
from services.runtime.redis_client import RedisClient, connect, wait_until_ready
from services.runtime.servicer import GameServicer
from services.runtime.settings import ServiceSettings, SettingsError
from services.runtime.store import MatchStore
from services.runtime.timers import Scheduler

log = structlog.get_logger("server")

# How often a service checks that Redis answers, for its health.
STORE_CHECK_S = 2.0
_SERVING, _NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass
class GameService:
    """A built game service: its gRPC server (not started), health, Redis client, bound port
    and its running scheduler."""

    server: grpc.aio.Server
    checker: serving.health.aio.HealthServicer
    client: RedisClient
    port: int
    scheduler: Scheduler
    presence: Presence

    async def close(self) -> None:
        """After the server stopped: the streams' last presence commits, the scheduler, the
        watch hub, then the Redis client."""
        await self.presence.close()
        await self.scheduler.stop()
        await self.scheduler.service.hub.close()
        await self.client.aclose()

    async def stop(self, grace_s: float | None = None) -> None:
        await self.server.stop(grace_s)
        await self.close()


async def build(settings: ServiceSettings) -> GameService:
    """A ready-to-start server for ``settings.game``; its scheduler already runs."""
    rules = rules_module(settings.game)
    client = connect(settings.redis_url, settings.redis_password)
    # A Redis still loading its data after a restart, or briefly away, is waited for.
    await wait_until_ready(client, settings.redis_url, settings.redis_wait_s)
    codec = Codec(rules.GAME)
    server = serving.new_server(
        settings.limits, ClientBudgets(client, settings), settings.max_connection_age_s
    )
    service = MatchService(rules, MatchStore(client, settings.game), settings)
    presence = Presence(service)
    GameServicer(service, codec, presence).add_to_server(server)
    checker = await serving.add_health_and_reflection(server, [rules.GAME.full_service])
    # grpc raises when the port is taken: before the scheduler starts, since a running
    # scheduler would keep the process alive without its port.
    port = serving.bind(server.add_insecure_port, settings.listen)
    # Turn timers, server bots and the idle reaper.
    scheduler = Scheduler(service)
    scheduler.start()
    return GameService(server, checker, client, port, scheduler, presence)


async def watch_store(
    checker: serving.health.aio.HealthServicer, client: RedisClient, service: str, every_s: float
) -> None:
    """NOT_SERVING (overall and for the game) while Redis does not answer a PING."""
    up = True
    while True:
        await asyncio.sleep(every_s)
        try:
            await client.ping()
            now_up = True
        except Exception:
            now_up = False
        if now_up != up:
            up = now_up
            (log.info if up else log.warning)("store_reachable" if up else "store_unreachable")
            status = _SERVING if up else _NOT_SERVING
            for name in ("", service):
                await checker.set(name, status)


async def main(settings: ServiceSettings) -> None:
    built = await build(settings)
    checker, client = built.checker, built.client
    if settings.metrics_listen:
        metrics.serve(settings.metrics_listen)
    serving.log.info(
        "game_service", game=settings.game, port=built.port, metrics=settings.metrics_listen or None
    )
    store_watch = asyncio.create_task(
        watch_store(checker, client, rules_module(settings.game).GAME.full_service, STORE_CHECK_S)
    )

    async def close() -> None:
        store_watch.cancel()
        await built.close()
        BotPool.close_shared()

    await serving.serve_until_signalled(built.server, checker, settings.shutdown_grace_s, close)


def cli(argv: list[str]) -> None:
    try:
        settings = ServiceSettings.from_env(argv[0] if argv else None)
    except SettingsError as error:
        sys.exit(f"mogames: bad settings: {error}")
    logs.configure(settings.log_level, service=settings.game, replica=settings.listen)
    if settings.bot_cpus:
        # Before gRPC starts its threads; the bot workers, started later, move to theirs.
        replica_cpus = cpus.allowed() - settings.bot_cpus
        cpus.keep_process_on(replica_cpus)
        log.info("bot_cpus", replica=sorted(replica_cpus), bots=sorted(settings.bot_cpus))
    serving.run(main(settings), f"mogames {settings.game}")


if __name__ == "__main__":
    cli(sys.argv[1:])
