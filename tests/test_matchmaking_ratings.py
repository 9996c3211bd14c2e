"""FindMatch by rating, through a real gateway and replicas: players with a session are
paired with similar ratings first, and every one of them is still seated within the wait."""

from __future__ import annotations

import asyncio
import random
import statistics
import time

from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from gateway.rated_pairing import WIDEN_MU_PER_S, WINDOW_MU
from services.runtime.auth import SESSION_METADATA, issue_session
from services.workers.ladders import Ladders
from services.workers.ratings import Skill
from tests.conftest import TOKEN_SECRET, running_services

GAME = "happy_mochi"
PLAYERS = 40
WAIT_S = 12


def random_pairing_median_gap(mus: list[float], rng: random.Random, draws: int = 2000) -> float:
    gaps = []
    for _ in range(draws):
        shuffled = rng.sample(mus, len(mus))
        gaps += [abs(a - b) for a, b in zip(shuffled[::2], shuffled[1::2], strict=True)]
    return statistics.median(gaps)


async def test_forty_rated_players_pair_by_rating_and_all_are_seated_within_the_wait(worker_redis):
    url, client = worker_redis
    rng = random.Random(27)
    # Spread ratings: mu from 10 to 40, the players in a random order.
    mus = [10 + 30 * i / (PLAYERS - 1) for i in range(PLAYERS)]
    rng.shuffle(mus)
    ladders = Ladders(client)
    players = [f"rated-{n}" for n in range(PLAYERS)]
    for player, mu in zip(players, mus, strict=True):
        await ladders.apply(GAME, f"seed-{player}", {player: 0}, {player: Skill(mu, 2.0)}, at_ms=1)
    expires = int(time.time() * 1000) + 600_000
    async with running_services(url, [GAME], bot_think_ms=0, scheduler_tick_ms=50) as cluster:
        lobby = lobby_pb2_grpc.LobbyStub(cluster.gateway)

        async def find(n: int) -> tuple[str, float, float]:
            await asyncio.sleep(rng.random() * 0.5)  # they arrive over half a second
            request = lobby_pb2.FindMatchRequest(
                game=GAME, players=2, player_name=f"p{n}", ticket_id=f"rated-{n}", wait_seconds=WAIT_S
            )
            session = issue_session(TOKEN_SECRET, players[n], expires)
            asked = time.monotonic()
            reply = await lobby.FindMatch(
                request, metadata=[(SESSION_METADATA, session)], timeout=WAIT_S + 30
            )
            return reply.joined.match.match_id, mus[n], time.monotonic() - asked

        found = await asyncio.gather(*(find(n) for n in range(PLAYERS)))
    pairs: dict[str, list[float]] = {}
    for match_id, mu, _waited in found:
        pairs.setdefault(match_id, []).append(mu)
    assert len(pairs) == PLAYERS // 2 and all(len(p) == 2 for p in pairs.values())
    # Everyone seated within the wait: no bot filled a seat, nobody was told no_match_found.
    assert max(waited for _, _, waited in found) < WAIT_S
    gap = statistics.median(abs(a - b) for a, b in pairs.values())
    random_gap = random_pairing_median_gap(mus, rng)
    assert gap * 3 <= random_gap, (gap, random_gap, WINDOW_MU, WIDEN_MU_PER_S)
