"""A random-legal-move bot that plays any game to the end through the seven RPCs."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

from mogames.common.v1 import common_pb2

from clients.game_client import GameClient

# A safety net against a game that never ends; far above any real match's length.
MAX_MOVES = 50_000
# How often a client whose seats all wait on server bots looks again.
SERVER_BOT_POLL_S = 0.02


class MatchDidNotEnd(RuntimeError):
    pass


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
) -> PlayedMatch:
    """Create a match, seat ``players`` bots, and play random legal moves until it ends
    (or, with ``until``, a ``time.monotonic()`` deadline, until then). The last
    ``server_bots`` seats are the server's own bots (TableOptions.bot_seats), which play
    themselves; this client plays the others."""
    rng = rng or random.Random(seed)
    table = common_pb2.TableOptions(bot_seats=range(players - server_bots, players), bot_level=bot_level)
    match = await client.create(players, seed=seed, options=options, table=table)
    tokens = {}
    for n in range(players - server_bots):
        joined = await client.join(match.match_id, f"bot-{n}")
        tokens[joined.seat] = joined.token
    match = await client.match(match.match_id)
    active = list(match.active_seats)
    status = match.status
    played = PlayedMatch(match.match_id, 0, [], [])
    while status == common_pb2.IN_PROGRESS and (until is None or time.monotonic() < until):
        if played.moves >= MAX_MOVES:
            raise MatchDidNotEnd(
                f"{client.game} match {match.match_id} still running after {MAX_MOVES} moves"
            )
        ours = [s for s in active if s in tokens]
        if not ours:  # only server bots have a decision: they move on their own
            await asyncio.sleep(SERVER_BOT_POLL_S)
            match = await client.match(match.match_id)
            active, status = list(match.active_seats), match.status
            continue
        seat = rng.choice(ours)
        legal = await client.legal_moves(match.match_id, tokens[seat])
        if not legal.moves:
            raise RuntimeError(f"seat {seat} is active but has no legal move (version {legal.version})")
        started = time.perf_counter()
        response = await client.submit(
            match.match_id, tokens[seat], rng.choice(legal.moves), expected_version=legal.version
        )
        played.move_latencies_s.append(time.perf_counter() - started)
        played.moves += 1
        active, status = list(response.active_seats), response.status
    played.finished = status == common_pb2.FINISHED
    final = await client.match(match.match_id)
    played.scores, played.winners = list(final.scores), list(final.winners)
    return played


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
