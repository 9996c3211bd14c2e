"""Match state in Redis: one hash per match, one event stream per match, atomic commits.

Every write is a compare-and-set on the match's ``rev`` counter inside one Lua script,
which also appends the write's events to the match stream and records the request id.
So a move is committed whole or not at all, and two replicas racing on one match cannot
both commit against the same revision.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import redis.asyncio as aioredis
import structlog

from services.runtime import keys
from services.runtime.redis_client import RedisClient

log = structlog.get_logger("store")

# Documents and events are stored as MessagePack: smaller than JSON (no quoted keys, no
# separators; ~0.65 of the bytes) and faster to make and read. JSON written before still
# reads (a JSON document starts with "{", a MessagePack map or array never does).
_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


def _decode(raw: str | bytes) -> Any:
    if isinstance(raw, str) or raw[:1] == b"{":
        return json.loads(raw)
    return _unpack(raw)


# A record this process already holds decoded, by match id and rev (to read only), if any.
KnownRecord = Callable[[str, int], "MatchRecord | None"]

# KEYS: match hash, events stream, request record, notify channel (same hash tag), and
#       the per-game move feed (another slot: given on a single Redis only).
# ARGV: expected rev, new doc, ttl seconds, request value ('' = no request id),
#       request ttl, new version, feed maxlen, feed entry (JSON list of field, value pairs;
#       '' = none), then event id / payload pairs.
# The PUBLISH (the stream id of the write's last event) wakes the watch hubs that have not
# seen that far; a hub that misses it (reconnecting) re-reads the
# stream, which stays the source of truth.
_COMMIT = """
if ARGV[4] ~= '' then
  local previous = redis.call('GET', KEYS[3])
  if previous then return {'duplicate', previous} end
end
local rev = redis.call('HGET', KEYS[1], 'rev')
if rev ~= ARGV[1] then return {'conflict', rev or ''} end
local new_rev = tonumber(rev) + 1
redis.call('HSET', KEYS[1], 'rev', new_rev, 'doc', ARGV[2])
for i = 9, #ARGV, 2 do
  redis.call('XADD', KEYS[2], ARGV[i], 'e', ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
if ARGV[4] ~= '' then redis.call('SET', KEYS[3], ARGV[4], 'EX', ARGV[5]) end
if #ARGV >= 9 then redis.call('PUBLISH', KEYS[4], ARGV[#ARGV - 1]) end
if ARGV[8] ~= '' and KEYS[5] then
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[7], '*', unpack(cjson.decode(ARGV[8])))
end
return {'ok', tostring(new_rev)}
"""


@dataclass
class MatchRecord:
    """Everything stored about a match. ``state`` is the engine's own snapshot."""

    match_id: str
    game: str
    players: int
    seed: int
    options: dict[str, Any]
    seats: list[str | None]
    status: str
    version: int
    state: dict[str, Any]
    created_at: float
    updated_at: float
    # Sequence number of the last event stored under the current version.
    event_seq: int = 0
    # The checked TableOptions, and what they rule per seat: tokens, bots, clocks
    # (services/runtime/tables.py owns both shapes).
    table: dict[str, Any] = field(default_factory=dict)
    lifecycle: dict[str, Any] = field(default_factory=dict)
    rev: int = field(default=0, compare=False)

    def encode(self) -> bytes:
        # Not dataclasses.asdict: it deep-copies the engine state, the costliest part of a move.
        return _pack({f.name: getattr(self, f.name) for f in _RECORD_FIELDS})

    @classmethod
    def decode(cls, raw: str | bytes, rev: int) -> MatchRecord:
        return cls(**_decode(raw), rev=rev)


_RECORD_FIELDS = [f for f in dataclasses.fields(MatchRecord) if f.name != "rev"]


@dataclass(frozen=True)
class StoredEvent:
    version: int
    seq: int
    to: tuple[int, ...] | None
    body: dict[str, Any]

    @property
    def stream_id(self) -> str:
        return f"{self.version}-{self.seq}"

    def payload(self) -> bytes:
        """``[to, body]`` (the seats it is for, or nil for everyone; the event)."""
        return _pack((self.to, self.body))

    @classmethod
    def from_entry(cls, entry_id: bytes | str, fields: dict[Any, Any]) -> StoredEvent:
        text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
        version, seq = (int(part) for part in text.split("-"))
        data = _decode(fields[b"e"] if b"e" in fields else fields["e"])
        to, body = (data["to"], data["body"]) if isinstance(data, dict) else data
        return cls(version=version, seq=seq, to=None if to is None else tuple(to), body=body)

    def visible_to(self, seat: int | None) -> bool:
        return self.to is None or (seat is not None and seat in self.to)


@dataclass(frozen=True)
class FeedEntry:
    """An entry for a per-game move feed (``keys.game_moves``), capped near ``maxlen``."""

    key: str
    fields: dict[Any, Any]
    maxlen: int


@dataclass(frozen=True)
class CommitResult:
    outcome: str  # "ok", "conflict" or "duplicate"
    rev: int = 0
    previous_answer: str = ""


