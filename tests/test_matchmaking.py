"""The lobby's match list and matchmaking, through two gateways and two replicas on real
Redis: 40 simultaneous FindMatch calls make exactly 20 matches with no seat given twice;
bots fill a match nobody else joined; a ticket can be withdrawn; ListMatches pages over
public matches only."""

from __future__ import annotations

import asyncio
import ipaddress

import grpc
import pytest
from mogames.common.v1 import common_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from clients.game_client import GameClient
from deploy.redis_server import running_redis
from services.runtime.limits import FORWARDED_CLIENT, InputLimits
from tests.conftest import running_services
from tests.helpers import refusal

GAME = "happy_mochi"


@pytest.fixture(scope="module")
async def lobby_cluster():
    with running_redis() as url:
        async with running_services(
            url, [GAME], gateways=2, bot_think_ms=0, scheduler_tick_ms=50, scheduler_lease_ms=1000
        ) as cluster:
            yield cluster


@pytest.fixture(scope="module")
async def proxied_lobby():
    """A gateway behind a trusted proxy on loopback, whose header names each caller: several
    clients from one test process."""
    limits = InputLimits(trusted_proxies=(ipaddress.ip_network("127.0.0.1"),))
    with running_redis() as url:
        async with running_services(url, [GAME], gateway_limits=limits, bot_think_ms=0) as cluster:
            yield cluster


def lobby(channel: grpc.aio.Channel) -> lobby_pb2_grpc.LobbyStub:
    return lobby_pb2_grpc.LobbyStub(channel)


async def test_forty_players_at_once_make_twenty_matches_and_no_seat_twice(lobby_cluster):
    gateways = lobby_cluster.gateways
    assert len(gateways) == 2

    async def find(n: int) -> common_pb2.JoinMatchResponse:
        request = lobby_pb2.FindMatchRequest(
            game=GAME, players=2, player_name=f"p{n}", ticket_id=f"crowd-{n}", wait_seconds=30
        )
        reply = await lobby(gateways[n % 2]).FindMatch(request, timeout=60)
        return reply.joined

    joined = await asyncio.gather(*(find(n) for n in range(40)))
    matches: dict[str, set[int]] = {}
    for answer in joined:
        matches.setdefault(answer.match.match_id, set()).add(answer.seat)
    assert len(matches) == 20
    assert all(seats == {0, 1} for seats in matches.values())
    client = lobby_cluster.client(GAME)
    for answer in joined[:6]:
        view = await client.view(answer.match.match_id, answer.token)
        assert view.seat == answer.seat
    match = await client.match(joined[0].match.match_id)
    assert match.status == common_pb2.IN_PROGRESS and sorted(s.player_name for s in match.seats)[0][0] == "p"
    # A retried ticket gets the same answer.
    again = await find(0)
    assert (again.match.match_id, again.seat, again.token) == (
        joined[0].match.match_id,
        joined[0].seat,
        joined[0].token,
    )


async def test_a_lone_player_gets_bots_after_the_wait(lobby_cluster):
    request = lobby_pb2.FindMatchRequest(
        game=GAME, players=3, player_name="solo", ticket_id="solo-1", wait_seconds=1, fill_with_bots=True
    )
    reply = await lobby(lobby_cluster.gateway).FindMatch(request, timeout=30)
    match = reply.joined.match
    assert match.status == common_pb2.IN_PROGRESS
    assert sorted(s.bot for s in match.seats) == [False, True, True]
    alone = await refusal(
        lobby(lobby_cluster.gateway).FindMatch(
            lobby_pb2.FindMatchRequest(
                game=GAME, players=4, player_name="x", ticket_id="alone", wait_seconds=1
            ),
            timeout=30,
        )
    )
    assert (alone.code, alone.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "no_match_found")


