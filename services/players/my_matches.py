"""ListMyMatches and WatchMyTurns, from the per-player indexes the game services write after
their commits (services/runtime/activity.py): reading them touches only the player's keys.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from services.players.turns_hub import TurnsHub
from services.runtime import keys
from services.runtime.activity import MATCH_ENDED, MATCH_STARTED, TIMED_OUT, YOUR_TURN
from services.runtime.errors import InvalidArgument
from services.runtime.matches import FINISHED, IN_PROGRESS, MatchFacts
from services.runtime.redis_client import RedisClient, text
from services.runtime.settings import PlayersSettings

DEFAULT_PAGE = 20
MAX_PAGE = 100
# Index entries one call reads at most while skipping those its filters leave out.
MAX_SCANNED = 1000
_BATCH = 100
OVER = (FINISHED, "ABANDONED")
NOTICES = (YOUR_TURN, MATCH_STARTED, MATCH_ENDED, TIMED_OUT)


@dataclass(frozen=True)
class MyMatch:
    game: str
    facts: MatchFacts
    seat: int
    your_turn: bool
    your_deadline_ms: int
    updated_ms: int


@dataclass(frozen=True)
class TurnNotice:
    notice: str
    match: MyMatch
    notice_id: str


def my_match(summary: dict[str, Any]) -> MyMatch:
    facts = MatchFacts(**summary["match"])
    seat = int(summary["seat"])
    bot = facts.bots[seat] if seat < len(facts.bots) else ""
    your_turn = facts.status == IN_PROGRESS and seat in facts.active_seats and not bot
    deadline = next((c["deadline_unix_ms"] for c in facts.clocks if c["seat"] == seat), 0) if your_turn else 0
    return MyMatch(summary["game"], facts, seat, your_turn, int(deadline), int(summary["updated_ms"]))


def _page_token(score: float, member: str) -> str:
    return f"{int(score)}:{member}"


def _parse_token(token: str) -> tuple[int, str] | None:
    if not token:
        return None
    score, sep, member = token.partition(":")
    if not sep or not score.isdigit() or not member:
        raise InvalidArgument("page_token: not one this server gave", field="page_token")
    return int(score), member


class MyMatches:
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.redis = redis
        self.settings = settings
        self.hub = TurnsHub(redis)

    async def _prune(self, player_id: str, member: str) -> None:
        await self.redis.zrem(keys.player_matches(player_id), member)
        await self.redis.hdel(keys.player_match_facts(player_id), member)

    async def list(
        self, player_id: str, status: str, your_turn_only: bool, page_size: int, page_token: str
    ) -> tuple[list[MyMatch], str]:
        """The player's matches, most recent commit first: a page, and the next page's token."""
        if page_size > MAX_PAGE:
            raise InvalidArgument(f"page_size: at most {MAX_PAGE}", field="page_size")
        size = page_size or DEFAULT_PAGE
        cursor = _parse_token(page_token)
        top: float | str = "+inf" if cursor is None else cursor[0]
        found: list[MyMatch] = []
        scanned = 0
        forget_before_ms = int(time.time() * 1000) - self.settings.finished_listed_s * 1000
        last: tuple[float, str] | None = None
        while scanned < MAX_SCANNED:
            raw_entries: Any = await self.redis.zrevrangebyscore(
                keys.player_matches(player_id), top, "-inf", start=0, num=_BATCH, withscores=True
            )
            entries: list[tuple[str, float]] = [(text(m), float(s)) for m, s in raw_entries]
            if cursor is not None:
                # Same score as the cursor: only those after it in the order (members descending).
                entries = [(m, s) for m, s in entries if int(s) < cursor[0] or m < cursor[1]]
            if not entries:
                return found, ""
            members = [m for m, _ in entries]
            stored = await self.redis.hmget(keys.player_match_facts(player_id), members)
            for (member, score), raw in zip(entries, stored, strict=True):
                scanned += 1
                last = (score, member)
                if raw is None:
                    await self._prune(player_id, member)
                    continue
                match = my_match(json.loads(text(raw).partition("|")[2]))
                if match.facts.status in OVER and match.updated_ms < forget_before_ms:
                    await self._prune(player_id, member)
                    continue
                if status and match.facts.status != status:
                    continue
                if your_turn_only and not match.your_turn:
                    continue
                found.append(match)
                if len(found) == size:
                    return found, _page_token(score, member)
            if last is None:
                break
            cursor = (int(last[0]), last[1])
            top = cursor[0]
        # Scanned as much as one call may: the next page goes on from here.
        return found, _page_token(*last) if last is not None else ""

    async def watch(self, player_id: str, heartbeat_s: float) -> AsyncIterator[TurnNotice | None]:
        """The player's notices as their matches' commits make them; None when it is time for a
        heartbeat. The first None comes once the subscription is in place: a client that then
        lists its matches misses nothing in between."""
        queue = await self.hub.subscribe(player_id)
        try:
            yield None
            while True:
                try:
                    data = await asyncio.wait_for(queue.get(), heartbeat_s)
                except TimeoutError:
                    yield None
                    continue
                told = json.loads(text(data))
                if told["notice"] in NOTICES:
                    yield TurnNotice(told["notice"], my_match(told["summary"]), told["notice_id"])
        finally:
            await asyncio.shield(self.hub.unsubscribe(player_id, queue))
