"""Write the preset dictionary a game's archived history is compressed with
(``services/<game>/history-events.zdict``; see services/runtime/history_chunks.py).

    python -m deploy.history_dictionaries [game ...]

For each game (all by default) that has none yet: plays a seeded match of random legal
moves through the real service code on a throwaway Redis and keeps its first commits as
they are stored. A game that already has one keeps it: chunks compressed with a dictionary
need that very dictionary to be read, for as long as they are kept.
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
from services.runtime.history_chunks import dictionary_path, first_plain, unpack_chunk
from services.runtime.matches import FINISHED, MatchService
from services.runtime.redis_client import connect
from services.runtime.settings import ServiceSettings
from services.runtime.store import MatchStore

# Commits kept: about two chunks' worth (a chunk is 16), a few KB; zlib looks back 32 KB.
COMMITS = 32
SEED = 20261202


async def sample_commits(game: str, redis_url: str) -> bytes:
    """The first COMMITS commits of a seeded match of ``game``, packed as stored."""
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
        players = rules.GAME.min_players
        facts = await service.create_match(players, SEED, {})
        tokens = {}
        for n in range(players):
            joined = await service.join_match(facts.match_id, f"p{n}")
            tokens[joined.seat] = joined.token
        rng = random.Random(SEED)
        for _ in range(COMMITS + 8):
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
        return b"".join([*(msgspec.msgpack.encode(item) for item in items), *tail][:COMMITS])
    finally:
        await client.aclose()


async def write_missing(games: list[str]) -> None:
    with running_redis() as redis_url:
        for game in games:
            path = dictionary_path(game)
            if path.exists():
                print(f"{game}: kept {path} ({path.stat().st_size} bytes)")
                continue
            path.write_bytes(await sample_commits(game, redis_url))
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
