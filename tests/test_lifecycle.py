"""Match lifecycle rules that need time to pass: abandonment, and deadlines through the gateway."""

from __future__ import annotations

import dataclasses

import grpc
import pytest

from deploy.redis_server import running_redis
from services.catalog import rules_module
from services.runtime.errors import FailedPrecondition, InvalidArgument
from services.runtime.matches import ABANDONED, IN_PROGRESS, MatchService
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from tests.conftest import service_settings
from tests.helpers import start_match


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_idle_match_becomes_abandoned_and_refuses_moves():
    # Its own Redis: the match's reaper entry, due by this clock long ago, would be taken by
    # any running scheduler of the game on a shared one (the session's replicas), and the
    # match reaped before its players join.
    with running_redis() as redis_url:
        clock = Clock()
        settings = dataclasses.replace(service_settings("happy_mochi", redis_url), abandon_after_s=60)
        client = connect(redis_url)
        service = MatchService(
            rules_module("happy_mochi"), MatchStore(client, "happy_mochi"), settings, clock=clock
        )
        facts = await service.create_match(2, 5, {"first_player": 0})
        tokens = [(await service.join_match(facts.match_id, name)).token for name in ("a", "b")]
        assert (await service.get_match(facts.match_id)).status == IN_PROGRESS
        clock.now += 61
        assert (await service.get_match(facts.match_id)).status == ABANDONED
        moves, _ = await service.legal_moves(facts.match_id, tokens[0])
        assert moves == []
        with pytest.raises(FailedPrecondition) as refused:
            await service.submit_move(facts.match_id, tokens[0], {"pass_turn": {}}, None, "r1")
        assert refused.value.reason == "match_over"
        await client.aclose()


async def test_deadline_passes_through_the_gateway_to_a_waiting_watch(cluster):
    client = cluster.client("happy_mochi")
    started = await start_match(client, 2, seed=77)
    # No move comes, so the watch waits until the client's deadline ends it.
    stream = client.watch(started.match_id, started.tokens[0], timeout_s=0.5)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        async for _ in stream:
            pass
    assert failed.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


async def test_a_lost_redis_is_unavailable_not_internal():
    from clients.game_client import GameClient
    from services.runtime.server import build

    with running_redis() as url:
        service = await build(service_settings("happy_mochi", url))
        await service.server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{service.port}")
        game = GameClient(channel, "happy_mochi")
        match = await game.create(2, seed=1)
    # The Redis server is gone now.
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await game.match(match.match_id)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "retry" in failed.value.details()
    await channel.close()
    await service.stop(None)


async def test_client_seeds_can_be_refused(redis_url):
    settings = dataclasses.replace(service_settings("mori", redis_url), allow_client_seed=False)
    client = connect(redis_url)
    service = MatchService(rules_module("mori"), MatchStore(client, "mori"), settings)
    with pytest.raises(InvalidArgument) as refused:
        await service.create_match(3, 42, {"first_player": 0})
    assert refused.value.field == "seed"
    facts = await service.create_match(3, None, {"first_player": 0})
    assert facts.status == "WAITING_FOR_PLAYERS"
    await client.aclose()


async def test_a_match_still_going_at_the_move_cap_ends_abandoned(redis_url):
    settings = dataclasses.replace(service_settings("mori", redis_url), max_moves=5)
    client = connect(redis_url)
    service = MatchService(rules_module("mori"), MatchStore(client, "mori"), settings)
    facts = await service.create_match(3, 5, {})
    tokens = {}
    for name in ("a", "b", "c"):
        joined = await service.join_match(facts.match_id, name)
        tokens[joined.seat] = joined.token
    answers = []
    for _ in range(5):
        match = await service.get_match(facts.match_id)
        seat = match.active_seats[0]
        moves, version = await service.legal_moves(facts.match_id, tokens[seat])
        answers.append(await service.submit_move(facts.match_id, tokens[seat], moves[0], version, ""))
    assert [a.status for a in answers] == [IN_PROGRESS] * 4 + [ABANDONED]
    last = [e.body for e in answers[-1].events][-2:]
    assert last[0] == {"match_abandoned": {"reason": "move_cap"}}
    assert last[1]["match_ended"]["status"] == ABANDONED and last[1]["match_ended"]["winners"] == []
    ended = await service.get_match(facts.match_id)
    assert (ended.status, ended.version, ended.active_seats) == (ABANDONED, 5, [])
    with pytest.raises(FailedPrecondition) as refused:
        await service.submit_move(facts.match_id, tokens[seat], moves[0], None, "")
    assert refused.value.reason == "match_over"
    # The game's own cap, unless the settings set one.
    assert (
        MatchService(rules_module("mori"), service.store, service_settings("mori", redis_url)).max_moves
        == 3000
    )
    await client.aclose()
