"""The ratings worker: each FINISHED match_ended entry moves its players' ratings once.

Entries are handled in stream order, one at a time per game, so the ratings are those of
replaying the game's results in the order they were committed.
"""

from __future__ import annotations

import dataclasses

import structlog

from services.runtime.store import MatchStore
from services.workers import worker_metrics
from services.workers.activity import ActivityEntry
from services.workers.consumer import ConsumerSettings
from services.workers.ladders import ALREADY, APPLIED, Ladders
from services.workers.ratings import is_rated, ladder_of, one_round_teams, rate, rated_players

log = structlog.get_logger("ratings")

GROUP = "ratings"
# Another worker moving one of the same players at the same moment: read again, this often.
MAX_RACES = 50


# The game whose single-round matches are rated as teams (its Pair against its Solo).
TEAM_GAME = "more"


class RatingsWorker:
    def __init__(self, ladders: Ladders) -> None:
        self.ladders = ladders
        self._team_game = MatchStore(ladders.redis, TEAM_GAME)

    async def handle(self, entry: ActivityEntry) -> None:
        if not is_rated(entry):
            return
        entry = await self._with_teams(entry)
        ladder = ladder_of(entry)
        players = list(rated_players(entry).values())
        for _ in range(MAX_RACES):
            skills, counted = await self.ladders.read(ladder, players)
            updated = rate(entry, skills)
            if not updated:
                await self.ladders.mark(ladder, entry.match_id)
                return
            outcome = await self.ladders.apply(ladder, entry.match_id, counted, updated, entry.at_ms)
            if outcome == APPLIED:
                worker_metrics.rating_update(ladder)
                log.info("match_rated", ladder=ladder, match_id=entry.match_id, players=len(updated))
                return
            if outcome == ALREADY:
                return
        raise RuntimeError(f"ratings of match {entry.match_id} kept moving under it; left pending")

    async def _with_teams(self, entry: ActivityEntry) -> ActivityEntry:
        """A More match's sides, read from its last commit's round results (the match's
        history; a match already expired from Redis is rated seat by seat)."""
        if entry.game != TEAM_GAME or entry.table.get("teams"):
            return entry
        events = await self._team_game.events_of_version(entry.match_id, entry.version)
        results = [e.body["round_ended"]["result"] for e in events if "round_ended" in e.body]
        teams = one_round_teams(results)
        return dataclasses.replace(entry, table={**entry.table, "teams": teams}) if teams else entry


def consumer_settings(consumer: str, claim_idle_ms: int, claim_every_ms: int) -> ConsumerSettings:
    return ConsumerSettings(
        group=GROUP,
        consumer=consumer,
        concurrency=1,
        claim_idle_ms=claim_idle_ms,
        claim_every_s=claim_every_ms / 1000,
    )
