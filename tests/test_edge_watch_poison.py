"""The poisoning watch of issue 14 (point 2), in every game: a spectator that opens the
first watch of a match on each replica with a cursor as far ahead as it can, or with one
out of range, blinds no player who watches after it from the beginning."""

from __future__ import annotations

import asyncio

import grpc

from services.catalog import rules_module
from tests.conftest import available_games
from tests.helpers import active_seat_move, is_history, refusal, start_match

MOVES = 2


async def history_until(stream, version: int) -> list:
    """History events of ``stream`` up to the last of ``version`` (the first event of the
    next version ends the read)."""
    seen = []
    async for event in stream:
        if is_history(event):
            if event.version > version:
                break
            seen.append(event)
    stream.cancel()
    return seen


async def test_a_watch_opened_first_far_ahead_blinds_no_player_in_any_game(cluster):
    for game in available_games():
        replicas = [cluster.replica_client(game, n) for n in (0, 1)]
        started = await start_match(replicas[0], rules_module(game).GAME.min_players, seed=4)
        seat, _move, now = await active_seat_move(replicas[0], started)
        poisons = []
        for replica in replicas:
            for version in (10**12, 2**64 - 1, now + 1):
                refused = await refusal(anext(aiter(replica.watch(started.match_id, None, version))))
                assert (refused.code, refused.field) == (grpc.StatusCode.INVALID_ARGUMENT, "after_version"), (
                    game
                )
            # The furthest cursor there is, the first watch of the match on this replica.
            poison = replica.watch(started.match_id, None, now, after_seq=2**32 - 1)
            poisons.append(asyncio.create_task(anext(aiter(poison))))
            poisons.append(poison)
        await asyncio.sleep(0.2)
        player = asyncio.create_task(
            history_until(replicas[1].watch(started.match_id, started.tokens[seat]), now + MOVES)
        )
        await asyncio.sleep(0.2)
        for _ in range(MOVES + 1):  # one more: its event ends the reads
            mover, move, version = await active_seat_move(replicas[0], started)
            await replicas[0].submit(started.match_id, started.tokens[mover], move, expected_version=version)
        live = await asyncio.wait_for(player, timeout=20)
        replay = await history_until(replicas[0].watch(started.match_id, started.tokens[seat]), now + MOVES)
        assert live == replay and {e.version for e in live} == set(range(now + MOVES + 1)), game
        for poison in poisons:
            poison.cancel()
