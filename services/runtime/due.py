"""The due set of one game: when the server next has something to do for each live match.

Member a match id, score a time in Unix ms on Redis's clock (a turn deadline, a bot's
move, the idle reaper). Every score is a hint checked against the match record when used:
one that is too early costs the scheduler a look that finds nothing due; one that is too
late would leave a bot or a timer silent, so every writer only ever lowers a score, except
the scheduler settling an entry it holds.

A scheduler *claims* a due entry by moving its score to a lease (now + lease ms), which
hides it from the other replicas until then, and *settles* it when done: the next due
time computed from the record it holds, or removed once the match is over. Lease scores
end in ``.5`` (every due time is a whole ms), so a writer can tell a held entry from a
waiting one.

A commit that lands while an entry is held may have been missed by the holder (which read
the match before it): after every commit the committer *wakes* the entry. A waiting entry
is lowered to the commit's due time; a held one is replaced by it, so the holder's settle,
which only applies while its lease is still there, cannot put back a time computed from the
older record.
"""

from __future__ import annotations

from typing import Any

from services.runtime import keys
from services.runtime.redis_client import NOW_MS_LUA, text

# KEYS: the due set. ARGV: lease ms, most entries to claim.
# Returns Redis's now (ms), then the claimed ids, then the lease score (as sent back to settle).
_CLAIM = (
    NOW_MS_LUA
    + """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local lease = string.format('%.1f', now + tonumber(ARGV[1]) + 0.5)
local out = {tostring(now)}
for _, id in ipairs(due) do
  redis.call('ZADD', KEYS[1], lease, id)
  out[#out + 1] = id
end
out[#out + 1] = lease
return out
"""
)

# KEYS: the due set. ARGV: match id, the lease score, next due ms ('' = remove).
_SETTLE = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
if ARGV[3] == '' then redis.call('ZREM', KEYS[1], ARGV[1])
else redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
return 1
"""


def wake_lua(due_set: str, match_id: str, due_ms: str) -> str:
    """The wake in Lua, on the Lua expressions given: a held entry (its lease ends in .5)
    replaced, a waiting one lowered. The commit script runs it too, on one Redis, where
    the due set may share a script with the match's keys."""
    return f"""
local score = redis.call('ZSCORE', {due_set}, {match_id})
if score and tonumber(score) % 1 ~= 0 then
  redis.call('ZADD', {due_set}, {due_ms}, {match_id})
else
  redis.call('ZADD', {due_set}, 'LT', {due_ms}, {match_id})
end
"""


# KEYS: the due set. ARGV: match id, due ms.
_WAKE = wake_lua("KEYS[1]", "ARGV[1]", "ARGV[2]") + "return 1\n"


class DueSet:
    def __init__(self, redis: Any, game: str) -> None:
        self.redis = redis
        self.key = keys.due(game)
        self._claim = redis.register_script(_CLAIM)
        self._settle = redis.register_script(_SETTLE)
        self._wake = redis.register_script(_WAKE)

    async def add(self, match_id: str, due_ms: int) -> None:
        """A new match's entry."""
        await self.redis.zadd(self.key, {match_id: due_ms})

    async def lower(self, match_id: str, due_ms: int) -> None:
        """Before a commit: never later than ``due_ms`` (if the commit fails, a look too early)."""
        await self.redis.zadd(self.key, {match_id: due_ms}, lt=True)

    async def wake(self, match_id: str, due_ms: int) -> None:
        """After a commit whose record is next due at ``due_ms``."""
        await self._wake(keys=[self.key], args=[match_id, due_ms])

    async def claim(self, lease_ms: int, batch: int) -> tuple[list[str], str]:
        """Hold every due entry (up to ``batch``): their ids and the lease score."""
        reply = await self._claim(keys=[self.key], args=[lease_ms, batch])
        return [text(v) for v in reply[1:-1]], text(reply[-1])

    async def settle(self, match_id: str, lease: str, next_due: str) -> bool:
        """Give back a held entry: due at ``next_due`` ms, or removed when ''; only while
        ``lease`` is still its score (a wake meanwhile has the last word)."""
        return bool(await self._settle(keys=[self.key], args=[match_id, lease, next_due]))

    async def score(self, match_id: str) -> float | None:
        value = await self.redis.zscore(self.key, match_id)
        return None if value is None else float(value)
