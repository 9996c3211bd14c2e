"""One Redis reader per process for every WatchMatch it serves.

A watcher blocked in its own ``XREAD BLOCK`` would hold a Redis connection for as long as
it waits; thousands of watchers would need thousands of connections. The hub instead runs
one loop that reads every watched stream in a single ``XREAD`` on its own connection and
hands each entry to the watchers of that stream.

A new watcher subscribes first, then replays its history with ``XRANGE``, then takes live
entries from its queue, skipping any it already replayed: nothing is missed between the
replay and the live feed, and nothing is seen twice.

grpc.aio tells a server-streaming handler that its client left only when it next writes,
so a watch whose client went away stays subscribed until its match's next event (or end,
or expiry): it then costs a queue here, not a Redis connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import structlog

from services.runtime import keys
from services.runtime.redis_client import RedisClient
from services.runtime.store import StoredEvent

log = structlog.get_logger("watch_hub")

READ_BLOCK_MS = 250
READ_COUNT = 1000
RETRY_AFTER_ERROR_S = 1.0


def _order(stream_id: str) -> tuple[int, int]:
    version, seq = stream_id.split("-")
    return int(version), int(seq)


class WatchHub:
    def __init__(self, client: RedisClient) -> None:
        # The hub's blocking XREAD holds one connection of the pool at a time.
        self.redis = client
        # Stream key -> the queue of each watcher of that stream.
        self._watchers: dict[str, set[asyncio.Queue[StoredEvent]]] = {}
        self._cursors: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    async def events(
        self, match_id: str, after_id: str, idle_s: float
    ) -> AsyncGenerator[StoredEvent | None, None]:
        """Events of ``match_id`` after ``after_id``, in order, forever; ``None`` after
        ``idle_s`` seconds without one, so the caller can check whether to go on."""
        stream = keys.events(match_id)
        watcher: asyncio.Queue[StoredEvent] = asyncio.Queue()
        self._watchers.setdefault(stream, set()).add(watcher)
        self._cursors.setdefault(stream, after_id)
        self._start()
        try:
            last = _order(after_id)
            history: Any = await self.redis.xrange(stream, f"({after_id}", "+")
            for entry_id, fields in history:
                event = StoredEvent.from_entry(entry_id, fields)
                last = (event.version, event.seq)
                yield event
            while True:
                try:
                    event = await asyncio.wait_for(watcher.get(), idle_s)
                except TimeoutError:
                    yield None
                    continue
                if (event.version, event.seq) > last:
                    last = (event.version, event.seq)
                    yield event
        finally:
            watchers = self._watchers.get(stream)
            if watchers is not None:
                watchers.discard(watcher)
                if not watchers:
                    del self._watchers[stream]
                    self._cursors.pop(stream, None)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="watch-hub")

    async def _run(self) -> None:
        while self._watchers:
            streams: Any = {s: self._cursors[s] for s in self._watchers}
            try:
                reply: Any = await self.redis.xread(streams, count=READ_COUNT, block=READ_BLOCK_MS)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("watch_read_failed")
                await asyncio.sleep(RETRY_AFTER_ERROR_S)
                continue
            # RESP3 replies are a dict keyed by stream; RESP2 a list of [stream, entries].
            batches = reply.items() if isinstance(reply, dict) else (reply or [])
            for name, entries in batches:
                stream = name.decode() if isinstance(name, bytes) else name
                entries = entries[0] if isinstance(reply, dict) else entries
                for entry_id, fields in entries:
                    event = StoredEvent.from_entry(entry_id, fields)
                    if stream in self._cursors:
                        self._cursors[stream] = event.stream_id
                    for watcher in self._watchers.get(stream, ()):
                        watcher.put_nowait(event)
