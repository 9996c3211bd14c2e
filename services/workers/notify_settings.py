"""A player's webhook settings: quiet hours, and "notify me" per match (on unless muted).

UpdateNotificationSettings writes them here; the notifier reads them for every notice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from services.runtime import keys
from services.runtime.errors import InvalidArgument
from services.runtime.redis_client import RedisClient, text

MINUTES_A_DAY = 24 * 60
# A player's muted matches beyond this many: the oldest are forgotten (notify me on again).
MAX_MUTED = 1000
MAX_MATCH_IDS = 100


@dataclass(frozen=True)
class QuietHours:
    start_minute: int = 0
    end_minute: int = 0
    time_zone: str = ""

    def check(self) -> None:
        for name, value in (("start_minute", self.start_minute), ("end_minute", self.end_minute)):
            if not 0 <= value < MINUTES_A_DAY:
                raise InvalidArgument(
                    f"quiet_hours.{name}: minutes after midnight, 0 to {MINUTES_A_DAY - 1}",
                    field=f"quiet_hours.{name}",
                )
        try:
            self.zone()
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidArgument(
                f"quiet_hours.time_zone: {self.time_zone!r} is not an IANA time zone (e.g. Europe/Warsaw)",
                field="quiet_hours.time_zone",
            ) from None

    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone or "UTC")

    def covers(self, unix_s: float) -> bool:
        """True inside the quiet hours (start inclusive, end exclusive; they may span midnight)."""
        if self.start_minute == self.end_minute:
            return False
        local = datetime.fromtimestamp(unix_s, self.zone())
        minute = local.hour * 60 + local.minute
        if self.start_minute < self.end_minute:
            return self.start_minute <= minute < self.end_minute
        return minute >= self.start_minute or minute < self.end_minute


async def quiet_hours(redis: RedisClient, player: str) -> QuietHours:
    start, end, zone = await redis.hmget(keys.notify_settings(player), ["start", "end", "zone"])
    if start is None or end is None:
        return QuietHours()
    return QuietHours(int(start), int(end), text(zone or b""))


async def update(
    redis: RedisClient,
    player: str,
    quiet: QuietHours | None,
    notify_matches: list[str],
    mute_matches: list[str],
) -> QuietHours:
    """UpdateNotificationSettings: quiet hours replaced when given, matches switched on and
    off (a match in both lists is refused); answers the quiet hours now in force."""
    for name, ids in (("notify_matches", notify_matches), ("mute_matches", mute_matches)):
        if len(ids) > MAX_MATCH_IDS:
            raise InvalidArgument(f"{name}: at most {MAX_MATCH_IDS} match ids a call", field=name)
    both = sorted(set(notify_matches) & set(mute_matches))
    if both:
        raise InvalidArgument(f"mute_matches: {both[0]!r} is in notify_matches too", field="mute_matches")
    if quiet is not None:
        quiet.check()
    async with redis.pipeline(transaction=True) as pipe:
        if quiet is not None:
            pipe.hset(
                keys.notify_settings(player),
                mapping={"start": quiet.start_minute, "end": quiet.end_minute, "zone": quiet.time_zone},
            )
        if notify_matches:
            pipe.zrem(keys.muted_matches(player), *notify_matches)
        if mute_matches:
            now = time.time()
            pipe.zadd(keys.muted_matches(player), dict.fromkeys(mute_matches, now))
            pipe.zremrangebyrank(keys.muted_matches(player), 0, -MAX_MUTED - 1)
        await pipe.execute()
    return await quiet_hours(redis, player)


async def is_muted(redis: RedisClient, player: str, match_id: str) -> bool:
    return await redis.zscore(keys.muted_matches(player), match_id) is not None


async def holds_back(redis: RedisClient, player: str, match_id: str, unix_s: float) -> str:
    """Why a notice to ``player`` about ``match_id`` is not sent now: "muted" (notify me off
    for the match), "quiet" (inside their quiet hours), or "" (send it). One round trip."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zscore(keys.muted_matches(player), match_id)
        pipe.hmget(keys.notify_settings(player), ["start", "end", "zone"])
        muted, (start, end, zone) = await pipe.execute()
    if muted is not None:
        return "muted"
    if (
        start is not None
        and end is not None
        and QuietHours(int(start), int(end), text(zone or b"")).covers(unix_s)
    ):
        return "quiet"
    return ""


async def forget(redis: RedisClient, player: str) -> None:
    """A deleted player's settings."""
    await redis.delete(keys.notify_settings(player), keys.muted_matches(player))
