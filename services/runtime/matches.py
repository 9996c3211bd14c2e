"""The authority: every match operation of one game, checked in a fixed order.

For a move: action (well formed), credentials, match, game over, active seat, move
legality, state version; then apply on a copy and commit atomically. Nothing here
knows about protobuf or gRPC: the servicer translates, ``errors`` maps.
"""

from __future__ import annotations

import contextlib
import functools
import random
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Collection
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

import msgspec
import structlog

from services.catalog import move_cap
from services.engine import Event, GameInfo, MoveError, NotYourTurn, RuleViolation
from services.runtime import auth, keys, metrics
from services.runtime.activity import Activity, Pending, live_matches
from services.runtime.due import DueSet
from services.runtime.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from services.runtime.history import RecordedAnswer, StoredEvent
from services.runtime.player_erasure import refuse_deleted
from services.runtime.record import MatchRecord, StateDecoder, encode_state
from services.runtime.settings import ServiceSettings
from services.runtime.state_cache import StateCache
from services.runtime.store import DIGEST_BYTES, FeedEntry, MatchStore, request_digest
from services.runtime.tables import Seats, TableOptions, new_lifecycle
from services.runtime.watch_hub import WatchHub


class WatchSink(Protocol):
    """Where ``MatchService.attach_watch`` hands a watch's events (PlayMatch's outbox)."""

    def started(self, version: int) -> None: ...

    def event(self, event: StoredEvent) -> None: ...

    def ended(self) -> None: ...

    def revoked(self) -> None: ...


WAITING = "WAITING_FOR_PLAYERS"
IN_PROGRESS = "IN_PROGRESS"
FINISHED = "FINISHED"
ABANDONED = "ABANDONED"

MAX_PLAYER_NAME = 64
MAX_REQUEST_ID = 128
# Commit attempts when other writers keep winning the race and the client set no
# expected_version; past this the client gets ABORTED and may retry.
MAX_COMMIT_ATTEMPTS = 20
# Beyond a timed turn's longest wait before a timed match counts as idle: the scheduler's
# timeout commit comes within a tick or a lease of its deadline.
IDLE_MARGIN_S = 60
# The last event of every match (an abandonment too ends with it).
FINAL_EVENT = "match_ended"

log = structlog.get_logger("matches")


def _unknown(match_id: str) -> NotFound:
    return NotFound(f"match_id: no match {match_id!r} (unknown or expired)")


def _active_seats(state: Any, status: str) -> list[int]:
    """Seats with a decision now: none unless the match is in progress."""
    return list(state.active_seats()) if status == IN_PROGRESS else []


def _inactive_refusal(state: Any, seat: int, move: dict[str, Any]) -> RuleViolation:
    """Why a seat with no decision now may not make this move: the engine's own rule when it
    names one (a claim by a seat that did not win the trick), else ``not_your_turn``.

    ``state`` is a throwaway copy: whatever the engine does to it is never stored."""
    try:
        state.apply(seat, move)
    except RuleViolation as violation:
        return violation
    except MoveError:
        pass
    return NotYourTurn(seat)


@dataclass(frozen=True)
class MatchFacts:
    """Public facts of a match (the ``Match`` message)."""

    match_id: str
    game: str
    players: int
    status: str
    version: int
    seats: list[str | None]
    scores: list[int]
    winners: list[int]
    active_seats: list[int]
    # Bot level of each seat ("" for a player) and the turn clocks (services/runtime/tables.py).
    bots: list[str] = field(default_factory=list)
    # Each seat's presence (tables.Seats.connected / disconnected_since).
    connected: list[bool] = field(default_factory=list)
    disconnected_since: list[int] = field(default_factory=list)
    clocks: list[dict[str, int]] = field(default_factory=list)
    table: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Joined:
    seat: int
    token: str
    rejoin_key: str
    token_expires_ms: int
    facts: MatchFacts


