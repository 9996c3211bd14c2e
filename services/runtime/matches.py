"""The authority: every match operation of one game, checked in a fixed order.

For a move: action (well formed), credentials, match, game over, active seat, move
legality, state version; then apply on a copy and commit atomically. Nothing here
knows about protobuf or gRPC: the servicer translates, ``errors`` maps.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import structlog

from services.engine import Event, GameInfo, MoveError, NotYourTurn, RuleViolation
from services.runtime import auth, keys
from services.runtime.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound
from services.runtime.settings import ServiceSettings
from services.runtime.store import MatchRecord, MatchStore, StoredEvent
from services.runtime.watch_hub import WatchHub

WAITING = "WAITING_FOR_PLAYERS"
IN_PROGRESS = "IN_PROGRESS"
FINISHED = "FINISHED"
ABANDONED = "ABANDONED"

MAX_PLAYER_NAME = 64
MAX_REQUEST_ID = 128
# Commit attempts when other writers keep winning the race and the client set no
# expected_version; past this the client gets ABORTED and may retry.
MAX_COMMIT_ATTEMPTS = 20
# A quiet watch checks this often whether its match is still going.
WATCH_IDLE_S = 5.0

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


@dataclass(frozen=True)
class MoveResult:
    version: int
    events: list[StoredEvent]
    active_seats: list[int]
    status: str


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
        self.hub = WatchHub(store.redis)

    # -- reading ---------------------------------------------------------------------

    def _status(self, record: MatchRecord) -> str:
        """Stored status, or ABANDONED for an unfinished match idle for too long."""
        idle = self.clock() - record.updated_at
        if record.status in (WAITING, IN_PROGRESS) and idle > self.settings.abandon_after_s:
            return ABANDONED
        return record.status

    async def _load(self, match_id: str) -> MatchRecord:
        if not match_id:
            raise InvalidArgument("match_id: required", field="match_id")
        record = await self.store.load(match_id)
        if record is None:
            raise _unknown(match_id)
        return record

    async def _load_for_request(
        self, match_id: str, request_key: str | None
    ) -> tuple[MatchRecord, str | None]:
        if request_key is None:
            return await self._load(match_id), None
        record, answer = await self.store.load_for_request(match_id, request_key)
        if record is None:
            raise _unknown(match_id)
        return record, answer

    def facts(self, record: MatchRecord) -> MatchFacts:
        status = self._status(record)
        state = self.rules.State.from_dict(record.state)
        over = status == FINISHED
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
        )

    async def get_match(self, match_id: str) -> MatchFacts:
        return self.facts(await self._load(match_id))

    async def get_view(self, match_id: str, token: str | None) -> tuple[dict[str, Any], int, int, list[int]]:
        seat = self._seat(token, match_id)
        record = await self._load(match_id)
        state = self.rules.State.from_dict(record.state)
        active = _active_seats(state, self._status(record))
        return state.view(seat), record.version, seat, active

    async def legal_moves(self, match_id: str, token: str | None) -> tuple[list[dict[str, Any]], int]:
        seat = self._seat(token, match_id)
        record = await self._load(match_id)
        if self._status(record) != IN_PROGRESS:
            return [], record.version
        return self.rules.State.from_dict(record.state).legal_moves(seat), record.version

    def _seat(self, token: str | None, match_id: str) -> int:
        if token is None:
            raise auth.Unauthenticated("authorization: missing 'Bearer <token>' metadata (from JoinMatch)")
        if not match_id:
            raise InvalidArgument("match_id: required", field="match_id")
        seat = auth.seat_from_token(self.settings.token_secret, token, match_id)
        structlog.contextvars.bind_contextvars(seat=seat)
        return seat

    # -- lifecycle -------------------------------------------------------------------

    async def create_match(self, players: int, seed: int | None, options: dict[str, Any]) -> MatchFacts:
        self.game.check_players(players)
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
            state=state.to_dict(),
            created_at=now,
            updated_at=now,
        )
        await self.store.create(record, self._ttl(record))
        log.info("match_created", match_id=record.match_id, players=players)
        return self.facts(record)

    async def join_match(self, match_id: str, player_name: str) -> tuple[int, str, MatchFacts]:
        name = player_name.strip()
        if not name or len(name) > MAX_PLAYER_NAME:
            raise InvalidArgument(
                f"player_name: 1 to {MAX_PLAYER_NAME} characters required", field="player_name"
            )
        while True:
            record = await self._load(match_id)
            status = self._status(record)
            if status != WAITING:
                raise FailedPrecondition(f"match_full: match is {status}, no free seat", reason="match_full")
            seat = record.seats.index(None)
            record.seats[seat] = name
            events = [
                StoredEvent(
                    0, record.event_seq + 1, None, {"player_joined": {"seat": seat, "player_name": name}}
                )
            ]
            if None not in record.seats:
                record.status = IN_PROGRESS
                events.append(
                    StoredEvent(0, record.event_seq + 2, None, {"match_started": {"players": record.players}})
                )
            record.event_seq += len(events)
            record.updated_at = self.clock()
            result = await self.store.commit(record, events, self._ttl(record))
            if result.outcome == "ok":
                record.rev = result.rev
                structlog.contextvars.bind_contextvars(seat=seat)
                log.info("player_joined", started=record.status == IN_PROGRESS)
                token = auth.issue_token(self.settings.token_secret, match_id, seat)
                return seat, token, self.facts(record)
            # Another join won the race for this seat: read again and take the next one.

    def _ttl(self, record: MatchRecord) -> int:
        if record.status in (FINISHED, ABANDONED):
            return self.settings.finished_ttl_s
        return self.settings.abandon_after_s + self.settings.finished_ttl_s

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
        seat = self._seat(token, match_id)
        request_key = keys.request(match_id, seat, request_id) if request_id else None
        for _ in range(MAX_COMMIT_ATTEMPTS):
            record, answer = await self._load_for_request(match_id, request_key)
            if answer:
                return await self._replay(record, seat, answer)
            status = self._status(record)
            if status == WAITING:
                raise FailedPrecondition(
                    "match_not_started: waiting for players to join", reason="match_not_started"
                )
            if status != IN_PROGRESS:
                raise FailedPrecondition(f"match_over: match is {status}", reason="match_over")
            state = self.rules.State.from_dict(record.state)
            if seat not in state.active_seats():
                raise _inactive_refusal(state, seat, move)
            events = state.apply(seat, move)
            if expected_version is not None and expected_version != record.version:
                raise Aborted(
                    f"expected_version: match is at version {record.version}, not {expected_version}",
                    field="expected_version",
                )
            stored = self._advance(record, state, events)
            answer = json.dumps({"version": record.version})
            result = await self.store.commit(
                record, stored, self._ttl(record), request_key, answer, self.settings.finished_ttl_s
            )
            if result.outcome == "duplicate":
                # The same request won a race with itself: answer as the first one did, from
                # the stored match (``record`` holds this attempt's uncommitted state).
                return await self._replay(await self._load(match_id), seat, result.previous_answer)
            if result.outcome == "ok":
                await self._publish(record, seat, move)
                return MoveResult(
                    version=record.version,
                    events=[e for e in stored if e.visible_to(seat)],
                    active_seats=_active_seats(state, record.status),
                    status=record.status,
                )
            if expected_version is not None:
                raise Aborted(
                    f"expected_version: another move was committed first, match is past {expected_version}",
                    field="expected_version",
                )
        raise Aborted("contention: too many concurrent moves on this match, retry", reason="contention")

    def _advance(self, record: MatchRecord, state: Any, events: list[Event]) -> list[StoredEvent]:
        """Move ``record`` to the next version holding ``state``; the events to store."""
        record.version += 1
        bodies = [(e.body, e.to) for e in events]
        if state.is_over():
            record.status = FINISHED
            ended = {"status": FINISHED, "scores": list(state.scores()), "winners": list(state.winners())}
            bodies.append(({"match_ended": ended}, None))
        record.state = state.to_dict()
        record.updated_at = self.clock()
        record.event_seq = len(bodies)
        return [StoredEvent(record.version, i + 1, to, body) for i, (body, to) in enumerate(bodies)]

    async def _replay(self, record: MatchRecord, seat: int, answer: str) -> MoveResult:
        """The first answer to a retried request id: same version, same events."""
        version = int(json.loads(answer)["version"])
        events = await self.store.events_of_version(record.match_id, version)
        state = self.rules.State.from_dict(record.state)
        status = self._status(record)
        log.info("move_replayed", version=version)
        visible = [e for e in events if e.visible_to(seat)]
        return MoveResult(version, visible, _active_seats(state, status), status)

    async def _publish(self, record: MatchRecord, seat: int, move: dict[str, Any]) -> None:
        # After the commit, outside the match's hash slot: this feed is for downstream
        # consumers; the match stream (written atomically above) is the source of truth.
        fields = {
            "match_id": record.match_id,
            "version": record.version,
            "seat": seat,
            "move": json.dumps(move),
        }
        await self.store.publish_game_move(self.game.name, fields, self.settings.game_stream_maxlen)
        log.info("move_committed", version=record.version, status=record.status)

    # -- watching --------------------------------------------------------------------

    async def watch(
        self, match_id: str, token: str | None, after_version: int
    ) -> AsyncGenerator[StoredEvent, None]:
        """Events after ``after_version`` in order, then live ones, until the match ends."""
        seat = None if token is None else self._seat(token, match_id)
        await self._load(match_id)
        after_id = f"{after_version}-18446744073709551615"
        async with contextlib.aclosing(self.hub.events(match_id, after_id, WATCH_IDLE_S)) as events:
            async for event in events:
                if event is None:
                    record = await self.store.load(match_id)
                    if record is None or self._status(record) not in (WAITING, IN_PROGRESS):
                        return  # expired, or over with nothing left to send
                    continue
                if event.visible_to(seat):
                    yield event
                if "match_ended" in event.body:
                    return
