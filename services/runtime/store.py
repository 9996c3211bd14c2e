"""Match state in Redis: one hash per match, its history, atomic commits.

Every write is a compare-and-set on the match's ``rev`` counter inside one Lua script,
which also appends the write's events to the match's history and records the request id.
So a move is committed whole or not at all, and two replicas racing on one match cannot
both commit against the same revision.

History (docs/storage.md): each commit's events are one element of the match's ``tail``
list; once the tail is long, its oldest ``CHUNK`` elements move, zlib-compressed, into one
element of the ``archive`` list, and every ``MERGE`` such chunks after the first become one.
The commit script hands those elements (and the chunks due for merging) back in its reply
and the replica's next commit on the match brings the compressed chunk, so compaction
costs no round trip of its own. Request ids are 12-byte records (a digest, the version)
in one string per match, which keeps the match's last ``REQUEST_WINDOW`` of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import redis.asyncio as aioredis
import structlog
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError

from services.runtime import keys, metrics
from services.runtime.due import wake_lua
from services.runtime.event_packing import packing_for
from services.runtime.history import KEEP_RECENT, HistoryReads, RecordedAnswer, StoredCommit, StoredEvent
from services.runtime.history_chunks import merge_chunks, pack_chunk
from services.runtime.outbox import Notices, Outbox, mark_of
from services.runtime.record import MatchRecord
from services.runtime.redis_client import NOW_MS_LUA, IdleClosingPool, RedisClient, text

log = structlog.get_logger("store")

# Records and history elements are MessagePack: smaller than JSON (no quoted keys, no
# separators; ~0.65 of the bytes) and faster to make and read.
_pack = msgspec.msgpack.Encoder().encode
_json = msgspec.json.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode

# Commits per archived chunk (the latest KEEP_RECENT stay in the tail).
CHUNK = 16
# Chunks after the first that one archive element merges (CHUNK * MERGE commits): one more
# hand-off, once MERGE - 1 chunks of one hand-off each end the archive, carries them too.
MERGE = 8
# A request record: an 8-byte digest of (seat, request id), the version, 4 bytes big-endian.
DIGEST_BYTES = 8
RECORD_BYTES = DIGEST_BYTES + 4
# The request records a match keeps: its last this many moves' (all seats together), so a
# retry is recognised within that many later moves. Kept whole, the records grew 12 bytes
# a move for as long as a match lasted, and every commit read and rewrote them all.
REQUEST_WINDOW = 64
# Chunks compressed from a commit's reply, waiting for this replica's next commit on their
# match; a replica holds at most this many (the oldest is dropped: any commit hands it out again).
MAX_PENDING_CHUNKS = 10_000


def request_digest(seat: int, request_id: str) -> bytes:
    """The key a client's request id is recorded under (per seat)."""
    return hashlib.blake2b(f"{seat}:{request_id}".encode(), digest_size=DIGEST_BYTES).digest()


# Searches the request records (a string) for a digest: the version it was answered at,
# or false. Records are fixed-size, so a hit counts only at a record's start.
_FIND_REQUEST = """
local function find_request(records, digest)
  if not records then return false end
  local at = 1
  while true do
    local i = string.find(records, digest, at, true)
    if not i then return false end
    if (i - 1) % RECORD == 0 then return (struct.unpack('>I4', records, i + DIGEST)) end
    at = i + 1
  end
end
""".replace("RECORD", str(RECORD_BYTES)).replace("DIGEST", str(DIGEST_BYTES))

