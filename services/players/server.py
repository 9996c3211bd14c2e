"""The players service process: ``python -m services.players``."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

import grpc
from mogames.players.v1 import players_pb2

from services.players.oidc import OidcVerifier
from services.players.servicer import PlayersServicer
from services.runtime import logs, metrics, serving
from services.runtime.redis_client import RedisClient, connect, wait_until_ready
from services.runtime.settings import PlayersSettings, SettingsError

SERVICE = players_pb2.DESCRIPTOR.services_by_name["Players"].full_name
# Provider ID tokens are JWTs of one to a few KB: the players service takes strings up to
# this long (its own checks bound every other field tighter).
MAX_STRING = 8192


@dataclass
class PlayersService:
    """A built players service: its gRPC server (not started), health, Redis client, port."""

    server: grpc.aio.Server
    checker: serving.health.aio.HealthServicer
    client: RedisClient
    servicer: PlayersServicer
    port: int

    async def close(self) -> None:
        await self.servicer.close()
        await self.client.aclose()

    async def stop(self, grace_s: float | None = None) -> None:
        await self.server.stop(grace_s)
        await self.close()


async def build(settings: PlayersSettings) -> PlayersService:
    client = connect(settings.redis_url, settings.redis_password)
    await wait_until_ready(client, settings.redis_url, settings.redis_wait_s)
    limits = settings.limits
    if limits.max_string < MAX_STRING:
        limits = dataclasses.replace(limits, max_string=MAX_STRING)
    server = serving.new_server(limits, connection_age_s=settings.max_connection_age_s)
    servicer = PlayersServicer(client, settings)
    servicer.add_to_server(server)
    checker = await serving.add_health_and_reflection(server, [SERVICE])
    port = serving.bind(server.add_insecure_port, settings.listen)
    return PlayersService(server, checker, client, servicer, port)


async def main(settings: PlayersSettings) -> None:
    built = await build(settings)
    if settings.metrics_listen:
        metrics.serve(settings.metrics_listen)
    serving.log.info("players_service", port=built.port, metrics=settings.metrics_listen or None)
    await serving.serve_until_signalled(built.server, built.checker, settings.shutdown_grace_s, built.close)


def cli(argv: list[str]) -> None:
    try:
        settings = PlayersSettings.from_env()
        if settings.oidc is not None:
            OidcVerifier(settings.oidc)  # a JWKS file that is no JWKS stops the start here
    except SettingsError as error:
        sys.exit(f"mogames players: bad settings: {error}")
    logs.configure(settings.log_level, service="players", replica=settings.listen)
    serving.run(main(settings), "mogames players")


if __name__ == "__main__":
    cli(sys.argv[1:])