async def test_a_waiting_ticket_can_be_cancelled(lobby_cluster):
    stub = lobby(lobby_cluster.gateway)
    request = lobby_pb2.FindMatchRequest(
        game=GAME, players=4, player_name="ann", ticket_id="cancel-me", wait_seconds=20
    )
    waiting = asyncio.ensure_future(stub.FindMatch(request, timeout=30))
    await asyncio.sleep(0.3)
    cancel = lobby_pb2.CancelFindMatchRequest(game=GAME, players=4, ticket_id="cancel-me")
    assert (await stub.CancelFindMatch(cancel, timeout=5)).cancelled
    refused = await refusal(waiting)
    assert (refused.code, refused.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ticket_cancelled")
    assert not (await stub.CancelFindMatch(cancel, timeout=5)).cancelled
    bad = await refusal(stub.FindMatch(lobby_pb2.FindMatchRequest(game=GAME, players=9, player_name="a")))
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "players")


async def test_only_the_client_that_queued_a_ticket_can_cancel_it(proxied_lobby):
    stub = lobby(proxied_lobby.gateway)
    alice, mallory = ((FORWARDED_CLIENT, "alice"),), ((FORWARDED_CLIENT, "mallory"),)
    request = lobby_pb2.FindMatchRequest(
        game=GAME, players=4, player_name="alice", ticket_id="alices-ticket", wait_seconds=20
    )
    waiting = asyncio.ensure_future(stub.FindMatch(request, metadata=alice, timeout=30))
    await asyncio.sleep(0.3)
    cancel = lobby_pb2.CancelFindMatchRequest(game=GAME, players=4, ticket_id="alices-ticket")
    refused = await refusal(stub.CancelFindMatch(cancel, metadata=mallory, timeout=5))
    assert (refused.code, refused.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ticket_foreign")
    await asyncio.sleep(0.3)
    assert not waiting.done(), "the ticket still waits"
    assert (await stub.CancelFindMatch(cancel, metadata=alice, timeout=5)).cancelled
    withdrawn = await refusal(waiting)
    assert (withdrawn.code, withdrawn.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ticket_cancelled")
    unknown = await refusal(stub.FindMatch(lobby_pb2.FindMatchRequest(game="chess", players=2)))
    assert (unknown.code, unknown.field) == (grpc.StatusCode.INVALID_ARGUMENT, "game")


async def test_list_matches_pages_over_public_matches(lobby_cluster):
    client: GameClient = lobby_cluster.client(GAME)
    public = common_pb2.TableOptions(public=True)
    created = [(await client.create(2, seed=40 + n, table=public)).match_id for n in range(7)]
    await client.create(2, seed=50)  # not public: never listed
    started = created[0]
    for name in ("ann", "bob"):
        await client.join(started, name)
    stub = lobby(lobby_cluster.gateways[1])
    listed: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await stub.ListMatches(
            lobby_pb2.ListMatchesRequest(game=GAME, page_size=3, page_token=token), timeout=10
        )
        pages += 1
        assert len(page.matches) <= 3
        listed += [m.match_id for m in page.matches]
        token = page.next_page_token
        if not token:
            break
    assert pages == 3 and sorted(listed) == sorted(created) and listed == list(reversed(created))
    free = await stub.ListMatches(
        lobby_pb2.ListMatchesRequest(game=GAME, has_free_seat=True, page_size=100), timeout=10
    )
    assert {m.match_id for m in free.matches} == set(created[1:])
    running = await stub.ListMatches(
        lobby_pb2.ListMatchesRequest(game=GAME, status=common_pb2.IN_PROGRESS), timeout=10
    )
    assert [m.match_id for m in running.matches] == [started]
    for bad in (
        lobby_pb2.ListMatchesRequest(game=GAME, page_size=101),
        lobby_pb2.ListMatchesRequest(game=GAME, page_token="%%%"),
        lobby_pb2.ListMatchesRequest(game="chess"),
    ):
        refused = await refusal(stub.ListMatches(bad, timeout=10))
        assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.field
