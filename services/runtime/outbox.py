"""A commit's activity notices, in with the commit or not at all, and never lost after it.

The notices a commit implies (services/runtime/activity.py) are written by the commit script
itself (services/runtime/store.py), so they are committed with the match or not at all. What
follows the commit (the players' indexes, the push to their WatchMyTurns streams) is the
committer's to do, and it can die first; so the notices also wait, as one element, in the
match's outbox (``keys.outbox``: the match's own slot), with a mark ``<match id>/<rev>`` in
its game's mark set (``keys.outbox_marks``, scored by Redis's clock):

- On one Redis any keys may share a script: the commit script appends them to the game's
  activity stream (``keys.activity``) as it appends the move feed, and pushes and marks them.
- On a Redis Cluster the stream and the mark set are in other slots: the committer marks
  before the commit, the commit script pushes them into the outbox, and after it the committer
  appends them to the stream.

Then the committer indexes the match for its players and pushes their notices, and last
removes the element and the mark. A committer that dies in between leaves its mark, and every
replica's scheduler sweeps the marks older than ``GRACE_MS``: it appends what the match's
outbox holds (a cluster), has the players told again (``Scheduler.sweep_outboxes``: indexed,
and pushed the notices still current), and removes each element and the mark. A mark whose
outbox is empty (its commit lost the race, or never ran) is simply removed.

Delivery is at least once: an element is removed only after its entries are in the stream and
told, so a sweep racing a slow committer may append or push them twice. The consumers take
that: a notice's idempotency key is ``<match id>:<version>:<notice>:<player id>`` (webhook
receivers and WatchMyTurns clients drop repeats) and the ratings worker rates a match once
(its per-match marker, docs/ratings.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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

# Has a swept match's players told again, given its entries (field to value) in commit order.
Tell = Callable[[str, list[dict[str, str]]], Awaitable[None]]

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
    """One game's outboxes and marks (``in_commit``: one Redis, where the commit script
    appends the notices to the stream and marks them itself)."""

    def __init__(self, redis: RedisClient, game: str) -> None:
        self.redis = redis
        self.game = game
        self.marks = keys.outbox_marks(game)
        self.in_commit = not isinstance(redis, aioredis.RedisCluster)
        self._mark = redis.register_script(_MARK)
        self._claim = redis.register_script(_CLAIM)

    async def mark(self, match_id: str, rev: int) -> None:
        """Before a cluster's commit on ``rev`` that fills the outbox: where a sweep finds it."""
        await self._mark(keys=[self.marks], args=[mark_of(match_id, rev)])

    async def append(self, notices: Notices) -> None:
        """After a cluster's commit: its entries into the stream (one Redis: done by the commit)."""
        if not self.in_commit:
            await self._append(notices.payload, notices.maxlen)

    def settle(
        self, match_id: str, rev: int, notices: Notices
    ) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
        """The commands (name, args, kwargs) that end the commit on ``rev``'s stay: out of the
        outbox, then the mark (last: a committer that dies before leaves the sweep to tell the
        players)."""
        return [
            ("lrem", (keys.outbox(match_id), 1, notices.payload), {}),
            ("zrem", (self.marks, mark_of(match_id, rev)), {}),
        ]

    async def sweep(self, maxlen: int, tell: Tell, grace_ms: int = GRACE_MS) -> dict[str, int]:
        """Deliver the outboxes of the marks older than ``grace_ms``: their entries into the
        stream (a cluster), then ``tell(match_id, entries)``, then out of the outbox, then the
        mark. How many entries, by match (those with any). A match that fails is logged and
        taken again a grace later."""
        marks = [text(m) for m in await self._claim(keys=[self.marks], args=[grace_ms, SWEEP_BATCH])]
        delivered: dict[str, int] = {}
        for mark in marks:
            match_id = mark.rpartition("/")[0]
            try:
                entries = await self._drain(match_id, maxlen, tell)
                await self.redis.zrem(self.marks, mark)
            except Exception:
                log.exception("outbox_sweep_failed", match_id=match_id)
                continue
            if entries:
                delivered[match_id] = delivered.get(match_id, 0) + entries
        swept = sum(delivered.values())
        if swept:
            metrics.activity_swept(self.game, swept)
            log.warning("outbox_swept", game=self.game, marks=len(marks), entries=swept)
        return delivered

    async def _drain(self, match_id: str, maxlen: int, tell: Tell) -> int:
        outbox = keys.outbox(match_id)
        elements = [text(e) for e in await self.redis.lrange(outbox, 0, -1)]
        entries: list[dict[str, str]] = []
        for element in elements:
            if not self.in_commit:
                await self._append(element, maxlen)
            entries += _entries(element)
        if entries:
            await tell(match_id, entries)
        for element in elements:
            # By value: an element pushed meanwhile stays, one another sweep took is gone.
            await self.redis.lrem(outbox, 1, element)
        return len(entries)

    async def _append(self, payload: str, maxlen: int) -> None:
        """One after another: the stream's node may not be the match's (a cluster)."""
        for entry in _entries(payload):
            fields: dict[Any, Any] = dict(entry)
            await self.redis.xadd(keys.activity(self.game), fields, maxlen=maxlen, approximate=True)


def _entries(payload: str) -> list[dict[str, str]]:
    """An outbox element's entries, each its fields (field to value), in commit order."""
    return [dict(zip(fields[::2], fields[1::2], strict=True)) for fields in _decode_entries(payload)]
