"""Live play by watching: prompts, next moves, spectators, retried joins and moves, whole
matches of every game played by clients that only watch and submit."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import time
import uuid

import grpc
import pytest
from mogames.common.v1 import common_pb2

from clients.bot import play_match
from services.catalog import rules_module
from services.runtime.errors import PermissionDenied
from services.runtime.matches import MatchService
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from tests.conftest import available_games, running_services, service_settings
from tests.helpers import (
    active_seat_move,
    events_before,
    refusal,
    start_match,
    subscribers,
    watch_released,
)
from tests.test_all_games import default_options
from tests.test_concurrency import stored_events

GAME = "happy_mochi"
# Short matches of every game (seed, players, options) for the end-to-end plays.
SHORT = {
    "happy_mochi": (9, 2, None),
    "mori": (5, 3, None),
    "more": (5, 3, {"max_rounds": 1}),
    "morisi": (10, 2, None),
    "momiji": (2, 2, None),
}
PRIVATE_EVENTS = ("hand_dealt", "card_received")


class Prompts(list):
    """The prompts one seat's stream brought, in order; awaitable by version."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Condition()

    async def follow(self, stream) -> None:
        async for event in stream:
            if event.WhichOneof("event") == "prompt":
                async with self.arrived:
                    self.append(event)
                    self.arrived.notify_all()

    async def at(self, version: int) -> object:
        async with asyncio.timeout(10), self.arrived:
            await self.arrived.wait_for(lambda: any(p.version == version for p in self))
            return next(p for p in self if p.version == version)


@pytest.mark.parametrize("game", ["happy_mochi", "mori"])
async def test_each_seat_gets_one_prompt_per_version_it_must_decide_with_its_legal_moves(cluster, game):
    client = cluster.client(game)
    players = rules_module(game).GAME.min_players
    started = await start_match(client, players, seed=7)
    prompts = {seat: Prompts() for seat in started.tokens}
    watchers = [
        asyncio.create_task(prompts[seat].follow(client.watch(started.match_id, token, 0)))
        for seat, token in started.tokens.items()
    ]
    deciding: dict[int, list[int]] = {seat: [] for seat in started.tokens}
    for _ in range(12):
        match = await client.match(started.match_id)
        for seat in match.active_seats:
            deciding[seat].append(match.version)
            prompt = await prompts[seat].at(match.version)
            legal = await client.legal_moves(started.match_id, started.tokens[seat])
            assert prompt.prompt.seat == seat and prompt.seq == 0
            assert list(prompt.prompt.moves) == list(legal.moves) and legal.version == match.version
        seat = match.active_seats[0]
        await client.submit(started.match_id, started.tokens[seat], prompts[seat][-1].prompt.moves[0])
    await asyncio.sleep(0.3)  # a duplicate prompt would arrive by now
    for task in watchers:
        task.cancel()
    for seat, received in prompts.items():
        versions = [p.version for p in received]
        assert versions[: len(deciding[seat])] == deciding[seat]  # one each, in order
        assert len(versions) == len(set(versions))


async def test_a_multi_step_turn_answers_with_the_next_moves(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=3)
    seat, _move, version = await active_seat_move(client, started)
    legal = await client.legal_moves(started.match_id, started.tokens[seat])
    draw = next(m for m in legal.moves if m.WhichOneof("kind") == "draw")
    drawn = await client.submit(started.match_id, started.tokens[seat], draw, expected_version=version)
    now = await client.legal_moves(started.match_id, started.tokens[seat])
    assert list(drawn.next_moves) == list(now.moves) and now.moves
    assert {m.WhichOneof("kind") for m in drawn.next_moves} == {"place_card"}
    placed = await client.submit(started.match_id, started.tokens[seat], drawn.next_moves[0])
    if seat not in placed.active_seats:
        assert list(placed.next_moves) == []


