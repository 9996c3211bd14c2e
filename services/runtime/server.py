"""One game service process: ``python -m services <game>``."""

from __future__ import annotations

import sys

import grpc

from services.catalog import rules_module
from services.runtime import logs, serving
from services.runtime.codec import Codec
from services.runtime.matches import MatchService
from services.runtime.redis_client import RedisClient, connect
from services.runtime.servicer import GameServicer
from services.runtime.settings import ServiceSettings, SettingsError
from services.runtime.store import MatchStore
from services.runtime.timers import Scheduler


async def build(
    settings: ServiceSettings,
) -> tuple[grpc.aio.Server, serving.health.aio.HealthServicer, RedisClient, int]:
    """A ready-to-start server for ``settings.game``, and the port it bound."""
    rules = rules_module(settings.game)
    client = connect(settings.redis_url, settings.redis_password)
    await client.ping()
    codec = Codec(rules.GAME)
    server = serving.new_server()
    service = MatchService(rules, MatchStore(client), settings)
    GameServicer(service, codec).add_to_server(server)
    # Turn timers, server bots and the idle reaper; it ends with the process's event loop.
    Scheduler(service).start()
    checker = await serving.add_health_and_reflection(server, [rules.GAME.full_service])
    port = server.add_insecure_port(settings.listen)
    return server, checker, client, port


async def main(settings: ServiceSettings) -> None:
    server, checker, client, port = await build(settings)
    serving.log.info("game_service", game=settings.game, port=port)
    await serving.serve_until_signalled(server, checker, settings.shutdown_grace_s, client.aclose)


def cli(argv: list[str]) -> None:
    try:
        settings = ServiceSettings.from_env(argv[0] if argv else None)
    except SettingsError as error:
        sys.exit(f"mogames: bad settings: {error}")
    logs.configure(settings.log_level, service=settings.game)
    serving.run(main(settings))


if __name__ == "__main__":
    cli(sys.argv[1:])
