"""Tickets live only while someone waits (real processes, real Redis): a FindMatch whose
caller gives up mid-wait, or whose gateway dies, seats nobody with it; a group one of whose
callers leaves before seating starts is dissolved and its other members matched again."""

from __future__ import annotations

import asyncio
import json
import signal

import grpc
import pytest
import redis.asyncio as aioredis
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from gateway.matchmaker import LIVE_MS, Matchmaker
from services.catalog import rules_module
from tests.helpers import refusal
from tests.test_processes import running_service_and_gateway, spawn

GAME = "happy_mochi"
# Every caller here is one client (loopback): lift its per-client budgets, which thirty
# matches made at once (each waiting between its CreateMatch and its last JoinMatch) reach.
SERVICE_ENV = {
    "MOGAMES_MAX_WAITING_PER_CLIENT": "1000",
    "MOGAMES_CREATE_LIMIT": "1000",
    "MOGAMES_JOIN_LIMIT": "1000",
}


def find_request(players: int, name: str, wait_s: int = 20) -> lobby_pb2.FindMatchRequest:
    return lobby_pb2.FindMatchRequest(
        game=GAME, players=players, player_name=name, ticket_id=name, wait_seconds=wait_s
    )


async def test_seventy_players_and_two_who_gave_up_mid_wait_nobody_seated_with_a_ghost(redis_url, tmp_path):
    with running_service_and_gateway(GAME, redis_url, tmp_path, SERVICE_ENV) as processes:
        async with grpc.aio.insecure_channel(processes.gateway_address) as channel:
            lobby = lobby_pb2_grpc.LobbyStub(channel)
            # A three-player pool with one live ticket and one that gives up; a two-player
            # pool with one that gives up.
            partner = asyncio.ensure_future(lobby.FindMatch(find_request(3, "crowd3-0"), timeout=30))
            ghosts = [
                refusal(lobby.FindMatch(find_request(players, f"ghost-{players}"), timeout=1.0))
                for players in (2, 3)
            ]
            for gave_up in await asyncio.gather(*ghosts):
                assert gave_up.code == grpc.StatusCode.DEADLINE_EXCEEDED
            assert not partner.done()
            crowd = [find_request(2, f"crowd2-{n}") for n in range(40)]
            crowd += [find_request(3, f"crowd3-{n}") for n in range(1, 30)]
            answers = [partner, *(lobby.FindMatch(r, timeout=30) for r in crowd)]
            joined = [reply.joined for reply in await asyncio.gather(*answers)]
            matches = {answer.match.match_id: answer.match for answer in joined}
            seated = {answer.match.match_id: set() for answer in joined}
            for answer in joined:
                seated[answer.match.match_id].add(answer.seat)
            assert len(matches) == 30
            assert all(seats == set(range(len(matches[m].seats))) for m, seats in seated.items())
            names = sorted(s.player_name for s in await _final_seats(channel, matches))
            assert names == sorted(["crowd3-0", *(r.player_name for r in crowd)])


async def _final_seats(channel: grpc.aio.Channel, matches: dict) -> list:
    client = GameClient(channel, GAME)
    seats = []
    for match_id in matches:
        seats += list((await client.match(match_id)).seats)
    return seats