class MatchStore:
    def __init__(self, client: RedisClient) -> None:
        self.redis = client
        self._commit = client.register_script(_COMMIT)
        # One Redis: the feed entry goes in the commit script (one round trip). A cluster
        # keeps the feed in another slot, so it is appended right after the commit.
        self._feed_in_commit = not isinstance(client, aioredis.RedisCluster)

    async def create(self, record: MatchRecord, ttl_s: int) -> None:
        key = keys.match(record.match_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"rev": 0, "doc": record.encode()})
            pipe.expire(key, ttl_s)
            await pipe.execute()

    async def rev(self, match_id: str) -> int | None:
        """The match's current rev (None: no such match): one small field, no document."""
        rev = await self.redis.hget(keys.match(match_id), "rev")
        return None if rev is None else int(rev)

    async def load(self, match_id: str) -> MatchRecord | None:
        rev, doc = await self.redis.hmget(keys.match(match_id), ["rev", "doc"])
        if doc is None or rev is None:
            return None
        return MatchRecord.decode(doc, int(rev))

    async def load_for_request(
        self, match_id: str, request_key: str
    ) -> tuple[MatchRecord | None, str | None]:
        """The match and the recorded answer to ``request_key`` (if any), in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hmget(keys.match(match_id), ["rev", "doc"])
            pipe.get(request_key)
            (rev, doc), answer = await pipe.execute()
        record = None if doc is None or rev is None else MatchRecord.decode(doc, int(rev))
        return record, answer.decode() if isinstance(answer, bytes) else answer

    async def commit(
        self,
        record: MatchRecord,
        events: list[StoredEvent],
        ttl_s: int,
        request_key: str | None = None,
        request_answer: str = "",
        request_ttl_s: int = 0,
        feed: FeedEntry | None = None,
    ) -> CommitResult:
        """Write ``record`` if nobody wrote since it was loaded (its ``rev``), and once it is
        written, append ``feed`` to its per-game feed."""
        match_id = record.match_id
        in_commit = feed is not None and self._feed_in_commit
        feed_fields = [str(v) for pair in feed.fields.items() for v in pair] if feed is not None else []
        argv: list[Any] = [
            record.rev,
            record.encode(),
            ttl_s,
            request_answer if request_key else "",
            max(request_ttl_s, 1),
            record.version,
            feed.maxlen if feed is not None else 0,
            json.dumps(feed_fields, separators=(",", ":")) if in_commit else "",
        ]
        for event in events:
            argv += [event.stream_id, event.payload()]
        request = request_key or keys.request(match_id, 0, "-")
        script_keys = [keys.match(match_id), keys.events(match_id), request, keys.notify(match_id)]
        if in_commit:
            assert feed is not None
            script_keys.append(feed.key)
        result = await self._commit(keys=script_keys, args=argv)
        outcome = result[0].decode() if isinstance(result[0], bytes) else result[0]
        value = result[1].decode() if isinstance(result[1], bytes) else result[1]
        if outcome == "ok":
            if feed is not None and not in_commit:
                await self._append(feed, record.version)
            return CommitResult("ok", rev=int(value))
        if outcome == "duplicate":
            return CommitResult("duplicate", previous_answer=value)
        return CommitResult("conflict")

    async def _append(self, feed: FeedEntry, version: int) -> None:
        """Append a committed move's feed entry (a cluster: another slot, another node).

        Awaited, not left to a task: many appends in flight to a node that fails make the
        cluster client tear down that node's connections under other calls' feet."""
        try:
            await self.redis.xadd(feed.key, feed.fields, maxlen=feed.maxlen, approximate=True)
        except Exception:
            # The move is committed: failing its answer now (a feed node failing over) would
            # only make the client retry a move that is already in; the feed misses it.
            log.exception("game_feed_append_failed", version=version)

    async def events_of_version(self, match_id: str, version: int) -> list[StoredEvent]:
        """Every event stored under ``version`` (stream ids ``<version>-*``)."""
        entries: Any = await self.redis.xrange(keys.events(match_id), str(version), str(version))
        return [StoredEvent.from_entry(i, f) for i, f in entries]

    async def events_after(
        self, match_id: str, after: tuple[int, int], with_record: bool, known: KnownRecord | None = None
    ) -> tuple[list[StoredEvent], MatchRecord | None]:
        """Events strictly after stream position ``after`` and, when asked, the match as it
        is once they are read (read second, so it is at least as new as the last event);
        ``known`` may give that record at its rev instead of decoding the document."""
        start = f"({after[0]}-{after[1]}"
        if not with_record:
            entries: Any = await self.redis.xrange(keys.events(match_id), start, "+")
            return [StoredEvent.from_entry(i, f) for i, f in entries], None
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xrange(keys.events(match_id), start, "+")
            pipe.hmget(keys.match(match_id), ["rev", "doc"])
            entries, (rev, doc) = await pipe.execute()
        record = None
        if doc is not None and rev is not None:
            record = known(match_id, int(rev)) if known is not None else None
            record = record or MatchRecord.decode(doc, int(rev))
        return [StoredEvent.from_entry(i, f) for i, f in entries], record