async def test_a_spectator_sees_the_public_view_and_public_events_only(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 3, seed=21)
    for _ in range(6):
        seat, move, version = await active_seat_move(client, started)
        await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    last = (await client.match(started.match_id)).version
    view = await client.view(started.match_id, None)
    assert list(view.hand) == [] and len(view.hand_sizes) == 3 and view.version == last
    hands = [(await client.view(started.match_id, t)).hand for t in started.tokens.values()]
    assert all(hands) and str(view).count("hand {") == 0
    public = await events_before(client.watch(started.match_id, None), last)
    by_seat = [await events_before(client.watch(started.match_id, t), last) for t in started.tokens.values()]
    seen_by_all = set.intersection(*({(e.version, e.seq) for e in seen} for seen in by_seat))
    assert [(e.version, e.seq) for e in public] == sorted(seen_by_all)
    assert not [e for e in public if e.WhichOneof("event") in PRIVATE_EVENTS]
    assert any(e.WhichOneof("event") in PRIVATE_EVENTS for seen in by_seat for e in seen)


async def test_a_match_can_refuse_spectators(cluster):
    client = cluster.client(GAME)
    match = await client.create(2, seed=1, table={"no_spectators": True})
    assert match.table.no_spectators
    token = (await client.join(match.match_id, "ann")).token
    await client.join(match.match_id, "bob")
    assert (await client.match(match.match_id)).table.no_spectators
    for call in (client.view(match.match_id, None), anext(aiter(client.watch(match.match_id, None)))):
        refused = await refusal(call)
        assert (refused.code, refused.reason) == (grpc.StatusCode.PERMISSION_DENIED, "spectators_disabled")
    assert (await client.view(match.match_id, token)).seat == 0


async def test_a_server_can_refuse_spectators(redis_url):
    settings = dataclasses.replace(service_settings(GAME, redis_url), spectators=False)
    client = connect(redis_url)
    service = MatchService(rules_module(GAME), MatchStore(client, GAME), settings)
    try:
        facts = await service.create_match(2, 5, {"first_player": 0})
        with pytest.raises(PermissionDenied) as refused:
            await service.get_view(facts.match_id, None)
        assert refused.value.reason == "spectators_disabled"
    finally:
        await client.aclose()


