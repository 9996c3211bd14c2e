"""A match's history as Redis stores it, and reading it back: each commit's events are one
element of the match's ``tail`` list, older commits are zlib chunks in its ``archive`` list
(services/runtime/history_chunks.py; docs/storage.md). The commit script writing both is in
services/runtime/store.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from services.runtime import keys
from services.runtime.event_packing import EventPacking
from services.runtime.history_chunks import first_plain, unpack_chunk
from services.runtime.record import KnownRecord, MatchRecord
from services.runtime.redis_client import RedisClient

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode

# How many of the latest commits stay in the tail after older ones are archived (a watcher
# a little behind reads them there, without the archive).
KEEP_RECENT = 4

# A stream position, (version, seq) of an event.
Position = tuple[int, int]


@dataclass(frozen=True)
class StoredEvent:
    version: int
    seq: int
    to: tuple[int, ...] | None
    body: dict[str, Any]

    @property
    def stream_id(self) -> str:
        return f"{self.version}-{self.seq}"

    def visible_to(self, seat: int | None) -> bool:
        return self.to is None or (seat is not None and seat in self.to)


@dataclass(frozen=True)
class RecordedAnswer:
    """What a commit answered its SubmitMove, for a retry of the same request id."""

    active_seats: list[int]
    status: str


@dataclass(frozen=True)
class StoredCommit:
    """One commit's events (all of one version, numbered from ``first_seq``), as stored:
    ``[version, first_seq, [[to, body], ...], answer]`` (answer: ``[active_seats, status]``
    of a SubmitMove with a request id, else nil). A body is its game's MatchEvent bytes
    (services/runtime/event_packing.py)."""

    version: int
    first_seq: int
    events: list[StoredEvent]
    answer: RecordedAnswer | None

    @classmethod
    def of(cls, events: list[StoredEvent], answer: RecordedAnswer | None, packing: EventPacking) -> bytes:
        """The tail element of ``events``."""
        body = [[e.to, packing.pack(e.body)] for e in events]
        extra = None if answer is None else [answer.active_seats, answer.status]
        return _pack([events[0].version, events[0].seq, body, extra])

    @classmethod
    def decode(cls, data: list[Any], packing: EventPacking) -> StoredCommit:
        version, first, body, extra = data
        events = [
            StoredEvent(version, first + i, None if to is None else tuple(to), packing.unpack(event))
            for i, (to, event) in enumerate(body)
        ]
        answer = None if extra is None else RecordedAnswer(list(extra[0]), str(extra[1]))
        return cls(version, first, events, answer)


class HistoryReads:
    """Reading a match's history back (MatchStore's read side)."""

    redis: RedisClient
    packing: EventPacking

    async def commit_of_version(self, match_id: str, version: int) -> StoredCommit | None:
        """The commit that made ``version`` (the first one stored under it), if stored."""
        commits = await self._commits_after(match_id, (version, 0), await self._tail(match_id))
        return next((c for c in commits if c.version == version), None)

    async def events_of_version(self, match_id: str, version: int) -> list[StoredEvent]:
        """Every event stored under ``version``."""
        events, _ = await self.events_after(match_id, (version, 0), with_record=False)
        return [e for e in events if e.version == version]

    async def history(self, match_id: str) -> list[StoredEvent]:
        """Every stored event of the match, in order."""
        events, _ = await self.events_after(match_id, (0, 0), with_record=False)
        return events

    async def events_after(
        self, match_id: str, after: Position, with_record: bool, known: KnownRecord | None = None
    ) -> tuple[list[StoredEvent], MatchRecord | None]:
        """Events strictly after stream position ``after`` and, when asked, the match as it
        is once they are read (read second, so it is at least as new as the last event);
        ``known`` may give that record at its rev instead of decoding the document."""
        # The latest few commits first: a live watcher is rarely further behind.
        record = None
        if not with_record:
            recent: Any = await self.redis.lrange(keys.tail(match_id), -KEEP_RECENT, -1)
        else:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.lrange(keys.tail(match_id), -KEEP_RECENT, -1)
                pipe.hmget(keys.match(match_id), ["rev", "doc"])
                recent, (rev, doc) = await pipe.execute()
            if doc is not None and rev is not None:
                record = known(match_id, int(rev)) if known is not None else None
                record = record or MatchRecord.decode(doc, int(rev))
        commits = [StoredCommit.decode(_unpack(element), self.packing) for element in recent]
        if not _reach(commits, after):
            commits = await self._commits_after(match_id, after, await self._tail(match_id))
        return [e for c in commits for e in c.events if (e.version, e.seq) > after], record

    async def _tail(self, match_id: str) -> list[bytes]:
        tail: Any = await self.redis.lrange(keys.tail(match_id), 0, -1)
        return tail

    async def _commits_after(self, match_id: str, after: Position, tail: list[bytes]) -> list[StoredCommit]:
        """The stored commits holding events after ``after``, oldest first: the tail read,
        and when it starts past ``after``, the archive (read after the tail: a chunk
        archived meanwhile is in both, and counted once)."""
        commits = [StoredCommit.decode(_unpack(element), self.packing) for element in tail]
        if _reach(commits, after):
            return [c for c in commits if _last(c) > after]
        older: list[StoredCommit] = []
        chunks: Any = await self.redis.lrange(keys.archive(match_id), 0, -1)
        first = first_plain(chunks[0]) if chunks else b""
        for chunk in reversed(chunks):
            decoded = [StoredCommit.decode(item, self.packing) for item in unpack_chunk(chunk, first)]
            older[:0] = decoded
            if _first(decoded[0]) <= after:
                break
        older += [c for c in commits if not older or _last(c) > _last(older[-1])]
        return [c for c in older if _last(c) > after]


def _reach(commits: list[StoredCommit], after: Position) -> bool:
    """Whether ``commits`` (a read of the tail's end) hold every event after ``after``: they
    start at or before the event right after it, or at the first event of all."""
    if not commits:
        return False
    first = _first(commits[0])
    return first <= (after[0], after[1] + 1) or first == (0, 1)


def _first(commit: StoredCommit) -> Position:
    return commit.version, commit.first_seq


def _last(commit: StoredCommit) -> Position:
    return commit.version, commit.first_seq + len(commit.events) - 1
