"""The commit path every change of a match takes: a player's move, a join, a leave, a rejoin,
a bot seated, a timed-out seat's move, an abandonment. Each commits the record its caller
changed with its events by one compare-and-set (services/runtime/store.py), sets the turn
clocks and wakes the scheduler, hands the events to this replica's watchers and tells the
seats' players; a commit that lost the race writes nothing and its caller decides again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import msgspec
import structlog

from services.engine import Event
from services.runtime import keys, metrics
from services.runtime.activity import Pending, notices_of
from services.runtime.history import StoredEvent
from services.runtime.outcomes import ABANDONED, FINISHED
from services.runtime.reading import MatchReader, active_seats
from services.runtime.record import MatchRecord, encode_state
from services.runtime.store import FeedEntry

log = structlog.get_logger("matches")
_json = msgspec.json.Encoder().encode


class MatchCommits(MatchReader):
    """The one commit path, shared by every change of a match (the base of ``MatchService``)."""

    async def commit_events(self, record: MatchRecord, events: list[Event], wake: bool = True) -> bool:
        """Commit ``record`` as its caller changed it (seats, status, table) with ``events``
        appended to the current version: a join, a leave, a rejoin, a bot, an abandonment.
        False when another write won the race (reload and decide again). The scheduler
        passes ``wake=False``: it settles the match's due entry itself."""
        previous = (record.version, record.event_seq)
        stored = [
            StoredEvent(record.version, record.event_seq + i + 1, e.to, e.body) for i, e in enumerate(events)
        ]
        record.event_seq += len(stored)
        record.updated_at = self.clock()
        folded = wake and self.store.wakes_in_commit
        due = await self.set_clocks(record, None, lower=not folded)
        pending = self.players_pending(record, None, stored)
        with self.hub.committing(record.match_id):
            result = await self.store.commit(
                record,
                stored,
                self.ttl(record),
                wake_due_ms=due if folded else None,
                notices=notices_of(pending),
            )
            if result.outcome != "ok":
                return False
            record.rev = result.rev
            self.cache.evict(record.match_id)
            self.hub.committed(previous, stored, record)
        await self.tell_players(pending, record)
        if wake:
            await self.wake(record, due)
        return True

    async def commit_server_move(
        self,
        record: MatchRecord,
        seat: int,
        move: dict[str, Any],
        lead: list[Event],
        timed_out: bool,
        hand_to_bot: str = "",
    ) -> bool:
        """Commit a move the server makes for ``seat`` (a bot's, or a timed-out decision's)
        through the same path as SubmitMove: ``lead`` events first, then the move's; with
        ``hand_to_bot`` a bot of that level plays the seat from then on. False when the
        match moved on meanwhile (a player's move, another replica): nothing was written.
        Only the scheduler calls it, so it does not wake the match's due entry."""
        state = self.decode_state(record.state)
        events = lead + state.apply(seat, move)
        if hand_to_bot:
            events.append(Event({"bot_seated": {"seat": seat, "level": hand_to_bot, "reason": "timeouts"}}))
        previous = (record.version, record.event_seq)
        stored = self.advance(record, state, events)
        await self.set_clocks(record, seat, timed_out, hand_to_bot, state)
        feed = self.feed_entry(record, seat, stored)
        pending = self.players_pending(record, state, stored)
        with self.hub.committing(record.match_id):
            result = await self.store.commit(
                record, stored, self.ttl(record), feed=feed, notices=notices_of(pending)
            )
            if result.outcome != "ok":
                return False
            record.rev = result.rev
            # Not kept: the scheduler goes on changing this record for its next step.
            self.cache.evict(record.match_id)
            self.hub.committed(previous, stored, record)
        await self.tell_players(pending, record)
        metrics.move_committed(self.game.name)
        return True

    def advance(self, record: MatchRecord, state: Any, events: list[Event]) -> list[StoredEvent]:
        """Move ``record`` to the next version holding ``state``; the events to store."""
        record.version += 1
        bodies = [(e.body, e.to) for e in events]
        if state.is_over():
            record.status = FINISHED
            ended = {"status": FINISHED, "scores": list(state.scores()), "winners": list(state.winners())}
            bodies.append(({"match_ended": ended}, None))
        elif record.version >= self.max_moves:
            # A match still going after its game's move cap loops: it ends without a result.
            record.status = ABANDONED
            ended = {"status": ABANDONED, "scores": list(state.scores()), "winners": []}
            bodies += [({"match_abandoned": {"reason": "move_cap"}}, None), ({"match_ended": ended}, None)]
        record.state = encode_state(state)
        record.updated_at = self.clock()
        record.event_seq = len(bodies)
        return [StoredEvent(record.version, i + 1, to, body) for i, (body, to) in enumerate(bodies)]

    async def set_clocks(
        self,
        record: MatchRecord,
        mover: int | None,
        timed_out: bool = False,
        hand_to_bot: str = "",
        state: Any = None,
        lower: bool = True,
    ) -> int | None:
        """Set the turn clocks and bot due times the commit of ``record`` leaves, on Redis's
        clock, and (``lower``) make sure the scheduler looks at the match by the earliest of
        them: its due time (None when nothing but the idle reaper is due). Not ``lower``:
        the commit itself wakes the entry (one Redis: ``MatchStore.wakes_in_commit``)."""
        seats = self.seats(record)
        if hand_to_bot and mover is not None:
            seats.seat_bot(mover, hand_to_bot)
        if not seats.scheduled:
            return None
        # Not the cache's: ``record`` may hold a new state under its old rev here.
        decoded = self.decode_state(record.state) if state is None else state
        active = active_seats(decoded, record.status)
        now_ms = await self.redis_now_ms()
        think_ms = self.settings.bot_think_ms
        seats.after_change(active, None if hand_to_bot else mover, now_ms, think_ms, timed_out)
        due = seats.next_due_ms()
        if due is not None and lower:
            # Before the commit, and only ever earlier (LT): if the commit then fails, the
            # scheduler merely looks too early and finds nothing due.
            await self.due.lower(record.match_id, due)
        return due

    async def wake(self, record: MatchRecord, due: int | None) -> None:
        """After a commit: the scheduler may have read the match just before it (and hold its
        due entry), so the entry is woken with the commit's own due time (on one Redis the
        commit did it already)."""
        if due is None or self.store.wakes_in_commit:
            return
        try:
            await self.due.wake(record.match_id, due)
        except Exception:
            # Committed already; the entry lowered before the commit stands in for this one.
            log.exception("due_wake_failed", version=record.version)

    def players_pending(self, record: MatchRecord, state: Any, stored: list[StoredEvent]) -> Pending | None:
        """Before the commit of ``record`` with ``stored`` (``state``: its new state, None to
        decode it from the record when needed): what it tells the players, with the notices the
        commit writes (services/runtime/activity.py); None when no seat is bound to a player."""
        seats = self.seats(record)
        if not self.activity.concerns(seats):
            return None  # the hot path of most matches: nothing to make
        decoded: Callable[[], Any] = functools.cache(
            lambda: self.decode_state(record.state) if state is None else state
        )
        return self.activity.before_commit(
            seats,
            lambda: active_seats(decoded(), record.status),
            lambda: self.facts(record, decoded()),
            stored,
            self.now_ms(),
        )

    async def tell_players(self, pending: Pending | None, record: MatchRecord) -> None:
        """After a commit of a match with a seat bound to a player (services/runtime/activity.py)."""
        if pending is not None:
            await self.activity.after_commit(pending, record.rev)

    async def tell_players_again(self, record: MatchRecord, entries: list[dict[str, str]]) -> None:
        """Index ``record`` as stored for its bound players and push the notices of ``entries``
        still current: what a committer that died after its commit left to an outbox sweep."""
        players = self.seats(record).players()
        if any(players):
            at_ms = int(record.updated_at * 1000)
            await self.activity.tell_again(self.facts(record), record.rev, players, at_ms, entries)

    def feed_entry(self, record: MatchRecord, seat: int, events: list[StoredEvent]) -> FeedEntry:
        """The move's entry in the per-game feed for downstream consumers (the match's history,
        written by the same commit, is the source of truth). It carries what a spectator may
        see, never the move itself: a sealed bid, a prediction or a deck order is a move, and
        its public events tell only what may be told."""
        public = [e.body for e in events if e.to is None]
        fields = {
            "match_id": record.match_id,
            "version": record.version,
            "seat": seat,
            "events": _json(public).decode(),
        }
        return FeedEntry(keys.game_moves(self.game.name), fields, self.settings.game_stream_maxlen)
