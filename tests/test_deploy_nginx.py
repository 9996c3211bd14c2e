"""The nginx grpc_pass front (deploy/nginx.py), real nginx in front of the test services:
game calls straight to the replicas, unary and streaming; the rest to the gateway."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from clients.bot import play_match
from clients.game_client import GameClient
from deploy import nginx
from deploy.redis_server import free_port, wait_for_port
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.limits import FORWARDED_CLIENT
from tests.helpers import active_seat_move, start_match

GAME = "happy_mochi"


@pytest.fixture(scope="module")
def front_address(cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("nginx")
    listen = f"127.0.0.1:{free_port()}"
    config = nginx.write_config(listen, cluster.gateway_addresses[0], cluster.replicas_addresses, workdir)
    with (workdir / "nginx.log").open("wb") as log:
        process = subprocess.Popen(nginx.command(config), stdout=log, stderr=log)
    try:
        wait_for_port(int(listen.rsplit(":", 1)[1]))
        yield listen
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
async def front(front_address: str) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(front_address) as channel:
        yield channel


def test_the_config_routes_every_game_of_the_catalog_and_nginx_accepts_it(tmp_path: Path):
    backends = {game: [f"127.0.0.1:{50061 + n}", "127.0.0.1:1"] for n, game in enumerate(GAME_PACKAGES)}
    config = nginx.write_config("127.0.0.1:50051", "127.0.0.1:50050", backends, tmp_path)
    text = config.read_text()
    for n, game in enumerate(GAME_PACKAGES):
        info = rules_module(game).GAME
        assert f"location /{info.full_service}/ {{\n            grpc_pass grpc://{info.package};" in text
        assert f"upstream {info.package} {{\n        server 127.0.0.1:{50061 + n};" in text
    assert "location / {\n            grpc_pass grpc://gateway;" in text
    assert f"grpc_set_header {FORWARDED_CLIENT} $remote_addr;" in text  # not the client's word
    checked = subprocess.run([*nginx.command(config), "-t"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr


async def test_through_nginx_the_lobby_answers_and_a_match_is_played_and_watched_live(front):
    games = (await lobby_pb2_grpc.LobbyStub(front).ListGames(lobby_pb2.ListGamesRequest())).games
    assert {g.name for g in games} >= {GAME}
    client = GameClient(front, GAME)
    started = await start_match(client, 2, seed=5)
    stream = client.watch(started.match_id, started.tokens[0], after_version=0)
    seen: list[int] = []

    async def watch() -> None:
        async for event in stream:
            seen.append(event.version)
            if event.version >= 4:
                return

    watcher = asyncio.create_task(watch())
    for _ in range(4):
        seat, move, version = await active_seat_move(client, started)
        answer = await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
        assert answer.version == version + 1
    await asyncio.wait_for(watcher, timeout=20)
    stream.cancel()
    assert {1, 2, 3, 4} <= set(seen) and seen == sorted(seen)


async def test_through_nginx_every_seat_of_a_match_reaches_the_same_replica(front, cluster):
    """Routed by the match id inside the seat token: the watches of all seats of a match
    (and so its moves, which carry the same tokens) meet on one replica."""
    client = GameClient(front, GAME)
    hubs = [service.scheduler.service.hub for service in cluster.services[GAME]]
    assert len(hubs) == 2
    # Ids are random: 16 matches all on one of two replicas by chance is 1 run in 32,768.
    matches = [await start_match(client, 2, seed=n) for n in range(16)]
    streams = [client.watch(m.match_id, token) for m in matches for token in m.tokens.values()]
    try:
        for stream in streams:
            await asyncio.wait_for(stream.read(), 10)  # open: the history came
        homes = [[hub.is_watched(m.match_id) for hub in hubs] for m in matches]
        assert all(sum(home) == 1 for home in homes), homes
        assert {home.index(True) for home in homes} == {0, 1}, "matches spread over both replicas"
    finally:
        for stream in streams:
            stream.cancel()


async def test_through_nginx_a_match_is_played_on_play_match_streams(front):
    played = await asyncio.wait_for(play_match(GameClient(front, GAME), 2, seed=12, one_stream=True), 120)
    final = await GameClient(front, GAME).match(played.match_id)
    assert played.finished and played.moves == final.version
