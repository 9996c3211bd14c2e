"""A downstream consumer of a game's move feed (``mg:game:<game>:moves``), read with a
Redis consumer group so that several workers share the feed and each entry is acknowledged.

    python -m clients.move_feed --game mori --group stats --consumer worker-1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from services.catalog import GAME_PACKAGES
from services.runtime import keys
from services.runtime.redis_client import RedisClient, connect


@dataclass(frozen=True)
class FeedEntry:
    entry_id: str
    match_id: str
    version: int
    seat: int
    # The move's public events (what a spectator sees), never the move itself.
    events: list[dict[str, Any]]


async def ensure_group(client: RedisClient, game: str, group: str, start: str = "0") -> None:
    """Create the consumer group unless it exists: from the start of the feed ("0") or
    from now on ("$")."""
    try:
        await client.xgroup_create(keys.game_moves(game), group, id=start, mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


async def consume(
    client: RedisClient, game: str, group: str, consumer: str, block_ms: int = 5000, batch: int = 100
) -> AsyncIterator[FeedEntry]:
    """Entries delivered to this consumer, ``batch`` at a time; each is acknowledged once the
    caller has taken it. Ends when no entry came for ``block_ms``."""
    await ensure_group(client, game, group)
    stream = keys.game_moves(game)
    while True:
        reply: Any = await client.xreadgroup(group, consumer, {stream: ">"}, count=batch, block=block_ms)
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                text = {k.decode(): v.decode() for k, v in fields.items()}
                yield FeedEntry(
                    entry_id.decode(),
                    text["match_id"],
                    int(text["version"]),
                    int(text["seat"]),
                    json.loads(text["events"]),
                )
                await client.xack(stream, group, entry_id)
        if not reply:
            return


async def main(args: argparse.Namespace) -> None:
    # Blocks for seconds at a time waiting for moves: no socket timeout.
    client = connect(args.redis_url, os.environ.get("MOGAMES_REDIS_PASSWORD"), socket_timeout_s=None)
    async for entry in consume(client, args.game, args.group, args.consumer):
        print(json.dumps(entry.__dict__), flush=True)
    await client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", choices=sorted(GAME_PACKAGES), required=True)
    parser.add_argument("--group", default="feed")
    parser.add_argument("--consumer", default="consumer-1")
    parser.add_argument(
        "--redis-url", default=os.environ.get("MOGAMES_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    asyncio.run(main(parser.parse_args()))
