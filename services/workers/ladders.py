"""Ratings in Redis: each ladder's players, leaderboard, history and counted matches.

A match is counted once: one script checks the match's marker and that no player's
rating moved since it was read, then writes every player's rating, the leaderboard,
the history and the marker together (all keys of a ladder share one hash tag). A worker
killed before the script leaves nothing written (the entry is read again); one killed
after it finds the marker and only acknowledges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.runtime import keys
from services.runtime.redis_client import RedisClient, text
from services.workers.ratings import Skill

# How long a match's "counted" marker is kept: far longer than an entry can stay pending.
MARKER_TTL_S = 30 * 24 * 3600
HISTORY_KEPT = 1000

APPLIED, ALREADY, MOVED = 1, 0, -1

# KEYS: marker, board, then per player its hash and history. ARGV: match id, marker ttl,
# history kept, then per player: id, matches read, mu, sigma, ordinal, history record.
_APPLY = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local n = (#ARGV - 3) / 6
for i = 0, n - 1 do
  local read = redis.call('HGET', KEYS[3 + 2 * i], 'matches') or '0'
  if read ~= ARGV[5 + 6 * i] then return -1 end
end
for i = 0, n - 1 do
  local a, player, history = 4 + 6 * i, KEYS[3 + 2 * i], KEYS[4 + 2 * i]
  redis.call('HSET', player, 'mu', ARGV[a + 2], 'sigma', ARGV[a + 3],
             'matches', tonumber(ARGV[a + 1]) + 1)
  redis.call('ZADD', KEYS[2], ARGV[a + 4], ARGV[a])
  redis.call('LPUSH', history, ARGV[a + 5])
  redis.call('LTRIM', history, 0, tonumber(ARGV[3]) - 1)
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
"""


@dataclass(frozen=True)
class PlayerRating:
    player_id: str
    ladder: str
    skill: Skill
    matches: int
    # 1-based place on the leaderboard; 0 = not on it.
    rank: int


@dataclass(frozen=True)
class Change:
    match_id: str
    skill: Skill
    unix_ms: int


class Ladders:
    def __init__(self, redis: RedisClient) -> None:
        self.redis = redis
        self._apply = redis.register_script(_APPLY)

    async def read(self, ladder: str, players: list[str]) -> tuple[dict[str, Skill], dict[str, int]]:
        """Each player's skill (rated players only) and matches counted (0 for the unrated)."""
        skills, counted = {}, {}
        for player in players:
            mu, sigma, matches = await self.redis.hmget(
                keys.ladder(ladder, f"player:{player}"), ["mu", "sigma", "matches"]
            )
            counted[player] = int(matches or 0)
            if mu is not None and sigma is not None:
                skills[player] = Skill(float(mu), float(sigma))
        return skills, counted

    async def apply(
        self,
        ladder: str,
        match_id: str,
        counted: dict[str, int],
        updated: dict[str, Skill],
        at_ms: int,
    ) -> int:
        """APPLIED, ALREADY (the match was counted before) or MOVED (a player's rating moved
        since ``counted`` was read: read again and retry)."""
        script_keys = [keys.ladder(ladder, f"rated:{match_id}"), keys.ladder(ladder, "board")]
        argv: list[Any] = [match_id, MARKER_TTL_S, HISTORY_KEPT]
        for player, skill in updated.items():
            script_keys += [keys.ladder(ladder, f"player:{player}"), keys.ladder(ladder, f"history:{player}")]
            record = json.dumps({"match_id": match_id, "mu": skill.mu, "sigma": skill.sigma, "ms": at_ms})
            # repr: the exact float, so what is read back rates the next match bit for bit.
            argv += [player, counted.get(player, 0), repr(skill.mu), repr(skill.sigma)]
            argv += [repr(skill.ordinal), record]
        return int(await self._apply(keys=script_keys, args=argv))

    async def mark(self, ladder: str, match_id: str) -> None:
        """Record a match that moves nobody as counted (so a re-read of it does nothing)."""
        await self.redis.set(keys.ladder(ladder, f"rated:{match_id}"), match_id, ex=MARKER_TTL_S)

    async def rating(self, ladder: str, player: str) -> PlayerRating:
        """The player's rating, the model's starting one (0 matches, rank 0) if never rated."""
        mu, sigma, matches = await self.redis.hmget(
            keys.ladder(ladder, f"player:{player}"), ["mu", "sigma", "matches"]
        )
        if mu is None or sigma is None:
            return PlayerRating(player, ladder, Skill(), 0, 0)
        place: Any = await self.redis.zrevrank(keys.ladder(ladder, "board"), player)
        rank = 0 if place is None else int(place) + 1
        return PlayerRating(player, ladder, Skill(float(mu), float(sigma)), int(matches or 0), rank)

    async def _ratings_at(self, ladder: str, first: int, last: int) -> list[PlayerRating]:
        members = await self.redis.zrevrange(keys.ladder(ladder, "board"), first, last)
        found = []
        for place, member in enumerate(members, start=first + 1):
            rated = await self.rating(ladder, text(member))
            found.append(PlayerRating(rated.player_id, ladder, rated.skill, rated.matches, place))
        return found

    async def top(self, ladder: str, count: int) -> list[PlayerRating]:
        return await self._ratings_at(ladder, 0, count - 1)

    async def around(self, ladder: str, player: str, each_side: int) -> list[PlayerRating]:
        """The player and up to ``each_side`` players above and below; [] if not on the board."""
        place: Any = await self.redis.zrevrank(keys.ladder(ladder, "board"), player)
        if place is None:
            return []
        return await self._ratings_at(ladder, max(int(place) - each_side, 0), int(place) + each_side)

    async def history(self, ladder: str, player: str, offset: int, count: int) -> list[Change]:
        """The player's rating changes, newest first."""
        raw = await self.redis.lrange(keys.ladder(ladder, f"history:{player}"), offset, offset + count - 1)
        changes = []
        for item in raw:
            record = json.loads(item)
            changes.append(Change(record["match_id"], Skill(record["mu"], record["sigma"]), record["ms"]))
        return changes

    async def forget(self, ladders: list[str], player: str) -> None:
        """A deleted player's ratings, places and history, on every ladder."""
        for ladder in ladders:
            await self.redis.zrem(keys.ladder(ladder, "board"), player)
            await self.redis.delete(
                keys.ladder(ladder, f"player:{player}"), keys.ladder(ladder, f"history:{player}")
            )
