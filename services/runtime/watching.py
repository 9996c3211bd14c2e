"""Watching a match: a caller's events after its cursor, then live ones (with the seat's prompts
and heartbeats) until the match ends, on a WatchMatch stream or handed to a PlayMatch's sink."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable

from services.runtime import auth
from services.runtime.errors import InvalidArgument, SeatRevoked
from services.runtime.heartbeats import first_heartbeat_s
from services.runtime.history import StoredEvent
from services.runtime.outcomes import FINAL_EVENT, LIVE, WatchSink
from services.runtime.reading import MatchReader
from services.runtime.record import MatchRecord
from services.runtime.watch_hub import Cursor, Settled, WatchHub

# A caller's table built from a record its watch was handed, with the seat it was admitted as.
SeatSettled = Callable[[MatchRecord, auth.SeatGrant | None], None]


class MatchWatching(MatchReader):
    """Watches of one game's matches (the base of ``MatchService``)."""

    async def watch(
        self,
        match_id: str,
        token: str | None,
        after_version: int | None,
        after_seq: int,
        settled: SeatSettled | None = None,
    ) -> AsyncGenerator[StoredEvent, None]:
        """The caller's events after the cursor (README, "Watching a match") in order, then
        live ones with the seat's prompts and heartbeats, until the match ends. ``settled``
        as for ``attach_watch``."""
        grant, after, history = await self._open_watch(match_id, token, after_version, after_seq)
        if history is not None:
            for past in history:
                yield past
            return
        last_version = after[0]
        seat, generation = (None, 0) if grant is None else (grant.seat, grant.generation)
        on_record = None if settled is None else (lambda record: settled(record, grant))
        live = _live(self.hub, match_id, seat, after, self.settings.heartbeat_s, generation, on_record)
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
        self,
        match_id: str,
        token: str | None,
        after_version: int | None,
        after_seq: int,
        sink: WatchSink,
        settled: SeatSettled | None = None,
    ) -> Callable[[], None]:
        """What ``watch`` yields but its heartbeats, handed to ``sink`` as it comes, then
        ``sink.ended()`` after the last event; the sink sends heartbeats itself (it knows
        when its stream last sent anything). ``settled`` gets the record after each read or
        commit that gave the sink anything, with the caller's grant (watch_hub.Settled).
        Returns what detaches it from the hub."""
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

        on_record = None if settled is None else (lambda record: settled(record, grant))
        if grant is None:
            return self.hub.attach(match_id, None, after, deliver, settled=on_record)
        return self.hub.attach(
            match_id, grant.seat, after, deliver, grant.generation, sink.revoked, on_record
        )

    async def _open_watch(
        self, match_id: str, token: str | None, after_version: int | None, after_seq: int
    ) -> tuple[auth.SeatGrant | None, tuple[int, int], list[StoredEvent] | None]:
        """A watch's caller (its seat grant, None for a spectator) and starting position; and,
        for a match that is over (nothing will be added), its history after that position as
        the caller may see it, all there is to send (None: the match is live). That history
        ends with ``match_ended`` whatever the cursor: past it, the event is sent again."""
        grant, record = await self.admit(match_id, token)
        seat = None if grant is None else grant.seat
        after = _watch_start(record, after_version, after_seq)
        # The stored status: a match idle past the reaper's time is still live until the
        # reaper commits its end, which the watch then delivers.
        if record.status in LIVE:
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


async def _live(
    hub: WatchHub,
    match_id: str,
    seat: int | None,
    after: Cursor,
    heartbeat_s: float,
    generation: int,
    settled: Settled | None,
) -> AsyncGenerator[StoredEvent | None, None]:
    """The events ``seat`` may see after ``after``, in order, and its prompts, as the hub
    hands them over, until the seat's token generation ``generation`` is revoked (then
    ``SeatRevoked``); ``None`` after ``heartbeat_s`` seconds without either."""
    queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue()
    detach = hub.attach(
        match_id, seat, after, queue.put_nowait, generation, lambda: queue.put_nowait(None), settled
    )
    quiet_s = first_heartbeat_s(heartbeat_s)
    try:
        while True:
            if not queue.empty():
                # A commit hands over its events and prompts at once: the rest of them
                # need no timer (arming one per event was a measurable part of a move).
                event = queue.get_nowait()
            else:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a
                # cancellation that lands as the queue hands over an event, and the watch
                # would go on.
                try:
                    async with asyncio.timeout(quiet_s):
                        event = await queue.get()
                except TimeoutError:
                    quiet_s = heartbeat_s
                    yield None
                    continue
            if event is None:
                raise SeatRevoked()
            yield event
    finally:
        detach()


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
