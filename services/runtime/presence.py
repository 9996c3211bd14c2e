"""Presence: whether each seat's player has a stream open (WatchMatch or PlayMatch, with
the seat's current token) on any replica, kept in the match record and told to the table.

A stream's opening and closing each commit a count of the seat's open streams
(``tables.Seats.stream_opened`` / ``stream_closed``) with the compare-and-set of every
match write; the first stream to open and the last to close also commit a
``seat_connection`` event. A stream of a revoked token counts for nothing: a rejoin, a
leave or a bot resets the count with the token generation. When the last stream of a
match in progress closes and the match has a reconnection grace, the scheduler applies
``on_leave`` to the seat once the grace has run out (``Scheduler.act``).

The commits run in the background, one stream's in order (its closing after its opening),
so a stream starts and ends without waiting for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

from services.engine import Event
from services.runtime import auth
from services.runtime.errors import ServiceError
from services.runtime.matches import IN_PROGRESS, WAITING, MatchService

log = structlog.get_logger("presence")

# A commit that keeps losing the race gives up after this many tries (the count is then off
# by one until the seat's token changes hands).
MAX_ATTEMPTS = 20
# How long a replica shutting down waits for its streams' closing commits.
SHUTDOWN_WAIT_S = 2.0
# Counts committed at once by one replica: thousands of streams closing together (a gateway
# restarting, a crowd of browsers leaving) would otherwise each take a Redis connection at
# the same moment, run the pool out and fail, leaving their seats counted as connected.
MAX_CONCURRENT_COUNTS = 32


class Stream:
    """One open stream of a seat: ``close()`` (idempotent) counts it out."""

    def __init__(self, presence: Presence, match_id: str, grant: auth.SeatGrant | None) -> None:
        self._presence, self._match_id, self._grant = presence, match_id, grant
        self._opened = None if grant is None else presence.spawn(self._count(True, None))
        self._closed = False

    def close(self) -> None:
        if self._closed or self._grant is None:
            return
        self._closed = True
        self._presence.spawn(self._count(False, self._opened))

    async def _count(self, opened: bool, after: asyncio.Task[None] | None) -> None:
        if after is not None:
            await asyncio.wait([after])
        assert self._grant is not None
        try:
            await self._presence.count(self._match_id, self._grant, opened)
        except ServiceError:
            pass  # no such match (any more): nothing to count
        except Exception:
            log.exception("presence_failed", match_id=self._match_id, opened=opened)


class Presence:
    def __init__(self, service: MatchService) -> None:
        self.service = service
        self._tasks: set[asyncio.Task[None]] = set()
        self._counting = asyncio.Semaphore(MAX_CONCURRENT_COUNTS)
        self._closed = False

    def stream(self, match_id: str, token: str | None) -> Stream:
        """A stream just opened by ``token`` (None: a spectator, not counted)."""
        grant = None if token is None else self.service.grant(token, match_id)
        return Stream(self, match_id, grant)

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        if self._closed:
            # The replica has stopped: a count now would outlive its loop and its Redis
            # client (the seat's count is then off until the seat changes hands).
            work.close()
            work = asyncio.sleep(0)
        task = asyncio.ensure_future(work)
        self._tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        """A replica shutting down: its streams' last commits, briefly waited for, those of
        streams that end meanwhile included; none is started afterwards."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SHUTDOWN_WAIT_S
        while self._tasks and loop.time() < deadline:
            await asyncio.wait(list(self._tasks), timeout=deadline - loop.time())
        self._closed = True
        late = list(self._tasks)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def count(self, match_id: str, grant: auth.SeatGrant, opened: bool) -> None:
        """Commit one stream of ``grant``'s seat opening or closing."""
        async with self._counting:
            await self._count(match_id, grant, opened)

    async def _count(self, match_id: str, grant: auth.SeatGrant, opened: bool) -> None:
        service, seat = self.service, grant.seat
        for _ in range(MAX_ATTEMPTS):
            record = await service.load_record(match_id)
            status = service.status_of(record)
            seats = service.seats(record)
            if status not in (WAITING, IN_PROGRESS) or seat >= record.players:
                return
            if seats.seats[seat]["gen"] != grant.generation or seats.bot(seat):
                return  # a revoked token's stream: the seat's count started again without it
            if opened:
                changed = seats.stream_opened(seat)
            else:
                now_ms = await service.redis_now_ms()
                changed = seats.stream_closed(seat, now_ms, status == IN_PROGRESS)
            events = [Event({"seat_connection": {"seat": seat, "connected": opened}})] if changed else []
            if await service.commit_events(record, events):
                if changed:
                    name = "seat_connected" if opened else "seat_disconnected"
                    log.info(name, match_id=match_id, seat=seat)
                return
        log.warning("presence_gave_up", match_id=match_id, seat=seat, opened=opened)