# KEYS: match hash, tail, archive, request records, notify channel (same hash tag), and
#       the per-game move feed (another slot: given on a single Redis only).
# ARGV: 1 expected rev, 2 new doc, 3 ttl seconds, 4 request digest ('' = none),
#       5 new version, 6 tail element ('' = no events), 7 last event id ('' = none),
#       8 feed maxlen, 9 feed entry (JSON list of field, value pairs; '' = none),
#       10 archived chunk ('' = none), 11 the tail's first element it was made from,
#       12 the match's due time to wake its due-set entry with ('' = none; one Redis only:
#       the due set is then the last key), 13 the match id (the due set's member),
#       14 how many of the archive's last elements the chunk replaces (merged into it),
#       15 the commit's activity notices ('' = none; services/runtime/outbox.py), kept in the
#       match's outbox until the committer has told the players, 16 the outbox's index in
#       KEYS, 17 the activity stream's cap, or 0 on a cluster (the stream is in another slot,
#       appended after the commit); on one Redis the stream and the game's outbox marks follow
#       the outbox in KEYS, and the notices go into the stream too, marked with 18 the mark.
# Returns {'ok', new rev[, the tail's oldest CHUNK elements, the archive's first chunk
# (false: none yet)[, its last MERGE - 1 elements, to merge] when they are due for the
# archive]}, {'conflict', rev} or {'duplicate', version}.
# The archive changes only with the tail's trim, in this script: a tail that still starts
# with the elements handed out means an archive as it was when they were.
# The PUBLISH (the stream id of the write's last event) wakes the watch hubs that have not
# seen that far; a hub that misses it (reconnecting) re-reads the history, which stays the
# source of truth.
_COMMIT = (
    _FIND_REQUEST
    + """
local records = false
if ARGV[4] ~= '' then
  records = redis.call('GET', KEYS[4])
  local version = find_request(records, ARGV[4])
  if version then return {'duplicate', tostring(version)} end
end
local rev = redis.call('HGET', KEYS[1], 'rev')
if rev ~= ARGV[1] then return {'conflict', rev or ''} end
local new_rev = tonumber(rev) + 1
redis.call('HSET', KEYS[1], 'rev', new_rev, 'doc', ARGV[2])
if ARGV[6] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[6]) end
-- SET, not APPEND: APPEND's string would keep up to as much room again for growth.
if ARGV[4] ~= '' then
  local kept = (records or '') .. ARGV[4] .. struct.pack('>I4', tonumber(ARGV[5]))
  if #kept > WINDOW_BYTES then kept = string.sub(kept, -WINDOW_BYTES) end
  redis.call('SET', KEYS[4], kept)
end
if ARGV[10] ~= '' and redis.call('LINDEX', KEYS[2], 0) == ARGV[11] then
  local merged = tonumber(ARGV[14])
  if merged > 0 then redis.call('LTRIM', KEYS[3], 0, -merged - 1) end
  redis.call('RPUSH', KEYS[3], ARGV[10])
  redis.call('LTRIM', KEYS[2], CHUNK, -1)
end
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
if ARGV[7] ~= '' then redis.call('PUBLISH', KEYS[5], ARGV[7]) end
if ARGV[9] ~= '' and KEYS[6] then
  redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[8], '*', unpack(cjson.decode(ARGV[9])))
end
if ARGV[15] ~= '' then
  local at = tonumber(ARGV[16])
  redis.call('RPUSH', KEYS[at], ARGV[15])
  redis.call('EXPIRE', KEYS[at], ARGV[3])
  if ARGV[17] ~= '0' then
    for _, fields in ipairs(cjson.decode(ARGV[15])) do
      redis.call('XADD', KEYS[at + 1], 'MAXLEN', '~', ARGV[17], '*', unpack(fields))
    end
    MARK_TIME
    redis.call('ZADD', KEYS[at + 2], 'NX', now, ARGV[18])
  end
end
if ARGV[12] ~= '' then
WAKE
end
if redis.call('LLEN', KEYS[2]) >= CHUNK + KEEP then
  local first_chunk = redis.call('LINDEX', KEYS[3], 0)
  local oldest = redis.call('LRANGE', KEYS[2], 0, CHUNK - 1)
  -- Merged chunks come before unmerged ones: the one at -(MERGE - 1) tells for them all
  -- (an FLEVEL below 3 in its zlib header: services/runtime/history_chunks.py).
  if redis.call('LLEN', KEYS[3]) >= MERGE_AT then
    local from = redis.call('LINDEX', KEYS[3], 1 - MERGE_AT)
    if string.byte(from, 2) < 0xC0 then
      return {'ok', tostring(new_rev), oldest, first_chunk, redis.call('LRANGE', KEYS[3], 1 - MERGE_AT, -1)}
    end
  end
  return {'ok', tostring(new_rev), oldest, first_chunk}
end
return {'ok', tostring(new_rev)}
""".replace("CHUNK", str(CHUNK))
    .replace("MERGE_AT", str(MERGE))
    .replace("KEEP", str(KEEP_RECENT))
    .replace("WINDOW_BYTES", str(REQUEST_WINDOW * RECORD_BYTES))
    .replace("WAKE", wake_lua("KEYS[#KEYS]", "ARGV[13]", "ARGV[12]"))
    .replace("MARK_TIME", NOW_MS_LUA)
)