@dataclass(frozen=True)
class MoveResult:
    version: int
    events: list[StoredEvent]
    active_seats: list[int]
    status: str
    # The caller's legal moves when it still has a decision.
    next_moves: list[dict[str, Any]] = field(default_factory=list)


class MatchService:
    def __init__(
        self,
        rules: ModuleType,
        store: MatchStore,
        settings: ServiceSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rules = rules
        self.game: GameInfo = rules.GAME
        self.store = store
        self.settings = settings
        self.clock = clock
        # Decoded states of the matches this replica served (services/runtime/state_cache.py).
        self.cache = StateCache()
        # A record's stored state, decoded (store.py: typed MessagePack of the State Struct).
        self.decode_state = StateDecoder(rules.State)
        self.hub = WatchHub(store, self.prompts, self.cached_record, self.remember)
        self.due = DueSet(store.redis, self.game.name)
        self.max_moves = settings.max_moves or move_cap(self.game.name)
        self.activity = Activity(store.redis, self.game.name, settings.game_stream_maxlen)

    # -- reading ---------------------------------------------------------------------

    def idle_limit_s(self, record: MatchRecord) -> int:
        """How long a live match may go without a commit before it is abandoned: the
        setting, or with a turn timer as long as a turn may last (a correspondence match's
        turns take days; its timer commits a timeout at the latest, so it is never idle)."""
        options = self.seats(record).options
        timed = options.turn_seconds + options.bank_seconds + IDLE_MARGIN_S if options.turn_seconds else 0
        return max(self.settings.abandon_after_s, timed)

    def _status(self, record: MatchRecord) -> str:
        """Stored status, or ABANDONED for an unfinished match idle for too long."""
        idle = self.clock() - record.updated_at
        if record.status in (WAITING, IN_PROGRESS) and idle > self.idle_limit_s(record):
            return ABANDONED
        return record.status

    async def _load(self, match_id: str) -> MatchRecord:
        if not match_id:
            raise InvalidArgument("match_id: required", field="match_id")
        record = await self.store.load(match_id)
        if record is None:
            raise _unknown(match_id)
        return record

    async def _load_for_request(self, match_id: str, request: bytes | None) -> tuple[MatchRecord, int | None]:
        """The match and the version ``request`` (a digest) was answered at, if it was."""
        if request is None:
            return await self._load(match_id), None
        record, answered = await self.store.load_for_request(match_id, request)
        if record is None:
            raise _unknown(match_id)
        return record, answered

    def facts(self, record: MatchRecord) -> MatchFacts:
        status = self._status(record)
        state = self.state_of(record)
        over = status == FINISHED
        seats = self.seats(record)
        return MatchFacts(
            match_id=record.match_id,
            game=self.game.name,
            players=record.players,
            status=status,
            version=record.version,
            seats=record.seats,
            scores=list(state.scores()),
            winners=list(state.winners()) if over else [],
            active_seats=_active_seats(state, status),
            bots=seats.bots(),
            connected=[seats.connected(s) for s in range(record.players)],
            disconnected_since=[seats.disconnected_since(s) for s in range(record.players)],
            clocks=seats.clocks() if status == IN_PROGRESS else [],
            table=seats.options.to_dict(),
        )

    def seats(self, record: MatchRecord) -> Seats:
        return Seats(record.table, record.lifecycle, record.players, record.match_id)

    def state_of(self, record: MatchRecord) -> Any:
        """The engine state of ``record``, to read only: the cached one when it is of the same
        rev, else decoded (and kept when ``record`` is what the cache would hold)."""
        cached = self.cache.peek(record.match_id, record.rev)
        if cached is not None:
            return cached.state
        return self.decode_state(record.state)

    def cached_record(self, match_id: str, rev: int) -> MatchRecord | None:
        """The record of ``match_id`` at ``rev`` if this replica holds it decoded (to read only)."""
        cached = self.cache.peek(match_id, rev)
        return None if cached is None else cached.record

    def remember(self, record: MatchRecord) -> None:
        """Keep a record just read from the store (and never changed by its reader) decoded."""
        if self.cache.peek(record.match_id, record.rev) is None:
            self.cache.put(record, self.decode_state(record.state))

    async def _current(self, match_id: str) -> MatchRecord:
        """The match as stored now, to read only: the cached record when Redis's rev is still
        the cached one (a cheap read of one field), else read whole and kept decoded."""
        cached = self.cache.peek(match_id)
        if cached is not None:
            rev = await self.store.rev(match_id)
            # Still there after the read: a move taken it meanwhile may be changing it.
            if rev is not None and self.cache.peek(match_id, rev) is cached:
                return cached.record
        record = await self._load(match_id)
        self.remember(record)
        return record

    async def load_record(self, match_id: str) -> MatchRecord:
        return await self._load(match_id)

    def status_of(self, record: MatchRecord) -> str:
        return self._status(record)

    def grant(self, token: str | None, match_id: str) -> auth.SeatGrant:
        """The seat a token grants, refusing a missing, bad, foreign or expired one."""
        if token is None:
            raise auth.Unauthenticated("authorization: missing 'Bearer <token>' metadata (from JoinMatch)")
        if not match_id:
            raise InvalidArgument("match_id: required", field="match_id")
        grant = auth.grant_from_token(self.settings.token_secret, token, match_id, self.now_ms())
        structlog.contextvars.bind_contextvars(seat=grant.seat)
        return grant

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def redis_now_ms(self) -> int:
        """Redis's clock: every turn deadline is set and compared on it, not a replica's."""
        return await self.store.now_ms()

    async def get_match(self, match_id: str) -> MatchFacts:
        return self.facts(await self._current(match_id))

    async def get_view(
        self, match_id: str, token: str | None
    ) -> tuple[dict[str, Any], int, int | None, list[int]]:
        """The caller's view, or a spectator's (``token`` None: public facts only)."""
        grant, record = await self._admit(match_id, token)
        seat = None if grant is None else grant.seat
        seats = self.seats(record)
        state = self.state_of(record)
        status = self._status(record)
        view = state.view(seat)
        view["clocks"] = seats.clocks() if status == IN_PROGRESS else []  # View.clocks, platform-filled
        return view, record.version, seat, _active_seats(state, status)

    async def _admit(self, match_id: str, token: str | None) -> tuple[auth.SeatGrant | None, MatchRecord]:
        """The caller's seat grant (None for a spectator, when admitted) and the match."""
        grant = None if token is None else self.grant(token, match_id)
        record = await self._current(match_id)
        if grant is not None:
            self.seats(record).check_current(grant)
        elif not self.settings.spectators or self.seats(record).options.no_spectators:
            raise PermissionDenied(
                "authorization: spectators are not admitted to this match; send a seat token",
                reason="spectators_disabled",
            )
        return grant, record

    async def legal_moves(self, match_id: str, token: str | None) -> tuple[list[dict[str, Any]], int]:
        grant = self.grant(token, match_id)
        seat = grant.seat
        record = await self._current(match_id)
        self.seats(record).check_current(grant)
        if self._status(record) != IN_PROGRESS:
            return [], record.version
        return self.state_of(record).legal_moves(seat), record.version

    # -- lifecycle -------------------------------------------------------------------

    async def create_match(
        self, players: int, seed: int | None, options: dict[str, Any], table: dict[str, Any] | None = None
    ) -> MatchFacts:
        self.game.check_players(players)
        table_options = TableOptions.parse(table or {}, players)
        if seed is not None and not self.settings.allow_client_seed:
            raise InvalidArgument(
                "seed: this server chooses every match's seed; leave it unset", field="seed"
            )
        seed = secrets.randbits(63) if seed is None else seed
        state = self.rules.State.new(players, seed, options)
        now = self.clock()
        record = MatchRecord(
            match_id=auth.new_match_id(),
            game=self.game.name,
            players=players,
            seed=seed,
            options=options,
            seats=[None] * players,
            status=WAITING,
            version=0,
            state=encode_state(state),
            created_at=now,
            updated_at=now,
            table=table_options.to_dict(),
            lifecycle=new_lifecycle(table_options, players),
        )
        await self.store.create(record, self._ttl(record))
        await self._index(record, table_options)
        log.info("match_created", match_id=record.match_id, players=players)
        return self.facts(record)

    async def _index(self, record: MatchRecord, table: TableOptions) -> None:
        # Own commands next to the match's write (other hash slots): the idle reaper's entry,
        # and the lobby's list. Both are hints checked against the record when used.
        idle_due_ms = int((record.updated_at + self.idle_limit_s(record)) * 1000)
        await self.due.add(record.match_id, idle_due_ms)
        if table.public:
            await self.store.redis.zadd(
                keys.public_matches(self.game.name), {record.match_id: int(record.created_at * 1000)}
            )

    async def join_match(
        self, match_id: str, player_name: str, request_id: str = "", player_id: str = "", client: str = ""
    ) -> Joined:
        """A free seat for ``player_name``, bound to ``player_id`` when the call carried a
        session; a player already seated here gets that seat again (``seat_again``). A join
        retried with the same ``request_id`` by the same ``client`` (as the budgets name it)
        moments later gets the same answer, unless the seat changed hands meanwhile
        (tables.Seats.joined_seat)."""
        name = player_name.strip()
        if not name or len(name) > MAX_PLAYER_NAME:
            raise InvalidArgument(
                f"player_name: 1 to {MAX_PLAYER_NAME} characters required", field="player_name"
            )
        if len(request_id) > MAX_REQUEST_ID:
            raise InvalidArgument(f"request_id: at most {MAX_REQUEST_ID} characters", field="request_id")
        while True:
            record = await self._load(match_id)
            seats = self.seats(record)
            seat = seats.joined_seat(request_id, client, self.now_ms())
            if seat is not None:
                log.info("join_replayed", seat=seat)
                return self.joined(record, seat)
            mine = seats.seat_of_player(player_id)
            if mine is not None:
                again = await self.seat_again(record, mine)
                if again is None:
                    continue
                return again
            status = self._status(record)
            if status != WAITING:
                raise FailedPrecondition(f"match_full: match is {status}, no free seat", reason="match_full")
            if player_id:
                await self._room_for_player(player_id)
            seat = record.seats.index(None)
            seats.seat_player(seat, self.now_ms(), self.settings.token_ttl_s, player_id)
            seats.remember_join(request_id, client, seat, self.now_ms())
            if await self.commit_events(record, self.seat_taken(record, seat, name)):
                structlog.contextvars.bind_contextvars(seat=seat)
                log.info("player_joined", started=record.status == IN_PROGRESS)
                return self.joined(record, seat)
            # Another join won the race for this seat: read again and take the next one.

    async def _room_for_player(self, player_id: str) -> None:
        """Refuses a deleted player's join, and a player's past the per-player cap on matches
        waiting or in progress."""
        await refuse_deleted(self.store.redis, player_id)
        cap = self.settings.max_matches_per_player
        if cap and await live_matches(self.store.redis, player_id) >= cap:
            raise ResourceExhausted(
                f"max_matches_per_player: {cap} of your matches still wait or play; finish or leave one",
                retry_after_s=60,
                reason="player_matches",
            )

    async def seat_again(self, record: MatchRecord, seat: int) -> Joined | None:
        """The seat its player holds, from any device: a fresh token, committed as a rejoin
        (the seat's older tokens are revoked, as by RejoinMatch); None when another write
        won the race."""
        status = self._status(record)
        if status not in (WAITING, IN_PROGRESS):
            raise FailedPrecondition(f"match_over: match is {status}", reason="match_over")
        self.seats(record).renew_token(seat, self.now_ms(), self.settings.token_ttl_s)
        if not await self.commit_events(record, [Event({"player_rejoined": {"seat": seat}})]):
            return None
        structlog.contextvars.bind_contextvars(seat=seat)
        log.info("player_seated_again")
        return self.joined(record, seat)

    def joined(self, record: MatchRecord, seat: int) -> Joined:
        seats = self.seats(record)
        secret = self.settings.token_secret
        return Joined(
            seat,
            seats.token(secret, seat),
            seats.rejoin_key(secret, seat),
            seats.expires_ms(seat),
            self.facts(record),
        )

    def seat_taken(
        self, record: MatchRecord, seat: int, name: str, also: tuple[Event, ...] = ()
    ) -> list[Event]:
        """Give ``seat`` to ``name``: its events (joined, ``also``, and started when it was the
        last free seat)."""
        record.seats[seat] = name
        events = [Event({"player_joined": {"seat": seat, "player_name": name}}), *also]
        if None not in record.seats:
            record.status = IN_PROGRESS
            events.append(Event({"match_started": {"players": record.players}}))
            # Round 1's set-up, stored like every later round's so the stream rebuilds it.
            events += self.decode_state(record.state).opening_events()
        return events

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
        due = await self._clocks(record, None, lower=not folded)
        pending = self.activity.before_commit(
            self.seats(record), lambda: _active_seats(self.decode_state(record.state), record.status)
        )
        with self.hub.committing(record.match_id):
            result = await self.store.commit(
                record, stored, self._ttl(record), wake_due_ms=due if folded else None
            )
            if result.outcome != "ok":
                return False
            record.rev = result.rev
            self.cache.evict(record.match_id)
            self.hub.committed(previous, stored, record)
        await self._tell_players(pending, record, stored)
        if wake:
            await self._wake(record, due)
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
        stored = self._advance(record, state, events)
        await self._clocks(record, seat, timed_out, hand_to_bot, state)
        feed = self._feed(record, seat, stored)
        pending = self.activity.before_commit(self.seats(record), lambda: _active_seats(state, record.status))
        with self.hub.committing(record.match_id):
            result = await self.store.commit(record, stored, self._ttl(record), feed=feed)
            if result.outcome != "ok":
                return False
            record.rev = result.rev
            # Not kept: the scheduler goes on changing this record for its next step.
            self.cache.evict(record.match_id)
            self.hub.committed(previous, stored, record)
        await self._tell_players(pending, record, stored)
        metrics.move_committed(self.game.name)
        return True

    async def _tell_players(
        self, pending: Pending | None, record: MatchRecord, stored: list[StoredEvent]
    ) -> None:
        """After a commit of a match with a seat bound to a player (services/runtime/activity.py)."""
        if pending is not None:
            await self.activity.after_commit(pending, self.facts(record), record.rev, stored, self.now_ms())

    async def _clocks(
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
        active = _active_seats(decoded, record.status)
        now_ms = await self.redis_now_ms()
        think_ms = self.settings.bot_think_ms
        seats.after_change(active, None if hand_to_bot else mover, now_ms, think_ms, timed_out)
        due = seats.next_due_ms()
        if due is not None and lower:
            # Before the commit, and only ever earlier (LT): if the commit then fails, the
            # scheduler merely looks too early and finds nothing due.
            await self.due.lower(record.match_id, due)
        return due

    async def _wake(self, record: MatchRecord, due: int | None) -> None:
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

    def _ttl(self, record: MatchRecord) -> int:
        if record.status in (FINISHED, ABANDONED):
            return self.settings.finished_ttl_s
        return self.idle_limit_s(record) + self.settings.finished_ttl_s

    # -- moves -----------------------------------------------------------------------

    async def submit_move(
        self,
        match_id: str,
        token: str | None,
        move: dict[str, Any] | None,
        expected_version: int | None,
        request_id: str,
    ) -> MoveResult:
        if not move:
            raise InvalidArgument("move: no move kind set", field="move")
        if len(request_id) > MAX_REQUEST_ID:
            raise InvalidArgument(f"request_id: at most {MAX_REQUEST_ID} characters", field="request_id")
        grant = self.grant(token, match_id)
        seat = grant.seat
        # Without a request id, one of the server's own: redis-py re-sends the commit script
        # after a broken connection, and the first one may have run; the re-sent one then
        # answers "duplicate" instead of conflicting and having this loop apply the move again.
        request = request_digest(seat, request_id) if request_id else _own_request_id()
        for _ in range(MAX_COMMIT_ATTEMPTS):
            attempt = self._attempt_cached(match_id, grant, move, expected_version)
            if attempt is None:
                # Read (with the recorded answer of a client's request id) and decide on the
                # match as stored; a refusal here is final.
                record, answered = await self._load_for_request(match_id, request if request_id else None)
                self.seats(record).check_current(grant)
                if answered is not None:
                    return await self._replay(record, seat, answered)
                state = self.decode_state(record.state)
                events = self._decide(record, state, seat, move, expected_version)
            else:
                record, state, events = attempt
            previous = (record.version, record.event_seq)
            stored = self._advance(record, state, events)
            # On one Redis the commit wakes the due entry itself: atomic with the commit, and
            # no round trip before or after it.
            folded = self.store.wakes_in_commit
            due = await self._clocks(record, seat, state=state, lower=not folded)
            active = _active_seats(state, record.status)
            pending = self.activity.before_commit(self.seats(record), functools.partial(list, active))
            first = MoveResult(
                version=record.version,
                events=[e for e in stored if e.visible_to(seat)],
                active_seats=active,
                status=record.status,
                next_moves=state.legal_moves(seat) if seat in active else [],
            )
            with self.hub.committing(match_id):
                result = await self.store.commit(
                    record,
                    stored,
                    self._ttl(record),
                    request,
                    RecordedAnswer(active, record.status) if request_id else None,
                    self._feed(record, seat, stored),
                    wake_due_ms=due if folded else None,
                )
                if result.outcome == "duplicate" and not request_id:
                    # This attempt's own commit, re-sent after its reply was lost: it is in, and
                    # its compare-and-set made the next rev.
                    return await self._committed(
                        record, state, previous, stored, due, first, record.rev + 1, pending
                    )
                if result.outcome == "duplicate":
                    # The same request won a race with itself: answer as the first one did, from
                    # the stored match (``record`` holds this attempt's uncommitted state).
                    return await self._replay(await self._load(match_id), seat, result.previous_version)
                if result.outcome == "ok":
                    return await self._committed(
                        record, state, previous, stored, due, first, result.rev, pending
                    )
            # Another write won: the next attempt decides on the match as stored, and refuses a
            # pinned expected_version only if a move was committed meanwhile (a seat event, a
            # presence change, moves no version).
            metrics.commit_conflict(self.game.name, retrying=True)
        raise Aborted("contention: too many concurrent moves on this match, retry", reason="contention")

    async def _committed(
        self,
        record: MatchRecord,
        state: Any,
        previous: tuple[int, int],
        stored: list[StoredEvent],
        due: int | None,
        first: MoveResult,
        rev: int,
        pending: Pending | None = None,
    ) -> MoveResult:
        """After this call's move is in: keep its state, tell this replica's watchers, wake
        the scheduler, answer."""
        record.rev = rev
        self.cache.put(record, state)
        self.hub.committed(previous, stored, record)
        metrics.move_committed(self.game.name)
        await self._tell_players(pending, record, stored)
        await self._wake(record, due)
        log.debug("move_committed", version=record.version, status=record.status)
        return first

    def _attempt_cached(
        self, match_id: str, grant: auth.SeatGrant, move: dict[str, Any], expected_version: int | None
    ) -> tuple[MatchRecord, Any, list[Event]] | None:
        """The move decided and applied on this replica's cached state of the match, taken out
        of the cache (its commit puts it back); None when there is none, or when the cached
        state refuses the move: the cache may be stale, so only the stored match may refuse."""
        cached = self.cache.take(match_id)
        if cached is None:
            return None
        record, state = cached.record, cached.state
        try:
            self.seats(record).check_current(grant)
            return record, state, self._decide(record, state, grant.seat, move, expected_version)
        except Exception:
            # The engine may have changed the state before refusing: it is dropped.
            return None

    def _decide(
        self, record: MatchRecord, state: Any, seat: int, move: dict[str, Any], expected_version: int | None
    ) -> list[Event]:
        """The move's events, applied to ``state``; raises the refusal the match demands."""
        # Stale before illegal: a client that pinned an old version must re-read first,
        # whatever the move would meet now.
        if expected_version is not None and expected_version != record.version:
            raise Aborted(
                f"expected_version: match is at version {record.version}, not {expected_version}",
                field="expected_version",
            )
        status = self._status(record)
        if status == WAITING:
            raise FailedPrecondition(
                "match_not_started: waiting for players to join", reason="match_not_started"
            )
        if status != IN_PROGRESS:
            raise FailedPrecondition(f"match_over: match is {status}", reason="match_over")
        if seat not in state.active_seats():
            raise _inactive_refusal(state, seat, move)
        events: list[Event] = state.apply(seat, move)
        return events

    def _advance(self, record: MatchRecord, state: Any, events: list[Event]) -> list[StoredEvent]:
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

    async def _replay(self, record: MatchRecord, seat: int, version: int) -> MoveResult:
        """The first answer to a retried request id, whole (answered at ``version``, its
        events from the history); next moves as of now."""
        commit = await self.store.commit_of_version(record.match_id, version)
        if commit is None or commit.answer is None:
            raise RuntimeError(f"request answered at version {version}, whose commit is not stored")
        log.info("move_replayed", version=version)
        next_moves: list[dict[str, Any]] = []
        if self._status(record) == IN_PROGRESS:
            state = self.state_of(record)
            if seat in state.active_seats():
                next_moves = state.legal_moves(seat)
        events = [e for e in commit.events if e.visible_to(seat)]
        return MoveResult(version, events, commit.answer.active_seats, commit.answer.status, next_moves)

    def _feed(self, record: MatchRecord, seat: int, events: list[StoredEvent]) -> FeedEntry:
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

    # -- watching --------------------------------------------------------------------

    async def watch(
        self, match_id: str, token: str | None, after_version: int | None, after_seq: int
    ) -> AsyncGenerator[StoredEvent, None]:
        """The caller's events after the cursor (README, "Watching a match") in order, then
        live ones with the seat's prompts and heartbeats, until the match ends."""
        grant, after, history = await self._open_watch(match_id, token, after_version, after_seq)
        if history is not None:
            for past in history:
                yield past
            return
        last_version = after[0]
        seat, generation = (None, 0) if grant is None else (grant.seat, grant.generation)
        live = self.hub.watch(match_id, seat, after, self.settings.heartbeat_s, generation)
        async with contextlib.aclosing(live) as events:
            async for event in events:
                if event is None:
                    yield self.heartbeat(last_version)
                    continue
                last_version = event.version
                yield event
                if FINAL_EVENT in event.body:
                    return

    async def attach_watch(
        self, match_id: str, token: str | None, after_version: int | None, after_seq: int, sink: WatchSink
    ) -> Callable[[], None]:
        """What ``watch`` yields but its heartbeats, handed to ``sink`` as it comes, then
        ``sink.ended()`` after the last event; the sink sends heartbeats itself (it knows
        when its stream last sent anything). Returns what detaches it from the hub."""
        grant, after, history = await self._open_watch(match_id, token, after_version, after_seq)
        sink.started(after[0])
        if history is not None:
            for past in history:
                sink.event(past)
            sink.ended()
            return lambda: None

        def deliver(event: StoredEvent) -> None:
            sink.event(event)
            if FINAL_EVENT in event.body:
                sink.ended()

        if grant is None:
            return self.hub.attach(match_id, None, after, deliver)
        return self.hub.attach(match_id, grant.seat, after, deliver, grant.generation, sink.revoked)

    async def _open_watch(
        self, match_id: str, token: str | None, after_version: int | None, after_seq: int
    ) -> tuple[auth.SeatGrant | None, tuple[int, int], list[StoredEvent] | None]:
        """A watch's caller (its seat grant, None for a spectator) and starting position; and,
        for a match that is over (nothing will be added), its history after that position as
        the caller may see it, all there is to send (None: the match is live). That history
        ends with ``match_ended`` whatever the cursor: past it, the event is sent again."""
        grant, record = await self._admit(match_id, token)
        seat = None if grant is None else grant.seat
        after = _watch_start(record, after_version, after_seq)
        # The stored status: a match idle past the reaper's time is still live until the
        # reaper commits its end, which the watch then delivers.
        if record.status in (WAITING, IN_PROGRESS):
            return grant, after, None
        history, _ = await self.store.events_after(match_id, after, with_record=False)
        history = [past for past in history if past.visible_to(seat)]
        if not history or FINAL_EVENT not in history[-1].body:
            # The end of a match is the last event of its last version.
            last, _ = await self.store.events_after(match_id, (record.version, 0), with_record=False)
            history += [past for past in last if FINAL_EVENT in past.body][-1:]
        return grant, after, history

    def heartbeat(self, version: int) -> StoredEvent:
        """A quiet stream's heartbeat, after events up to ``version``."""
        return StoredEvent(version, 0, None, {"heartbeat": {"server_time_unix_ms": self.now_ms()}})

    def prompts(self, record: MatchRecord, seats: Collection[int]) -> dict[int, dict[str, Any]]:
        """The prompt event body of each of ``seats`` that has a decision in ``record``, with
        its turn clock when the match has a timer."""
        if self._status(record) != IN_PROGRESS:
            return {}
        state = self.state_of(record)
        deciding = set(seats) & set(state.active_seats())
        clocks = {clock["seat"]: clock for clock in self.seats(record).clocks()}
        prompts = {}
        for seat in deciding:
            prompt: dict[str, Any] = {"seat": seat, "moves": state.legal_moves(seat)}
            if seat in clocks:
                prompt["clock"] = clocks[seat]
            prompts[seat] = {"prompt": prompt}
        return prompts


# The ids of moves sent without a request id only need to be unique, never secret: a
# Mersenne Twister seeded from the OS draws them without a system call per move.
_own_ids = random.Random(secrets.randbits(128))
_json = msgspec.json.Encoder().encode


def _own_request_id() -> bytes:
    return _own_ids.getrandbits(DIGEST_BYTES * 8).to_bytes(DIGEST_BYTES, "big")


def _watch_start(record: MatchRecord, after_version: int | None, after_seq: int) -> tuple[int, int]:
    """The stream position a watch starts after (docs/protocol.md, "The cursor"): events come
    in (version, seq) order, and a watch gets every one after (after_version, after_seq).
    Unset = (0, 0), from the first join on; (v, 0) = every event of version v on, the ones a
    leave, a rejoin or a bot appended to v later included (seq starts at 1)."""
    if after_version is None:
        if after_seq:
            raise InvalidArgument("after_seq: only with after_version", field="after_seq")
        return (0, 0)
    if after_version > record.version:
        raise InvalidArgument(
            f"after_version: the match is at version {record.version}, not {after_version}",
            field="after_version",
        )
    return (after_version, after_seq)
