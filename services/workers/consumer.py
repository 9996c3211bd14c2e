"""A consumer group on every game's activity stream: what both workers share.

Each game's stream is read by its own task (a stream per game lives in its own slot on a
Redis Cluster). A worker first reads the entries it was handed before and never
acknowledged (after a restart under the same consumer name), then new ones; now and
then it claims (XAUTOCLAIM) entries another consumer of the group left pending longer
than ``claim_idle_ms`` (a worker that crashed or hangs). An entry is acknowledged only
after its handler returned, so every entry is handled at least once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from redis.exceptions import RedisError, ResponseError

from services.runtime import keys
from services.runtime.redis_client import RedisClient, text
from services.workers import worker_metrics
from services.workers.activity import ActivityEntry, BadEntry

log = structlog.get_logger("activity_consumer")

Handler = Callable[[ActivityEntry], Awaitable[None]]

# A blocking read waits at most this long (shorter than the Redis client's socket timeout).
BLOCK_MS = 1000
LAG_EVERY_S = 2.0
RETRY_AFTER_ERROR_S = 0.5
# How long an acknowledged entry is remembered: far beyond a read's block or a claim's round trip.
ACKED_KEPT_S = 60.0
# In order, an entry whose handler failed (other than on Redis) this often is passed over.
MAX_FAILURES = 5


@dataclass(frozen=True)
class ConsumerSettings:
    group: str
    consumer: str
    batch: int = 100
    # Entries handled at once per stream: 1 keeps the stream's order (the ratings worker).
    concurrency: int = 1
    claim_idle_ms: int = 30_000
    claim_every_s: float = 5.0


async def ensure_group(redis: RedisClient, game: str, group: str) -> None:
    """The group, made at the stream's first entry (made empty when the stream is not yet)."""
    try:
        await redis.xgroup_create(keys.activity(game), group, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


def _id_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


async def lag(redis: RedisClient, game: str, group: str) -> tuple[float, int]:
    """Seconds since the oldest entry the group has not read yet was written (0: none),
    and how many entries it read and has not acknowledged."""
    stream = keys.activity(game)
    groups = await redis.xinfo_groups(stream)
    info = next((g for g in groups if text(g["name"]) == group), None)
    if info is None:
        return 0.0, 0
    unread = await redis.xrange(stream, min=f"({text(info['last-delivered-id'])}", count=1)
    behind = (time.time() * 1000 - _id_ms(text(unread[0][0]))) / 1000 if unread else 0.0
    return max(behind, 0.0), int(info["pending"])


class ActivityConsumer:
    def __init__(
        self, redis: RedisClient, games: list[str], settings: ConsumerSettings, handle: Handler
    ) -> None:
        self.redis = redis
        self.games = games
        self.settings = settings
        self.handle = handle
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._running: set[asyncio.Task[None]] = set()
        # Entries being handled now: a re-read of this consumer's pending entries (after a
        # read failed) or a claim of its own idle ones returns them too, and handling one
        # twice at once would deliver it twice.
        self._in_flight: set[tuple[str, str]] = set()  # (game, entry id): ids repeat across streams
        # Entries this consumer acknowledged lately, oldest first: a claim or a read sent before
        # the acknowledgement may still return one after its handling ended.
        self._acked: OrderedDict[tuple[str, str], float] = OrderedDict()
        # In order: how often each entry's handler failed other than on Redis.
        self._failures: Counter[str] = Counter()

    async def run(self) -> None:
        """Until cancelled: one reading task per game and one that measures lag."""
        for game in self.games:
            await ensure_group(self.redis, game, self.settings.group)
        async with asyncio.TaskGroup() as tasks:
            for game in self.games:
                tasks.create_task(self._follow(game), name=f"follow-{game}")
            tasks.create_task(self._measure(), name="measure-lag")

    async def drain(self) -> None:
        """Wait for the entries being handled (a clean stop)."""
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _follow(self, game: str) -> None:
        stream = keys.activity(game)
        own_pending = True
        claimed_at = time.monotonic()
        while True:
            try:
                if time.monotonic() - claimed_at >= self.settings.claim_every_s:
                    claimed_at = time.monotonic()
                    await self._claim(game)
                reply: Any = await self.redis.xreadgroup(
                    self.settings.group,
                    self.settings.consumer,
                    {stream: "0" if own_pending else ">"},
                    count=self.settings.batch,
                    block=None if own_pending else BLOCK_MS,
                )
                entries = reply[0][1] if reply else []
                started = await self._handle_all(game, entries)
                if own_pending and not started:
                    own_pending = False
            except Exception as error:  # the entry stays pending: read again
                log.warning("activity_read_failed", game=game, error=repr(error))
                # In order: what failed is read again, from this consumer's pending entries.
                own_pending = True
                await asyncio.sleep(RETRY_AFTER_ERROR_S)

    async def _claim(self, game: str) -> None:
        start = "0-0"
        while True:
            reply = await self.redis.xautoclaim(
                keys.activity(game),
                self.settings.group,
                self.settings.consumer,
                self.settings.claim_idle_ms,
                start_id=start,
                count=self.settings.batch,
            )
            start, entries = text(reply[0]), reply[1]
            if entries:
                log.info("activity_claimed", game=game, entries=len(entries), group=self.settings.group)
            await self._handle_all(game, entries)
            # A page may claim nothing (entries not idle long enough) and still not be the last.
            if start == "0-0":
                return

    async def _handle_all(self, game: str, entries: list[Any]) -> int:
        """Handle ``entries`` but those already being handled; how many that started."""
        started = 0
        for raw_id, fields in entries:
            entry_id = text(raw_id)
            if self.settings.concurrency == 1:
                # In order, and a failure stops the stream until the entry is handled.
                await self._handle_in_order(game, entry_id, fields)
                started += 1
                continue
            if (game, entry_id) in self._in_flight or (game, entry_id) in self._acked:
                continue
            self._in_flight.add((game, entry_id))
            started += 1
            await self._slots.acquire()
            task = asyncio.create_task(self._handle_one(game, entry_id, fields, release=True))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return started

    async def _handle_in_order(self, game: str, entry_id: str, fields: dict[bytes, bytes] | None) -> None:
        entry = self._parse(game, entry_id, fields)
        if entry is not None:
            try:
                await self.handle(entry)
            except RedisError:
                raise  # Redis away: the same entry again, however long it takes
            except Exception as error:
                # An entry its handler cannot take (a bug, odd data) would stop the stream
                # for good: after a few tries it is logged and passed over.
                self._failures[entry_id] += 1
                if self._failures[entry_id] < MAX_FAILURES:
                    raise
                log.error("activity_entry_skipped", game=game, entry=entry_id, error=repr(error))
        self._failures.pop(entry_id, None)
        await self.redis.xack(keys.activity(game), self.settings.group, entry_id)

    def _parse(self, game: str, entry_id: str, fields: dict[bytes, bytes] | None) -> ActivityEntry | None:
        """The entry, or None for one trimmed away while pending or unreadable (acknowledged)."""
        if not fields:
            return None
        try:
            return ActivityEntry.parse(entry_id, fields)
        except BadEntry as error:
            log.error("activity_entry_unreadable", game=game, entry=entry_id, error=str(error))
            return None

    async def _handle_one(
        self, game: str, entry_id: str, fields: dict[bytes, bytes] | None, release: bool = False
    ) -> None:
        try:
            entry = self._parse(game, entry_id, fields)
            if entry is not None:
                await self.handle(entry)
            await self.redis.xack(keys.activity(game), self.settings.group, entry_id)
            self._remember_acked((game, entry_id))
        except Exception as error:  # left pending: claimed again later
            log.error("activity_entry_failed", game=game, entry=entry_id, error=repr(error))
            await asyncio.sleep(RETRY_AFTER_ERROR_S)
        finally:
            self._in_flight.discard((game, entry_id))
            if release:
                self._slots.release()

    def _remember_acked(self, entry: tuple[str, str]) -> None:
        now = time.monotonic()
        self._acked[entry] = now
        while self._acked and next(iter(self._acked.values())) < now - ACKED_KEPT_S:
            self._acked.popitem(last=False)

    async def _measure(self) -> None:
        while True:
            for game in self.games:
                with contextlib.suppress(RedisError):
                    behind, pending = await lag(self.redis, game, self.settings.group)
                    worker_metrics.stream_lag(game, self.settings.group, behind, pending)
            await asyncio.sleep(LAG_EVERY_S)