async def test_a_ticket_whose_gateway_died_seats_nobody(redis_url, tmp_path):
    with running_service_and_gateway(GAME, redis_url, tmp_path, SERVICE_ENV) as processes:
        doomed_address = f"127.0.0.1:{free_port()}"
        doomed = spawn(
            ["-m", "gateway"],
            {
                "MOGAMES_GATEWAY_LISTEN": doomed_address,
                f"MOGAMES_BACKENDS_{GAME.upper()}": processes.service_addresses[GAME],
                "MOGAMES_REDIS_URL": redis_url,
                "MOGAMES_WEB_LISTEN": "",
                "MOGAMES_LOG_LEVEL": "warning",
            },
            tmp_path / "doomed.log",
        )
        try:
            wait_for_port(int(doomed_address.rsplit(":", 1)[1]), 30)
            async with (
                grpc.aio.insecure_channel(doomed_address) as doomed_channel,
                grpc.aio.insecure_channel(processes.gateway_address) as channel,
            ):
                orphan = asyncio.ensure_future(
                    lobby_pb2_grpc.LobbyStub(doomed_channel).FindMatch(find_request(2, "orphan"), timeout=60)
                )
                await asyncio.sleep(0.5)
                doomed.send_signal(signal.SIGKILL)
                doomed.wait(10)
                assert (await refusal(orphan)).code == grpc.StatusCode.UNAVAILABLE
                lobby = lobby_pb2_grpc.LobbyStub(channel)
                # Its ticket is still in the queue for LIVE_MS, and still taken by no one.
                answers = [lobby.FindMatch(find_request(2, f"after-{n}"), timeout=30) for n in range(2)]
                joined = [reply.joined for reply in await asyncio.gather(*answers)]
                assert joined[0].match.match_id == joined[1].match.match_id
                seats = await _final_seats(channel, {joined[0].match.match_id: None})
                assert sorted(s.player_name for s in seats) == ["after-0", "after-1"]
        finally:
            if doomed.poll() is None:
                doomed.kill()
                doomed.wait(10)


@pytest.fixture
async def matchmaker(redis_url):
    client = aioredis.Redis.from_url(redis_url)
    yield Matchmaker(client, {GAME: rules_module(GAME).GAME}, {})
    await client.aclose()


async def test_a_group_whose_member_left_before_seating_is_dissolved(matchmaker):
    pool = f"dissolve-{free_port()}"
    ann, bob, cid = (matchmaker.ticket(GAME, 5, f"{pool}-{n}", n) for n in ("ann", "bob", "cid"))
    assert await matchmaker._join_queue(ann, 60, 2, enter=True) == ("waiting", "")
    state, group = await matchmaker._join_queue(bob, 60, 2, enter=True)
    assert state == "grouped" and group.startswith(f"{ann.ticket_id}:")
    # Ann's call ends before her gateway claimed the group: Bob waits again, at his place.
    await matchmaker._leave(ann)
    redis = matchmaker.redis
    queue = ann.key("queue")
    assert [m.decode() for m in await redis.zrange(queue, 0, -1)] == [bob.ticket_id]
    assert await redis.hget(ann.key(f"ticket:{ann.ticket_id}"), "state") == b"left"
    state, group = await matchmaker._join_queue(cid, 60, 2, enter=True)
    assert state == "grouped" and group.startswith(f"{bob.ticket_id}:")
    members = await redis.hget(ann.key(f"group:{group}"), "tickets")
    assert sorted(json.loads(members)) == sorted([bob.ticket_id, cid.ticket_id])
    assert await redis.zcard(queue) == 0


async def test_a_ticket_nobody_polls_leaves_the_queue_and_no_group_is_claimed_with_it(matchmaker):
    pool = f"stale-{free_port()}"
    dan, eve, fay = (matchmaker.ticket(GAME, 6, f"{pool}-{n}", n) for n in ("dan", "eve", "fay"))
    assert (await matchmaker._join_queue(dan, 60, 2, enter=True))[0] == "waiting"
    await asyncio.sleep(LIVE_MS / 1000 + 0.3)
    # Dan's gateway stopped polling: Eve is not grouped with him, and he leaves the queue.
    assert await matchmaker._join_queue(eve, 60, 2, enter=True) == ("waiting", "")
    queue = dan.key("queue")
    assert [m.decode() for m in await matchmaker.redis.zrange(queue, 0, -1)] == [eve.ticket_id]
    state, group = await matchmaker._join_queue(fay, 60, 2, enter=True)
    assert state == "grouped"
    # Fay's caller then goes quiet: the group is dissolved, not claimed, when Eve's
    # gateway comes to seat it.
    await asyncio.sleep(LIVE_MS / 1000 + 0.3)
    await matchmaker._join_queue(eve, 60, 2)
    assert not await matchmaker._finish_group(eve, group)
    assert await matchmaker.redis.hget(eve.key(f"ticket:{eve.ticket_id}"), "state") == b"waiting"
    await matchmaker.cancel(eve)
