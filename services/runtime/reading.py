"""The authority's reading side: a match as stored (or as this replica holds it decoded), its
status and public facts, a seat's grant, its view and legal moves, the prompts of the seats
with a decision.

``MatchReader`` is the base of ``MatchService`` (services/runtime/matches.py), which the
commit path (services/runtime/commits.py) and the watches (services/runtime/watching.py)
build on; the order of checks every operation follows is services/runtime/checks.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from types import ModuleType
from typing import Any

import structlog

from services.catalog import move_cap
from services.engine import GameInfo
from services.runtime import auth, checks
from services.runtime.activity import Activity
from services.runtime.due import DueSet
from services.runtime.errors import PermissionDenied
from services.runtime.outcomes import ABANDONED, FINISHED, IN_PROGRESS, LIVE, MatchFacts
from services.runtime.record import MatchRecord, StateDecoder
from services.runtime.settings import ServiceSettings
from services.runtime.state_cache import StateCache
from services.runtime.store import MatchStore
from services.runtime.tables import Seats
from services.runtime.watch_hub import WatchHub

# Beyond a timed turn's longest wait before a timed match counts as idle: the scheduler's
# timeout commit comes within a tick or a lease of its deadline.
IDLE_MARGIN_S = 60


def active_seats(state: Any, status: str) -> list[int]:
    """Seats with a decision now: none unless the match is in progress."""
    return list(state.active_seats()) if status == IN_PROGRESS else []


class MatchReader:
    """One game's matches as this replica reads them (the base of ``MatchService``)."""

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

    # -- a match as stored --------------------------------------------------------------------

    def idle_limit_s(self, record: MatchRecord) -> int:
        """How long a live match may go without a commit before it is abandoned: the
        setting, or with a turn timer as long as a turn may last (a correspondence match's
        turns take days; its timer commits a timeout at the latest, so it is never idle)."""
        options = self.seats(record).options
        timed = options.turn_seconds + options.bank_seconds + IDLE_MARGIN_S if options.turn_seconds else 0
        return max(self.settings.abandon_after_s, timed)

    def status_of(self, record: MatchRecord) -> str:
        """Stored status, or ABANDONED for an unfinished match idle for too long."""
        idle = self.clock() - record.updated_at
        if record.status in LIVE and idle > self.idle_limit_s(record):
            return ABANDONED
        return record.status

    async def load_record(self, match_id: str) -> MatchRecord:
        checks.match_id_given(match_id)
        record = await self.store.load(match_id)
        if record is None:
            raise checks.unknown(match_id)
        return record

    async def load_for_request(self, match_id: str, request: bytes | None) -> tuple[MatchRecord, int | None]:
        """The match and the version ``request`` (a digest) was answered at, if it was."""
        if request is None:
            return await self.load_record(match_id), None
        record, answered = await self.store.load_for_request(match_id, request)
        if record is None:
            raise checks.unknown(match_id)
        return record, answered

    async def current(self, match_id: str) -> MatchRecord:
        """The match as stored now, to read only: the cached record when Redis's rev is still
        the cached one (a cheap read of one field), else read whole and kept decoded."""
        cached = self.cache.peek(match_id)
        if cached is not None:
            rev = await self.store.rev(match_id)
            # Still there after the read: a move taken it meanwhile may be changing it.
            if rev is not None and self.cache.peek(match_id, rev) is cached:
                return cached.record
        record = await self.load_record(match_id)
        self.remember(record)
        return record

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

    def seats(self, record: MatchRecord) -> Seats:
        return Seats(record.table, record.lifecycle, record.players, record.match_id)

    def ttl(self, record: MatchRecord) -> int:
        if record.status in (FINISHED, ABANDONED):
            return self.settings.finished_ttl_s
        return self.idle_limit_s(record) + self.settings.finished_ttl_s

    # -- what a caller may read ---------------------------------------------------------------

    def facts(self, record: MatchRecord, state: Any = None) -> MatchFacts:
        """The match's public facts; with ``state``, of a record about to be committed with it
        (the cache holds the stored one)."""
        status = self.status_of(record)
        state = self.state_of(record) if state is None else state
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
            active_seats=active_seats(state, status),
            bots=seats.bots(),
            connected=[seats.connected(s) for s in range(record.players)],
            disconnected_since=[seats.disconnected_since(s) for s in range(record.players)],
            clocks=seats.clocks() if status == IN_PROGRESS else [],
            table=seats.options.to_dict(),
        )

    def grant(self, token: str | None, match_id: str) -> auth.SeatGrant:
        """The seat a token grants, refusing a missing, bad, foreign or expired one."""
        if token is None:
            raise auth.Unauthenticated("authorization: missing 'Bearer <token>' metadata (from JoinMatch)")
        checks.match_id_given(match_id)
        grant = auth.grant_from_token(self.settings.token_secret, token, match_id, self.now_ms())
        structlog.contextvars.bind_contextvars(seat=grant.seat)
        return grant

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def redis_now_ms(self) -> int:
        """Redis's clock: every turn deadline is set and compared on it, not a replica's."""
        return await self.store.now_ms()

    async def get_match(self, match_id: str) -> MatchFacts:
        return self.facts(await self.current(match_id))

    async def get_view(
        self, match_id: str, token: str | None
    ) -> tuple[dict[str, Any], int, int | None, list[int]]:
        """The caller's view, or a spectator's (``token`` None: public facts only)."""
        grant, record = await self.admit(match_id, token)
        return self.view_of(record, grant)

    def view_of(
        self, record: MatchRecord, grant: auth.SeatGrant | None, state: Any = None
    ) -> tuple[dict[str, Any], int, int | None, list[int]]:
        """The view of ``grant``'s seat in ``record`` (None: a spectator's), its version, the
        seat and the active seats."""
        seat = None if grant is None else grant.seat
        seats = self.seats(record)
        state = self.state_of(record) if state is None else state
        status = self.status_of(record)
        view = state.view(seat)
        view["clocks"] = seats.clocks() if status == IN_PROGRESS else []  # View.clocks, platform-filled
        return view, record.version, seat, active_seats(state, status)

    async def admit(self, match_id: str, token: str | None) -> tuple[auth.SeatGrant | None, MatchRecord]:
        """The caller's seat grant (None for a spectator, when admitted) and the match."""
        grant = None if token is None else self.grant(token, match_id)
        record = await self.current(match_id)
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
        record = await self.current(match_id)
        self.seats(record).check_current(grant)
        if self.status_of(record) != IN_PROGRESS:
            return [], record.version
        return self.state_of(record).legal_moves(seat), record.version

    def prompts(self, record: MatchRecord, seats: Collection[int]) -> dict[int, dict[str, Any]]:
        """The prompt event body of each of ``seats`` that has a decision in ``record``, with
        its turn clock when the match has a timer."""
        if self.status_of(record) != IN_PROGRESS:
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
