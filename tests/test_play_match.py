"""PlayMatch: a seat's watch and its moves on one stream, through the gateway and straight
to a replica: whole matches, answers in the message of their version's events, refusals
answered on the stream that change nothing, the stream's own errors, and the same events
as WatchMatch from any cursor."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from mogames.common.v1 import common_pb2
from mogames.happymochi.v1 import happymochi_pb2

from clients.bot import play_match
from clients.game_client import GameClient, auth
from services.catalog import rules_module
from tests.conftest import available_games
from tests.helpers import active_seat_move, is_history, start_match
from tests.test_all_games import default_options

GAME = "happy_mochi"
C = grpc.StatusCode


def _targets(cluster: Any, game: str) -> list[tuple[str, GameClient]]:
    return [("gateway", cluster.client(game)), ("direct", cluster.replica_client(game, 0))]


async def _next(call: Any) -> Any:
    response = await asyncio.wait_for(call.read(), 10)
    assert response is not grpc.aio.EOF, "the stream ended"
    return response


async def _answer(call: Any) -> Any:
    """The next message that answers a move (events of other seats may come first)."""
    while True:
        response = await _next(call)
        if response.WhichOneof("answer"):
            return response


@pytest.mark.parametrize("game", available_games())
async def test_every_game_is_played_to_its_end_on_play_match_streams(cluster, game):
    info = rules_module(game).GAME
    options = {"max_rounds": 1} if game == "more" else default_options(game)
    for target, client in _targets(cluster, game):
        played = await asyncio.wait_for(
            play_match(client, info.min_players, seed=11, options=options, one_stream=True), 300
        )
        final = await client.match(played.match_id)
        assert played.finished, f"{game} via {target}"
        # Every version but the joins' 0 is one move the seats sent and saw answered.
        assert played.moves == final.version, f"{game} via {target}"


async def test_a_committed_move_is_answered_in_the_message_of_its_events(cluster):
    for target, client in _targets(cluster, GAME):
        started = await start_match(client, 2, seed=5)
        streams = {seat: await client.play(started.match_id, token) for seat, token in started.tokens.items()}
        try:
            for _ in range(6):
                seat, move, version = await active_seat_move(client, started)
                await client.send_move(streams[seat], move, expected_version=version)
                response = await _answer(streams[seat])
                assert response.WhichOneof("answer") == "committed", target
                assert response.committed.version == version + 1
                versions = {e.version for e in response.events if is_history(e)}
                assert version + 1 in versions, f"via {target}: the answer came without its events"
                answered = [(e.version, e.seq) for e in response.committed.events]
                sent = [
                    (e.version, e.seq) for e in response.events if e.version == version + 1 and is_history(e)
                ]
                assert sent == answered
        finally:
            for call in streams.values():
                call.cancel()


async def test_refused_moves_are_answered_on_the_stream_and_change_nothing(cluster):
    for target, client in _targets(cluster, GAME):
        started = await start_match(client, 2, seed=6)
        seat, move, version = await active_seat_move(client, started)
        idle = next(s for s in started.tokens if s != seat)
        mover = await client.play(started.match_id, started.tokens[seat])
        waiter = await client.play(started.match_id, started.tokens[idle])
        try:
            refusals = []
            for call, bad, expected in (
                (waiter, move, None),
                (mover, move, version + 7),
                (mover, happymochi_pb2.Move(), None),
                (mover, happymochi_pb2.Move(play_duo=happymochi_pb2.PlayDuo(position=40)), None),
            ):
                await client.send_move(call, bad, expected_version=expected)
                response = await _answer(call)
                assert response.WhichOneof("answer") == "refused", target
                refusals.append(response.refused)
            not_turn, stale, empty, illegal = refusals
            assert (not_turn.code, not_turn.reason) == (C.FAILED_PRECONDITION.value[0], "not_your_turn")
            assert (stale.code, stale.field) == (C.ABORTED.value[0], "expected_version")
            assert (empty.code, empty.field) == (C.INVALID_ARGUMENT.value[0], "move")
            assert illegal.code in (C.INVALID_ARGUMENT.value[0], C.FAILED_PRECONDITION.value[0])
            assert illegal.reason and illegal.message
            assert (await client.match(started.match_id)).version == version, "a refusal changed nothing"
            # The stream goes on: the same seat's legal move commits on it.
            await client.send_move(mover, move, expected_version=version)
            assert (await _answer(mover)).committed.version == version + 1
        finally:
            mover.cancel()
            waiter.cancel()


async def _stream_error(client: GameClient, requests: list[Any], token: str | None) -> grpc.aio.AioRpcError:
    call = client.stub.PlayMatch(iter(requests), metadata=auth(token) if token else None, timeout=10)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in call:
            pass
    return raised.value


async def test_a_stream_that_is_not_a_seat_s_play_ends_with_the_right_status(cluster):
    for target, client in _targets(cluster, GAME):
        started = await start_match(client, 2, seed=7)
        other = await start_match(client, 2, seed=8)
        token = started.tokens[0]
        pb2 = client.pb2
        watch = pb2.PlayMatchRequest(watch=common_pb2.WatchMatchRequest(match_id=started.match_id))
        move = pb2.PlayMatchRequest(move=pb2.SubmitMoveRequest(move=happymochi_pb2.Move(pass_turn={})))
        foreign = pb2.PlayMatchRequest(move=pb2.SubmitMoveRequest(match_id=other.match_id))
        cases = {
            "no watch first": ([move], token, C.INVALID_ARGUMENT),
            "a second watch": ([watch, watch], token, C.INVALID_ARGUMENT),
            "another match's move": ([watch, foreign], token, C.INVALID_ARGUMENT),
            "a forged token": ([watch], token[:-3] + "abc", C.UNAUTHENTICATED),
            "another match's token": ([watch], other.tokens[0], C.PERMISSION_DENIED),
        }
        for label, (requests, bearer, code) in cases.items():
            error = await _stream_error(client, requests, bearer)
            assert error.code() == code, f"{label} via {target}: {error.code()} {error.details()}"
        # Undecodable bytes as a request message: the client's mistake, not UNKNOWN.
        channel = cluster.gateway if target == "gateway" else cluster.replicas[GAME][0]
        path = f"/{rules_module(GAME).GAME.full_service}/PlayMatch"
        raw = channel.stream_stream(path)(iter([b"\xff\xff\xff"]), metadata=auth(token), timeout=10)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for _ in raw:
                pass
        assert raised.value.code() == C.INVALID_ARGUMENT, target
        assert (await client.match(started.match_id)).version == 0


def is_game_history(event: Any) -> bool:
    """A stored event but a seat's connection, which each stream of this test adds itself."""
    return is_history(event) and event.WhichOneof("event") != "seat_connection"


async def test_play_match_gives_the_events_watch_match_gives_from_every_cursor(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=9)
    for _ in range(5):
        seat, move, version = await active_seat_move(client, started)
        await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    token = started.tokens[1]
    history = []
    async for event in client.watch(started.match_id, token, after_version=None):
        if is_game_history(event):
            history.append(event)
            if event.version == 5:
                break
    cursors = [(None, 0), *sorted({(e.version, e.seq) for e in history})]
    for after_version, after_seq in cursors:
        start = (-1, 0) if after_version is None else (after_version, after_seq)
        expected = [e for e in history if (e.version, e.seq) > start]
        play = await client.play(started.match_id, token, after_version, after_seq)
        try:
            got: list[Any] = []
            while len(got) < len(expected):
                got += [e for e in (await _next(play)).events if is_game_history(e)]
        finally:
            play.cancel()
        assert got == expected, (after_version, after_seq)
