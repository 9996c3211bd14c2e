"""Cuts that do not stampede: a replica never ages the gateway's connection to it (which
carries every stream of its matches at once), even with the clients' max connection age
set in its environment too; and a replica that goes away mid-stream reaches the clients
of its streams as UNAVAILABLE, their cue to open them again, never as INTERNAL."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from subprocess import Popen

import grpc

from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from gateway.backends import ReplicaPool
from gateway.server import build as build_gateway
from services.runtime.settings import GatewaySettings
from tests.helpers import start_match
from tests.test_processes import spawn_service

GAME = "happy_mochi"
SERVICE = "mogames.happymochi.v1.HappyMochi"
# The clients' connection age, in every process's environment (one shared configuration).
AGE_S = 1


@contextlib.contextmanager
def replica(redis_url: str, log: Path) -> Iterator[tuple[Popen[str], str]]:
    address = f"127.0.0.1:{free_port()}"
    env = {
        "MOGAMES_MAX_CONNECTION_AGE_S": str(AGE_S),
        "MOGAMES_LOG_LEVEL": "warning",
        "MOGAMES_ALLOW_CLIENT_SEED": "true",
    }
    process = spawn_service(GAME, address, redis_url, log, env)
    try:
        wait_for_port(int(address.rsplit(":", 1)[1]), 30)
        yield process, address
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def test_a_replica_does_not_age_the_gateways_connection(redis_url: str, tmp_path: Path):
    with replica(redis_url, tmp_path / "service.log") as (_process, address):
        pool = ReplicaPool(SERVICE, (address,))
        try:
            client = GameClient((await pool.choose()).channel, GAME)
            match = await start_match(client, 2)
            watch = client.watch(match.match_id, match.tokens[0], after_version=0)
            await watch.read()
            # Past the age and its grace, twice over: an aged connection is cut by now.
            await asyncio.sleep(4 * AGE_S)
            assert not watch.done(), f"the stream was cut: {await watch.code()}"
            moves = await client.legal_moves(match.match_id, match.tokens[0])
            await client.submit(match.match_id, match.tokens[0], moves.moves[0])
            while (event := await watch.read()).version < 1:
                pass
            assert event.version == 1
            watch.cancel()
        finally:
            await pool.close()


async def test_a_replica_gone_mid_stream_reaches_clients_as_unavailable(redis_url: str, tmp_path: Path):
    with replica(redis_url, tmp_path / "service.log") as (process, address):
        settings = GatewaySettings(
            listen="127.0.0.1:0", backends={GAME: (address,)}, shutdown_grace_s=1, log_level="warning"
        )
        gateway, _checker, pools, port = await build_gateway(settings)
        await gateway.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                client = GameClient(channel, GAME)
                match = await start_match(client, 2)
                play = await client.play(match.match_id, match.tokens[0], after_version=0)
                watch = client.watch(match.match_id, match.tokens[1], after_version=0)
                await play.read()
                await watch.read()
                process.kill()  # the replica vanishes: no goodbye on its streams
                for stream in (play, watch):
                    with contextlib.suppress(grpc.aio.AioRpcError):
                        while await asyncio.wait_for(stream.read(), 30) is not grpc.aio.EOF:
                            pass
                    assert await stream.code() == grpc.StatusCode.UNAVAILABLE, await stream.details()
        finally:
            await gateway.stop(None)
            for pool in pools:
                await pool.close()
