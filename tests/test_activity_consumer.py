"""The activity consumer on a real Redis: an entry it has handled and acknowledged is not
handled again when a read or a claim sent before the acknowledgement returns it after (its
handler ran concurrently with that request)."""

from __future__ import annotations

import asyncio
import time

from services.runtime import keys
from services.workers.activity import ActivityEntry
from services.workers.consumer import ActivityConsumer, ConsumerSettings, ensure_group
from tests.activity_entries import add_entry, entry_fields

GAME = "mori"


async def test_an_entry_acknowledged_meanwhile_is_not_handled_again_from_an_older_reply(worker_redis):
    _url, client = worker_redis
    handled: list[str] = []

    async def handle(entry: ActivityEntry) -> None:
        handled.append(entry.entry_id)

    settings = ConsumerSettings(group="g", consumer="c", concurrency=4)
    consumer = ActivityConsumer(client, [GAME], settings, handle)
    await ensure_group(client, GAME, settings.group)
    entry_id = await add_entry(
        client, entry_fields("your_turn", GAME, "m-1", 2, ["ann"], at_ms=int(time.time() * 1000))
    )
    reply = await client.xreadgroup(settings.group, settings.consumer, {keys.activity(GAME): ">"})
    entries = reply[0][1]
    # The same reply twice: the second stands for a claim sent while the first was handled.
    assert await consumer._handle_all(GAME, entries) == 1
    await asyncio.gather(*consumer._running)
    assert await client.xpending(keys.activity(GAME), settings.group) == {
        "pending": 0,
        "min": None,
        "max": None,
        "consumers": [],
    }
    assert await consumer._handle_all(GAME, entries) == 0
    await asyncio.gather(*consumer._running)
    assert handled == [entry_id]
