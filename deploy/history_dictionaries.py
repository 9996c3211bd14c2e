"""Write the preset dictionary a game's archived history is compressed with
(``services/<game>/history-events.zdict``; see services/runtime/history_chunks.py).

    python -m deploy.history_dictionaries [game ...]

For each game (all by default) that has none yet: plays seeded matches of random legal
moves through the real service code on a throwaway Redis and keeps their commits as they
are stored, up to what deflate can look back over (32 KB). A game that already has one
keeps it: chunks compressed with a dictionary need that very dictionary to be read, for as
long as they are kept.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import sys
from typing import Any

import msgspec

from deploy.redis_server import running_redis
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime import keys, logs
from services.runtime.history_chunks import dictionary_path, first_plain, plain_chunk, unpack_chunk
from services.runtime.matches import FINISHED, MatchService
from services.runtime.redis_client import connect
from services.runtime.settings import ServiceSettings
from services.runtime.store import MatchStore

# Commits kept: as many as deflate can look back over (its 32 KB window, less the 262 bytes
# it keeps for lookahead), up to 512. A match's archive is about a sixth smaller with 512
# than with 32 (Happy Mochi, ~700 commits a match): its chunks find more of their cards,
# moves and event shapes in the sample.
COMMITS = 512
MAX_BYTES = 32 * 1024 - 262
SEED = 20261202


async def sample_commits(game: str, redis_url: str) -> list[list[list[Any]]]:
    """The commits of seeded matches of ``game`` (decoded, as many matches as it takes for
    COMMITS commits, each from its start)."""
    rules = rules_module(game)
    settings = ServiceSettings(
        game=game,
        listen="127.0.0.1:0",
        redis_url=redis_url,
        token_secret=secrets.token_bytes(32),
        finished_ttl_s=600,
        abandon_after_s=3600,
        game_stream_maxlen=100,
        shutdown_grace_s=1,
        log_level="warning",
        allow_client_seed=True,
    )
    client = connect(redis_url)
    try:
        service = MatchService(rules, MatchStore(client, game), settings)
        matches: list[list[list[Any]]] = []
        seed = SEED
        while sum(map(len, matches)) < COMMITS:
            matches.append(await _played(service, client, seed, COMMITS - sum(map(len, matches))))
            seed += 1
        return matches
    finally:
        await client.aclose()


async def _played(service: MatchService, client: Any, seed: int, commits: int) -> list[list[Any]]:
    """The stored commits (about ``commits`` of them, fewer if it ends first) of a match of
    random legal moves from ``seed``."""
    players = service.rules.GAME.min_players
    facts = await service.create_match(players, seed, {})
    tokens = {}
    for n in range(players):
        joined = await service.join_match(facts.match_id, f"p{n}")
        tokens[joined.seat] = joined.token
    rng = random.Random(seed)
    for _ in range(commits):
        record = await service.store.load(facts.match_id)
        assert record is not None
        if record.status == FINISHED:
            break
        state = service.decode_state(record.state)
        seat = rng.choice(list(state.active_seats()))
        move = rng.choice(state.legal_moves(seat))
        await service.submit_move(facts.match_id, tokens[seat], move, None, f"sample-{record.version}")
    # Replies are bytes (no decode_responses), which redis-py's stubs do not know.
    chunks: Any = await client.lrange(keys.archive(facts.match_id), 0, -1)
    first = first_plain(chunks[0]) if chunks else b""
    items = [item for chunk in chunks for item in unpack_chunk(chunk, first)]
    tail: Any = await client.lrange(keys.tail(facts.match_id), 0, -1)
    return [*items, *(msgspec.msgpack.decode(element) for element in tail)]


def dictionary(matches: list[list[list[Any]]]) -> bytes:
    """The sampled ``matches``' commits as chunks hold them (``plain_chunk``), a chunk per
    match, up to COMMITS commits and MAX_BYTES in all."""
    out = b""
    kept = 0
    for commits in matches:
        commits = commits[: COMMITS - kept]
        while commits and len(out) + len(plain_chunk(commits)) > MAX_BYTES:
            commits = commits[: len(commits) * 9 // 10]
        if not commits:
            break
        out += plain_chunk(commits)
        kept += len(commits)
    return out


async def write_missing(games: list[str]) -> None:
    with running_redis() as redis_url:
        for game in games:
            path = dictionary_path(game)
            if path.exists():
                print(f"{game}: kept {path} ({path.stat().st_size} bytes)")
                continue
            path.write_bytes(dictionary(await sample_commits(game, redis_url)))
            print(f"{game}: wrote {path} ({path.stat().st_size} bytes)")


def main() -> None:
    games = sys.argv[1:] or list(GAME_PACKAGES)
    unknown = [g for g in games if g not in GAME_PACKAGES]
    if unknown:
        sys.exit(f"unknown games: {', '.join(unknown)} (known: {', '.join(GAME_PACKAGES)})")
    logs.configure("warning")
    asyncio.run(write_missing(games))


if __name__ == "__main__":
    main()
