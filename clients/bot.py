"""A random-legal-move bot that plays any game to the end by WatchMatch prompts and SubmitMove."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient

# A safety net against a game that never ends; far above any real match's length.
MAX_MOVES = 50_000


class MatchDidNotEnd(RuntimeError):
    pass


class MoveRefused(RuntimeError):
    """A legal move (from the seat's own prompt) refused otherwise than as stale."""


@dataclass
class PlayedMatch:
    match_id: str
    moves: int
    scores: list[int]
    winners: list[int]
    move_latencies_s: list[float] = field(default_factory=list)
    finished: bool = False


async def play_match(
    client: GameClient,
    players: int,
    seed: int | None = None,
    rng: random.Random | None = None,
    until: float | None = None,
    options: dict[str, Any] | None = None,
    server_bots: int = 0,
    bot_level: str = "",
    one_stream: bool = False,
    turn_seconds: int = 0,
) -> PlayedMatch:
    """Create a match, seat ``players`` bots, and play random legal moves until it ends
    (or, with ``until``, a ``time.monotonic()`` deadline, until then). The last
    ``server_bots`` seats are the server's own bots (TableOptions.bot_seats), which play
    themselves; this client plays the others.

    Each seat plays as a live client does: one WatchMatch, and one SubmitMove per decision,
    taken from the stream's prompts (or from ``next_moves`` in a multi-step turn); with
    ``one_stream``, both on one PlayMatch stream. ``turn_seconds`` gives every decision a
    turn clock (TableOptions.turn_seconds; 0: none)."""
    rng = rng or random.Random(seed)
    table = common_pb2.TableOptions(
        bot_seats=range(players - server_bots, players), bot_level=bot_level, turn_seconds=turn_seconds
    )
    match = await client.create(players, seed=seed, options=options, table=table)
    tokens = {}
    for n in range(players - server_bots):
        joined = await client.join(match.match_id, f"bot-{n}")
        tokens[joined.seat] = joined.token
    played = PlayedMatch(match.match_id, 0, [], [])
    play_seat = _play_seat_on_stream if one_stream else _play_seat
    seats = [asyncio.create_task(play_seat(client, played, s, t, rng, until)) for s, t in tokens.items()]
    if not seats:  # server bots only: watch them play
        seats = [asyncio.create_task(_play_seat(client, played, None, None, rng, until))]
    timeout = None if until is None else max(0.0, until - time.monotonic())
    done, pending = await asyncio.wait(seats, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        task.result()  # raises what a seat raised
    final = await client.match(match.match_id)
    played.finished = final.status == common_pb2.FINISHED
    played.scores, played.winners = list(final.scores), list(final.winners)
    return played


async def _play_seat(
    client: GameClient,
    played: PlayedMatch,
    seat: int | None,
    token: str | None,
    rng: random.Random,
    until: float | None,
) -> None:
    """One seat: watch from the start of play, answer every prompt, stop at the match's end
    (``token`` None: a spectator, who only waits for the end)."""
    stream = client.watch(played.match_id, token, after_version=0)
    acted_at = -1  # the version this seat last moved to
    try:
        async for event in stream:
            kind = event.WhichOneof("event")
            if kind == "match_ended":
                return
            if kind != "prompt" or event.version <= acted_at or token is None:
                continue  # not a decision, or one this seat already took from next_moves
            version, moves = event.version, list(event.prompt.moves)
            while moves:
                if until is not None and time.monotonic() >= until:
                    return
                if played.moves >= MAX_MOVES:
                    raise MatchDidNotEnd(
                        f"{client.game} match {played.match_id} still running after {MAX_MOVES} moves"
                    )
                started = time.perf_counter()
                try:
                    response = await client.submit(
                        played.match_id, token, rng.choice(moves), expected_version=version
                    )
                except grpc.aio.AioRpcError as error:
                    if error.code() != grpc.StatusCode.ABORTED:
                        raise
                    break  # another seat moved first: this seat's next prompt follows
                played.move_latencies_s.append(time.perf_counter() - started)
                played.moves += 1
                acted_at = version = response.version
                moves = list(response.next_moves)
    finally:
        stream.cancel()


async def _play_seat_on_stream(
    client: GameClient,
    played: PlayedMatch,
    seat: int | None,
    token: str | None,
    rng: random.Random,
    until: float | None,
) -> None:
    """One seat on a PlayMatch stream: the same decisions as ``_play_seat``, each move sent
    on the stream and answered there."""
    assert token is not None
    call = await client.play(played.match_id, token, after_version=0)
    acted_at = -1  # the version this seat last moved to
    decision: tuple[int, list[Any]] | None = None
    sent_at: float | None = None  # a move is in flight since then
    try:
        async for response in call:
            ended = False
            for event in response.events:
                kind = event.WhichOneof("event")
                ended = ended or kind == "match_ended"
                if kind == "prompt" and event.version > acted_at:
                    decision = (event.version, list(event.prompt.moves))
            answer = response.WhichOneof("answer")
            if answer == "committed":
                assert sent_at is not None
                played.move_latencies_s.append(time.perf_counter() - sent_at)
                played.moves += 1
                acted_at = response.committed.version
                next_moves = list(response.committed.next_moves)
                decision = (acted_at, next_moves) if next_moves else None
                sent_at = None
            elif answer == "refused":
                if response.refused.code != grpc.StatusCode.ABORTED.value[0]:
                    raise MoveRefused(f"{client.game} {played.match_id}: {response.refused}")
                sent_at = None  # another seat moved first: this seat's next prompt follows
            if ended:
                return
            if decision is None or sent_at is not None:
                continue
            if until is not None and time.monotonic() >= until:
                return
            if played.moves >= MAX_MOVES:
                raise MatchDidNotEnd(
                    f"{client.game} match {played.match_id} still running after {MAX_MOVES} moves"
                )
            version, moves = decision
            decision, sent_at = None, time.perf_counter()
            await client.send_move(call, rng.choice(moves), expected_version=version)
    finally:
        call.cancel()


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``["max_rounds=2", "bid_for_solo=true"]`` -> ``{"max_rounds": 2, "bid_for_solo": True}``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"an option is name=value, not {pair!r}")
        lowered = text.lower()
        if lowered in ("true", "false"):
            options[name] = lowered == "true"
        elif text.lstrip("-").isdigit():
            options[name] = int(text)
        else:
            options[name] = text
    return options