# KEYS: match hash, request records. ARGV: request digest. Returns rev, doc and the
# version the request was answered at (false: none).
_LOAD_FOR_REQUEST = (
    _FIND_REQUEST
    + """
local found = find_request(redis.call('GET', KEYS[2]), ARGV[1])
local rev, doc = unpack(redis.call('HMGET', KEYS[1], 'rev', 'doc'))
return {rev, doc, found}
"""
)


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
    # A duplicate: the version the request was answered at.
    previous_version: int = 0


class MatchStore(HistoryReads):
    """The matches of one game (``game``: its short name, which says how its events are
    stored)."""

    def __init__(self, client: RedisClient, game: str) -> None:
        self.redis = client
        self.packing = packing_for(game)
        self._commit = client.register_script(_COMMIT)
        self._load_for_request = client.register_script(_LOAD_FOR_REQUEST)
        # One Redis: the feed entry goes in the commit script (one round trip). A cluster
        # keeps the feed in another slot, so it is appended right after the commit.
        self._feed_in_commit = not isinstance(client, aioredis.RedisCluster)
        # The same for waking the match's due-set entry (services/runtime/due.py).
        self.wakes_in_commit = self._feed_in_commit
        # Where a commit's activity notices go: the stream (one Redis) or the match's outbox.
        self.outbox = Outbox(client, game)
        pool = getattr(client, "connection_pool", None)
        self._quick: Callable[..., Awaitable[Any]] | None = (
            pool.quick if isinstance(pool, IdleClosingPool) else None
        )
        # match id -> (the tail's first element the chunk was made from, the compressed chunk,
        # how many of the archive's last elements it replaces).
        self._pending: OrderedDict[str, tuple[bytes, bytes, int]] = OrderedDict()

    async def _run_commit(self, script_keys: list[str], argv: list[Any]) -> Any:
        """The commit script: on one Redis by the pool's quick lane (the hot path), else, and
        after a lost connection or an unloaded script, through redis-py's Script (it retries
        a lost connection and loads the script; a commit is safe to send again: its request
        digest answers a repeat as a duplicate)."""
        if self._quick is not None:
            started = time.perf_counter()
            try:
                result = await self._quick("EVALSHA", self._commit.sha, len(script_keys), *script_keys, *argv)
            except (NoScriptError, RedisConnectionError):
                pass
            else:
                metrics.redis_command_seconds("EVALSHA", time.perf_counter() - started)
                return result
        return await self._commit(keys=script_keys, args=argv)

    async def create(self, record: MatchRecord, ttl_s: int) -> None:
        key = keys.match(record.match_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"rev": 0, "doc": record.encode()})
            pipe.expire(key, ttl_s)
            await pipe.execute()

    async def now_ms(self) -> int:
        """Redis's clock in ms (turn deadlines are set and compared on it): by the quick lane
        on one Redis, as a move's commit goes."""
        reply = None
        if self._quick is not None:
            with contextlib.suppress(RedisConnectionError):
                reply = await self._quick("TIME")
        seconds, micros = reply if reply is not None else await self.redis.time()
        return int(seconds) * 1000 + int(micros) // 1000

    async def rev(self, match_id: str) -> int | None:
        """The match's current rev (None: no such match): one small field, no document; by
        the quick lane on one Redis (every read of a cached match asks it: a watch's table
        after each commit, GetView, ListLegalMoves), a read being safe to send again."""
        key = keys.match(match_id)
        if self._quick is not None:
            with contextlib.suppress(RedisConnectionError):
                rev = await self._quick("HGET", key, "rev")
                return None if rev is None else int(rev)
        rev = await self.redis.hget(key, "rev")
        return None if rev is None else int(rev)

    async def load(self, match_id: str) -> MatchRecord | None:
        rev, doc = await self.redis.hmget(keys.match(match_id), ["rev", "doc"])
        if doc is None or rev is None:
            return None
        return MatchRecord.decode(doc, int(rev))

    async def load_for_request(self, match_id: str, digest: bytes) -> tuple[MatchRecord | None, int | None]:
        """The match and the version its request ``digest`` was answered at (None: not
        recorded), in one round trip."""
        script_keys = [keys.match(match_id), keys.requests(match_id)]
        rev, doc, found = await self._load_for_request(keys=script_keys, args=[digest])
        record = None if doc is None or rev is None else MatchRecord.decode(doc, int(rev))
        return record, None if found is None else int(found)

    async def commit(
        self,
        record: MatchRecord,
        events: list[StoredEvent],
        ttl_s: int,
        request: bytes = b"",
        answer: RecordedAnswer | None = None,
        feed: FeedEntry | None = None,
        wake_due_ms: int | None = None,
        notices: Notices | None = None,
    ) -> CommitResult:
        """Write ``record`` if nobody wrote since it was loaded (its ``rev``), with
        ``events`` (one version's, in order), the ``request`` digest and the ``answer`` a
        retry of it gets; once it is written, append ``feed`` to its per-game feed. With
        ``wake_due_ms`` (only where ``wakes_in_commit``), the match's entry in its game's
        due set is woken with that time in the same script. ``notices`` go in the same
        script too: into the activity stream and, marked, the match's outbox, or on a cluster
        into the match's outbox, marked first (services/runtime/outbox.py; the committer
        delivers them and tells the players after, then clears the outbox and the mark)."""
        match_id = record.match_id
        in_commit = feed is not None and self._feed_in_commit
        feed_fields = [str(v) for pair in feed.fields.items() for v in pair] if feed is not None else []
        first, chunk, merged = self._pending.pop(match_id, (b"", b"", 0))
        argv: list[Any] = [
            record.rev,
            record.encode(),
            ttl_s,
            request,
            record.version,
            StoredCommit.of(events, answer, self.packing) if events else "",
            events[-1].stream_id if events else "",
            feed.maxlen if feed is not None else 0,
            _json(feed_fields) if in_commit else b"",
            chunk,
            first,
            "" if wake_due_ms is None else wake_due_ms,
            match_id,
            merged,
        ]
        script_keys = [
            keys.match(match_id),
            keys.tail(match_id),
            keys.archive(match_id),
            keys.requests(match_id),
            keys.notify(match_id),
        ]
        if in_commit:
            assert feed is not None
            script_keys.append(feed.key)
        if notices is None:
            argv += ["", 0, 0, ""]
        else:
            script_keys.append(keys.outbox(match_id))
            argv += [notices.payload, len(script_keys)]
            if self.outbox.in_commit:
                script_keys += [keys.activity(notices.game), keys.outbox_marks(notices.game)]
                argv += [notices.maxlen, mark_of(match_id, record.rev)]
            else:
                await self.outbox.mark(match_id, record.rev)
                argv += [0, ""]
        if wake_due_ms is not None:
            assert self.wakes_in_commit, "the due set is in another slot: wake it after the commit"
            script_keys.append(keys.due(record.game))
        result = await self._run_commit(script_keys, argv)
        outcome, value = text(result[0]), text(result[1])
        if outcome == "ok":
            if len(result) > 2:
                self._hold(
                    match_id,
                    record.game,
                    list(result[2]),
                    result[3] if len(result) > 3 else None,
                    list(result[4]) if len(result) > 4 else [],
                )
            if feed is not None and not in_commit:
                await self._append(feed, record.version)
            return CommitResult("ok", rev=int(value))
        if outcome == "duplicate":
            return CommitResult("duplicate", previous_version=int(value))
        if chunk:
            self._pending.setdefault(match_id, (first, chunk, merged))  # for the attempt after this one
        return CommitResult("conflict")

    def _hold(
        self,
        match_id: str,
        game: str,
        elements: list[bytes],
        first_chunk: bytes | None,
        to_merge: list[bytes],
    ) -> None:
        """Compress the tail elements a commit handed out (with the archive elements it
        handed out to merge, if any); the next commit takes them in (only if the tail still
        starts with them, so the archive is still as it was)."""
        if to_merge and first_chunk is not None:
            chunk = merge_chunks(to_merge, elements, first_chunk, game)
            self._pending[match_id] = (elements[0], chunk, len(to_merge))
        else:
            self._pending[match_id] = (elements[0], pack_chunk(elements, first_chunk, game), 0)
        self._pending.move_to_end(match_id)
        while len(self._pending) > MAX_PENDING_CHUNKS:
            self._pending.popitem(last=False)

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
