"""Seats over a match's life: bots seated at creation or added, leaving, rejoining with the
seat's rejoin key, and ending a match as abandoned.

Each operation loads the match, decides by the checks every operation follows, in their
order (services/runtime/checks.py), and commits through ``MatchService.commit_events`` (the
same compare-and-set as a move), deciding again when another write won the race.
"""

from __future__ import annotations

from typing import Any

import structlog

from services.engine import Event
from services.runtime import checks
from services.runtime.errors import InvalidArgument, Unauthenticated
from services.runtime.matches import ABANDONED, WAITING, Joined, MatchFacts, MatchService
from services.runtime.record import MatchRecord
from services.runtime.tables import POLICY_ABANDON, bot_level

log = structlog.get_logger("lifecycle")


def abandon(service: MatchService, record: MatchRecord, reason: str) -> list[Event]:
    """End ``record`` as ABANDONED: its events (the reason, then the usual end of match)."""
    state = service.decode_state(record.state)
    record.status = ABANDONED
    ended = {"status": ABANDONED, "scores": list(state.scores()), "winners": []}
    return [Event({"match_abandoned": {"reason": reason}}), Event({"match_ended": ended})]


def left_in_progress(service: MatchService, record: MatchRecord, seat: int, reason: str) -> list[Event]:
    """``seat``'s player is gone from ``record``, a match in progress (it left, or stayed
    disconnected past its reconnection grace): ``on_leave`` applies, a bot takes the seat or
    the match ends ABANDONED; either way the player's token and rejoin key stop working."""
    seats = service.seats(record)
    events = [Event({"player_left": {"seat": seat, "seat_freed": False}})]
    if seats.options.on_leave == POLICY_ABANDON:
        seats.revoke(seat)
        return events + abandon(service, record, reason)
    level = seats.options.bot_level
    seats.seat_bot(seat, level)
    return [*events, Event({"bot_seated": {"seat": seat, "level": level, "reason": reason}})]


class Lifecycle:
    def __init__(self, service: MatchService) -> None:
        self.service = service

    async def create_match(
        self, players: int, seed: int | None, options: dict[str, Any], table: dict[str, Any]
    ) -> MatchFacts:
        facts = await self.service.create_match(players, seed, options, table)
        for seat in facts.table["bot_seats"]:
            facts = await self.add_bot(facts.match_id, seat, facts.table["bot_level"])
        return facts

    async def add_bot(self, match_id: str, seat: int | None, level: str) -> MatchFacts:
        level = bot_level(level, "level")
        while True:
            record = await self.service.load_record(match_id)
            checks.waiting(self.service.status_of(record))
            if seat is not None:
                checks.seat_in_range(seat, record.players)
            chosen = record.seats.index(None) if seat is None else seat
            checks.seat_free(record.seats, chosen)
            self.service.seats(record).seat_bot(chosen, level)
            seated = Event({"bot_seated": {"seat": chosen, "level": level, "reason": "added"}})
            events = self.service.seat_taken(record, chosen, f"bot-{chosen}", (seated,))
            if await self.service.commit_events(record, events):
                log.info("bot_added", match_id=match_id, seat=chosen, level=level)
                return self.service.facts(record)

    async def leave(self, match_id: str, token: str | None) -> MatchFacts:
        grant = self.service.grant(token, match_id)
        seat = grant.seat
        while True:
            record = await self.service.load_record(match_id)
            seats = self.service.seats(record)
            seats.check_current(grant)
            status = self.service.status_of(record)
            checks.live(status)
            if status == WAITING:
                record.seats[seat] = None
                seats.free(seat)
                events = [Event({"player_left": {"seat": seat, "seat_freed": True}})]
            else:
                events = left_in_progress(self.service, record, seat, "left")
            if await self.service.commit_events(record, events):
                log.info("player_left", status=record.status)
                return self.service.facts(record)

    async def rejoin(self, match_id: str, rejoin_key: str) -> Joined:
        if not rejoin_key:
            raise InvalidArgument("rejoin_key: required (from JoinMatch)", field="rejoin_key")
        checks.match_id_given(match_id)
        settings = self.service.settings
        while True:
            record = await self.service.load_record(match_id)
            seats = self.service.seats(record)
            seat = seats.seat_of_rejoin_key(settings.token_secret, rejoin_key)
            if seat is None:
                raise Unauthenticated(
                    "rejoin_key: no seat of this match holds this key (wrong key, or the seat was left)",
                    reason="bad_rejoin_key",
                )
            checks.live(self.service.status_of(record))
            seats.renew_token(seat, self.service.now_ms(), settings.token_ttl_s)
            if await self.service.commit_events(record, [Event({"player_rejoined": {"seat": seat}})]):
                structlog.contextvars.bind_contextvars(seat=seat)
                log.info("player_rejoined")
                return self.service.joined(record, seat)
