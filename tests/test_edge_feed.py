"""The per-game move feed holds only what a spectator may see (issue 14, point 9): in every
game, random play leaves each version's public events in the feed and never the move (a
sealed bid, a prediction, a chosen card) or any event addressed to one seat."""

from __future__ import annotations

import json
import random

from services.catalog import rules_module
from services.runtime import keys
from tests.conftest import available_games
from tests.helpers import start_match
from tests.test_concurrency import stored_events

MOVES = 40


async def test_the_feed_of_every_game_holds_public_events_only(cluster, redis_client):
    rng = random.Random(9)
    private_seen = {}
    for game in available_games():
        client = cluster.client(game)
        started = await start_match(client, rules_module(game).GAME.min_players, seed=rng.randrange(10**6))
        for _ in range(MOVES):
            match = await client.match(started.match_id)
            if not match.active_seats:
                break
            seat = rng.choice(list(match.active_seats))
            legal = await client.legal_moves(started.match_id, started.tokens[seat])
            move = rng.choice(list(legal.moves))
            await client.submit(started.match_id, started.tokens[seat], move, expected_version=legal.version)
        stored = await stored_events(redis_client, started.match_id, game)
        feed = [
            fields
            for _id, fields in await redis_client.xrange(keys.game_moves(game))
            if fields[b"match_id"].decode() == started.match_id
        ]
        versions = sorted({e.version for e in stored} - {0})
        assert [int(f[b"version"]) for f in feed] == versions, game
        for fields in feed:
            version = int(fields[b"version"])
            assert b"move" not in fields, game
            text = fields[b"events"].decode()
            assert json.loads(text) == [e.body for e in stored if e.version == version and e.to is None], game
            compact = text.replace(" ", "")
            for secret in (e for e in stored if e.version == version and e.to is not None):
                assert json.dumps(secret.body).replace(" ", "") not in compact, game
        private_seen[game] = sum(1 for e in stored if e.version > 0 and e.to is not None)
    # The play reached hidden information in most games: the check above had secrets to keep.
    print(f"events for one seat only, per game: {private_seen}")
    assert sum(1 for count in private_seen.values() if count) >= 3, private_seen
