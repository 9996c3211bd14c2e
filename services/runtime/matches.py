"""The authority: every match operation of one game, checked in one order
(services/runtime/checks.py) and committed through one path (services/runtime/commits.py).

``MatchService`` creates matches, seats players and decides moves; leaving, rejoining and
adding a bot are services/runtime/lifecycle.py, the server's own moves (timeouts, bots, the
idle reaper) services/runtime/timers.py, all through the same checks and commit path. Nothing
here knows about protobuf or gRPC: the servicer translates, ``errors`` maps.
"""

from __future__ import annotations

import random
import secrets
from typing import Any

import structlog

from services.engine import Event
from services.runtime import auth, checks, keys, metrics
from services.runtime.activity import Pending, live_matches, notices_of
from services.runtime.commits import MatchCommits
from services.runtime.errors import Aborted, InvalidArgument, ResourceExhausted
from services.runtime.history import RecordedAnswer, StoredEvent
from services.runtime.outcomes import (
    ABANDONED,
    FINISHED,
    IN_PROGRESS,
    WAITING,
    Joined,
    MatchFacts,
    MoveResult,
    WatchSink,
)
from services.runtime.player_erasure import refuse_deleted
from services.runtime.reading import active_seats
from services.runtime.record import MatchRecord, encode_state
from services.runtime.store import DIGEST_BYTES, request_digest
from services.runtime.tables import TableOptions, new_lifecycle
from services.runtime.watching import MatchWatching

__all__ = [
    "ABANDONED",
    "FINISHED",
    "IN_PROGRESS",
    "WAITING",
    "Joined",
    "MatchFacts",
    "MatchService",
    "MoveResult",
    "WatchSink",
]

# Commit attempts when other writers keep winning the race and the client set no
# expected_version; past this the client gets ABORTED and may retry.
MAX_COMMIT_ATTEMPTS = 20

log = structlog.get_logger("matches")


class MatchService(MatchCommits, MatchWatching):
    # -- creating and seating -----------------------------------------------------------------

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
        await self.store.create(record, self.ttl(record))
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
        name = checks.player_name(player_name)
        checks.request_id_in_range(request_id)
        while True:
            record = await self.load_record(match_id)
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
            checks.waiting(self.status_of(record))
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
        checks.live(self.status_of(record))
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

    # -- moves --------------------------------------------------------------------------------

    async def submit_move(
        self,
        match_id: str,
        token: str | None,
        move: dict[str, Any] | None,
        expected_version: int | None,
        request_id: str,
    ) -> MoveResult:
        move = checks.move_given(move)
        checks.request_id_in_range(request_id)
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
                record, answered = await self.load_for_request(match_id, request if request_id else None)
                self.seats(record).check_current(grant)
                if answered is not None:
                    return await self._replay(record, seat, answered)
                state = self.decode_state(record.state)
                events = self._decide(record, state, seat, move, expected_version)
            else:
                record, state, events = attempt
            previous = (record.version, record.event_seq)
            stored = self.advance(record, state, events)
            # On one Redis the commit wakes the due entry itself: atomic with the commit, and
            # no round trip before or after it.
            folded = self.store.wakes_in_commit
            due = await self.set_clocks(record, seat, state=state, lower=not folded)
            active = active_seats(state, record.status)
            pending = self.players_pending(record, state, stored)
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
                    self.ttl(record),
                    request,
                    RecordedAnswer(active, record.status) if request_id else None,
                    self.feed_entry(record, seat, stored),
                    wake_due_ms=due if folded else None,
                    notices=notices_of(pending),
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
                    return await self._replay(await self.load_record(match_id), seat, result.previous_version)
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
        await self.tell_players(pending, record)
        await self.wake(record, due)
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
        """The move's events, applied to ``state``; raises the refusal the match demands, by
        checks 5 to 8 (services/runtime/checks.py): the pinned version, the status, the seat,
        the move's legality."""
        checks.pinned_version(record.version, expected_version)
        checks.in_progress(self.status_of(record))
        checks.deciding(state, seat, move)
        events: list[Event] = state.apply(seat, move)
        return events

    async def _replay(self, record: MatchRecord, seat: int, version: int) -> MoveResult:
        """The first answer to a retried request id, whole (answered at ``version``, its
        events from the history); next moves as of now."""
        commit = await self.store.commit_of_version(record.match_id, version)
        if commit is None or commit.answer is None:
            raise RuntimeError(f"request answered at version {version}, whose commit is not stored")
        log.info("move_replayed", version=version)
        next_moves: list[dict[str, Any]] = []
        if self.status_of(record) == IN_PROGRESS:
            state = self.state_of(record)
            if seat in state.active_seats():
                next_moves = state.legal_moves(seat)
        events = [e for e in commit.events if e.visible_to(seat)]
        return MoveResult(version, events, commit.answer.active_seats, commit.answer.status, next_moves)


# The ids of moves sent without a request id only need to be unique, never secret: a
# Mersenne Twister seeded from the OS draws them without a system call per move.
_own_ids = random.Random(secrets.randbits(128))


def _own_request_id() -> bytes:
    return _own_ids.getrandbits(DIGEST_BYTES * 8).to_bytes(DIGEST_BYTES, "big")
