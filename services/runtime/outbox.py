"""A commit's activity notices, in with the commit or not at all, and never lost after it.

The notices a commit implies (services/runtime/activity.py) are written by the commit script
itself (services/runtime/store.py), so they are committed with the match or not at all:

- On one Redis any keys may share a script: the commit script appends them to the game's
  activity stream (``keys.activity``) as it appends the move feed. Nothing is left to do.
- On a Redis Cluster the stream is in another slot, so the script pushes them, as one element,
  into the match's outbox (``keys.outbox``: the match's own slot). Before the commit the
  committer marks ``<match id>/<rev>`` in its game's mark set (``keys.outbox_marks``, scored by
  Redis's clock); after it, the committer appends the element's entries to the stream, removes
  the element, then the mark. A committer that dies in between leaves its mark, and every
  replica's scheduler sweeps the marks older than ``GRACE_MS``: it appends whatever the match's
  outbox holds, removes each element once appended, then the mark. A mark whose outbox is empty
  (its commit lost the race, or never ran) is simply removed.

Delivery on a cluster is at least once: an element is removed only after its entries are in
the stream, so a sweep racing a slow committer may append them twice. The consumers take that:
a notification's idempotency key is ``<match id>:<version>:<notice>:<player id>`` (receivers
drop repeats) and the ratings worker rates a match once (its per-match marker, docs/ratings.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import redis.asyncio as aioredis
import structlog

from services.runtime import keys, metrics
from services.runtime.redis_client import NOW_MS_LUA, RedisClient, text

log = structlog.get_logger("outbox")

# How old a mark is before a sweep takes its committer for dead: far beyond a commit's round
# trips, short enough that a your-turn notice is late by seconds at worst.
GRACE_MS = 5_000
# Marks one sweep delivers.
SWEEP_BATCH = 100

_encode = msgspec.json.Encoder().encode
_decode_entries = msgspec.json.Decoder(list[list[str]]).decode

# KEYS: the mark set. ARGV: the mark. Scored by Redis's clock; an older score is kept.
_MARK = (
    NOW_MS_LUA
    + """
redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1])
return 1
"""
)

# KEYS: the mark set. ARGV: grace ms, most marks to take. The marks older than the grace,
# each scored now: another replica's sweep leaves them alone for a grace, and one whose
# delivery fails is taken again a grace later.
_CLAIM = (
    NOW_MS_LUA
    + """
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'LIMIT', 0,
  tonumber(ARGV[2]))
for _, mark in ipairs(old) do redis.call('ZADD', KEYS[1], now, mark) end
return old
"""
)


@dataclass(frozen=True)
class Notices:
    """One commit's activity entries as the commit script takes them: ``payload`` is a JSON
    list of entries, each a flat list of field, value (the XADD's arguments)."""

    game: str
    payload: str
    # The activity stream's approximate cap.
    maxlen: int

    @classmethod
    def of(cls, game: str, entries: list[dict[str, str]], maxlen: int) -> Notices:
        fields = [[v for pair in entry.items() for v in pair] for entry in entries]
        return cls(game, _encode(fields).decode(), maxlen)


def mark_of(match_id: str, rev: int) -> str:
    """The mark of the commit made on ``rev`` (match ids hold no '/')."""
    return f"{match_id}/{rev}"


class Outbox:
    """One game's outboxes and marks on a Redis Cluster (``in_commit``: one Redis, none)."""

    def __init__(self, redis: RedisClient, game: str) -> None:
        self.redis = redis
        self.game = game
        self.marks = keys.outbox_marks(game)
        self.in_commit = not isinstance(redis, aioredis.RedisCluster)
        self._mark = redis.register_script(_MARK)
        self._claim = redis.register_script(_CLAIM)

    async def mark(self, match_id: str, rev: int) -> None:
        """Before a commit on ``rev`` that fills the outbox: where a sweep finds it."""
        await self._mark(keys=[self.marks], args=[mark_of(match_id, rev)])

    async def deliver(self, match_id: str, rev: int, notices: Notices) -> None:
        """After the commit on ``rev``: its entries into the stream, then out of the outbox,
        then the mark. A failure leaves the rest to the sweep."""
        await self._append(notices.payload, notices.maxlen)
        await self.redis.lrem(keys.outbox(match_id), 1, notices.payload)
        await self.redis.zrem(self.marks, mark_of(match_id, rev))

    async def sweep(self, maxlen: int, grace_ms: int = GRACE_MS) -> dict[str, int]:
        """Deliver the outboxes of the marks older than ``grace_ms``: how many entries it
        appended, by match (those with any). A match that fails is logged and taken again a
        grace later."""
        marks = [text(m) for m in await self._claim(keys=[self.marks], args=[grace_ms, SWEEP_BATCH])]
        delivered: dict[str, int] = {}
        for mark in marks:
            match_id = mark.rpartition("/")[0]
            try:
                entries = await self._drain(match_id, maxlen)
                await self.redis.zrem(self.marks, mark)
            except Exception:
                log.exception("outbox_sweep_failed", match_id=match_id)
                continue
            if entries:
                delivered[match_id] = delivered.get(match_id, 0) + entries
        appended = sum(delivered.values())
        if appended:
            metrics.activity_swept(self.game, appended)
            log.warning("outbox_swept", game=self.game, marks=len(marks), entries=appended)
        return delivered

    async def _drain(self, match_id: str, maxlen: int) -> int:
        outbox = keys.outbox(match_id)
        appended = 0
        for element in map(text, await self.redis.lrange(outbox, 0, -1)):
            appended += await self._append(element, maxlen)
            # By value: an element pushed meanwhile stays, one another sweep took is gone.
            await self.redis.lrem(outbox, 1, element)
        return appended

    async def _append(self, payload: str, maxlen: int) -> int:
        """One after another: the stream's node may not be the match's (a cluster)."""
        entries = _decode_entries(payload)
        for fields in entries:
            entry: dict[Any, Any] = dict(zip(fields[::2], fields[1::2], strict=True))
            await self.redis.xadd(keys.activity(self.game), entry, maxlen=maxlen, approximate=True)
        return len(entries)
