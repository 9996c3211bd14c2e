"""Searching bots in the server, on real Redis and real gRPC: the levels are accepted
wherever a bot is seated (table.bot_seats, AddBot, FindMatch's fill) and refused by name when
unknown, and searching bots play their seats through the scheduler."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from mogames.common.v1 import common_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from deploy.redis_server import running_redis
from tests.conftest import running_services
from tests.helpers import refusal

GAME = "mori"


@pytest.fixture(scope="module")
async def bot_cluster():
    with running_redis() as url:
        async with running_services(
            url, [GAME], bot_think_ms=0, scheduler_tick_ms=50, scheduler_lease_ms=2000
        ) as cluster:
            yield cluster


async def test_searching_bots_seated_at_creation_play_their_turns(bot_cluster):
    client = bot_cluster.client(GAME)
    table = common_pb2.TableOptions(bot_seats=[1, 2], bot_level="medium")
    match = await client.create(3, seed=21, table=table)
    assert [s.bot_level for s in match.seats] == ["", "medium", "medium"]
    ann = await client.join(match.match_id, "ann")
    ann_moves = 0
    for _ in range(600):  # ann plays whenever it is her turn, until the bots made 6 moves
        match = await client.match(match.match_id)
        if match.version - ann_moves >= 6:
            break
        if list(match.active_seats) == [ann.seat]:
            legal = await client.legal_moves(match.match_id, ann.token)
            await client.submit(match.match_id, ann.token, legal.moves[0], expected_version=legal.version)
            ann_moves += 1
        else:
            await asyncio.sleep(0.05)
    assert match.status == common_pb2.IN_PROGRESS
    assert match.version - ann_moves >= 6, "the bots did not play their turns in time"


async def test_every_level_is_accepted_and_an_unknown_one_refused_by_name(bot_cluster):
    client = bot_cluster.client(GAME)
    match = await client.create(4, seed=22)
    for seat, level in enumerate(("random", "policy", "medium", "hard")):
        added = await client.add_bot(match.match_id, seat=seat, level=level)
        assert added.seats[seat].bot_level == level
    other = await client.create(3, seed=23)
    bad = await refusal(client.add_bot(other.match_id, level="expert"))
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "level")
    bad = await refusal(client.create(3, table=common_pb2.TableOptions(bot_seats=[1], bot_level="expert")))
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "table.bot_level")
    assert not (await client.match(other.match_id)).seats[0].taken


async def test_find_match_fills_with_bots_of_the_level_asked(bot_cluster):
    lobby = lobby_pb2_grpc.LobbyStub(bot_cluster.gateway)
    request = lobby_pb2.FindMatchRequest(
        game=GAME, players=3, player_name="solo", ticket_id="bots-1", wait_seconds=1, fill_with_bots=True
    )
    request.bot_level = "medium"
    reply = await lobby.FindMatch(request, timeout=30)
    assert sorted(s.bot_level for s in reply.joined.match.seats) == ["", "medium", "medium"]
    request.ticket_id, request.bot_level = "bots-2", "expert"
    bad = await refusal(lobby.FindMatch(request, timeout=30))
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "bot_level")