async def test_a_retried_join_gets_the_same_seat_and_token(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    match = await replica_a.create(2, seed=1)
    request_id = uuid.uuid4().hex
    first = await replica_a.join(match.match_id, "ann", request_id=request_id)
    again = await replica_b.join(match.match_id, "ann", request_id=request_id)
    assert (again.seat, again.token) == (first.seat, first.token)
    other = await replica_b.join(match.match_id, "bob", request_id=uuid.uuid4().hex)
    assert other.seat != first.seat
    # The match is full now; the retry still gets its seat, not match_full.
    late = await replica_a.join(match.match_id, "ann", request_id=request_id)
    assert (late.seat, late.token) == (first.seat, first.token)
    assert late.match.status == common_pb2.IN_PROGRESS


async def test_a_replayed_move_answers_the_first_answer_whole(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=3)
    seat, move, version = await active_seat_move(client, started)
    request_id = uuid.uuid4().hex
    first = await client.submit(started.match_id, started.tokens[seat], move, request_id=request_id)
    # The match moves on; the retry still gets the first answer's facts.
    for _ in range(3):
        mover, next_move, now = await active_seat_move(client, started)
        await client.submit(started.match_id, started.tokens[mover], next_move, expected_version=now)
    again = await client.submit(started.match_id, started.tokens[seat], move, request_id=request_id)
    for name in ("version", "events", "active_seats", "status"):
        assert getattr(again, name) == getattr(first, name), name
    assert first.version == version + 1


@pytest.mark.parametrize("game", available_games())
async def test_every_game_plays_to_the_end_by_watching_and_every_version_has_events(
    cluster, redis_client, game
):
    seed, players, options = SHORT[game]
    playing = play_match(cluster.client(game), players, seed=seed, options=options)
    played = await asyncio.wait_for(playing, 120)
    assert played.finished and played.moves > 0
    events = await stored_events(redis_client, played.match_id, game)
    # Every committed version left at least one event (an engine returning none is a bug).
    assert sorted({e.version for e in events}) == list(range(played.moves + 1))
    # The seats' connections (their watches opening) come between: they are not the game's.
    version_0 = [e for e in events if e.version == 0 and "seat_connection" not in e.body]
    opening = version_0[players + 1 :]
    assert [e.body for e in version_0][players] == {"match_started": {"players": players}}
    rules = rules_module(game)
    state = rules.State.new(players, seed, {**default_options(game), **(options or {})})
    expected = state.opening_events()
    assert [(e.body, e.to) for e in opening] == [(e.body, e.to) for e in expected] and expected
    # The streams ended with the match: each replica's hub lets go of its subscription
    # (an UNSUBSCRIBE its command task sends once the stream has detached).
    await watch_released(redis_client, played.match_id)


KILLED_WATCHER = """
import sys, grpc
from mogames.common.v1 import common_pb2
from clients.game_client import game_modules
_, pb2_grpc = game_modules(sys.argv[2])
stub = pb2_grpc.HappyMochiStub(grpc.insecure_channel(sys.argv[1]))
for event in stub.WatchMatch(common_pb2.WatchMatchRequest(match_id=sys.argv[3])):
    print(event.WhichOneof("event"), flush=True)
"""


async def test_a_quiet_play_match_stream_gets_heartbeats_at_its_version(redis_url):
    async with running_services(redis_url, games=[GAME], heartbeat_s=1) as quick:
        client = quick.replica_client(GAME, 0)
        started = await start_match(client, 2, seed=5)
        match = await client.match(started.match_id)
        waiting = next(seat for seat in started.tokens if seat not in match.active_seats)
        call = await client.play(started.match_id, started.tokens[waiting], after_version=match.version)
        beats = []
        async with asyncio.timeout(10):
            async for response in call:
                assert not response.WhichOneof("answer")
                for event in response.events:
                    if event.seq:  # the events of its version, from the cursor (version, 0)
                        assert event.version == match.version, event
                        continue
                    assert event.WhichOneof("event") == "heartbeat", event
                    beats.append(event)
                if len(beats) >= 2:
                    break
        call.cancel()
        assert all(b.version == match.version and b.seq == 0 for b in beats)
        gap_ms = beats[1].heartbeat.server_time_unix_ms - beats[0].heartbeat.server_time_unix_ms
        assert 500 <= gap_ms <= 5000


async def test_a_cancelled_play_match_stream_releases_its_watch(redis_url, redis_client):
    async with running_services(redis_url, games=[GAME]) as quick:
        client = quick.replica_client(GAME, 0)
        started = await start_match(client, 2, seed=5)
        token = next(iter(started.tokens.values()))
        call = await client.play(started.match_id, token, after_version=0)
        assert (await asyncio.wait_for(call.read(), 10)).events, "the history came"
        assert await subscribers(redis_client, started.match_id) == 1
        call.cancel()
        await watch_released(redis_client, started.match_id)


async def test_quiet_streams_get_heartbeats_and_a_killed_clients_watch_is_released(redis_url, redis_client):
    async with running_services(redis_url, games=[GAME], heartbeat_s=1) as quick:
        client = quick.replica_client(GAME, 0)
        started = await start_match(client, 2, seed=5)
        stream = client.watch(started.match_id, None, 0)
        beats = []
        async with asyncio.timeout(10):
            async for event in stream:
                if event.WhichOneof("event") == "heartbeat":
                    beats.append(event)
                    if len(beats) == 2:
                        break
        stream.cancel()
        assert all(b.seq == 0 and b.heartbeat.server_time_unix_ms > 0 for b in beats)
        gap_ms = beats[1].heartbeat.server_time_unix_ms - beats[0].heartbeat.server_time_unix_ms
        assert 500 <= gap_ms <= 5000

        address = quick.replicas_addresses[GAME][0]
        watcher = await asyncio.create_subprocess_exec(
            sys.executable, "-c", KILLED_WATCHER, address, GAME, started.match_id, stdout=subprocess.PIPE
        )
        try:
            assert watcher.stdout is not None
            first = await asyncio.wait_for(watcher.stdout.readline(), 20)
            assert first.decode().strip() == "player_joined"
            assert await subscribers(redis_client, started.match_id) == 1
            watcher.kill()  # SIGKILL: no goodbye from the client
            await asyncio.wait_for(watcher.wait(), 10)
            killed_at = time.monotonic()
            await watch_released(redis_client, started.match_id)
            assert time.monotonic() - killed_at < 10
        finally:
            if watcher.returncode is None:
                watcher.kill()
