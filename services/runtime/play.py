"""PlayMatch's outgoing side: a seat's watch events and its moves' answers, merged into as
few stream messages as the timing allows.

Two producers feed one ``PlayOutbox``: the seat's watch (events and prompts, handed over
by the watch hub as WatchMatch would send them; MatchService.attach_watch) and its moves
(each answered, committed or refused). The stream sends, in one message, everything
queued at that moment. A committed move's answer waits for its version's events (the
watch brings them a moment after the commit lands), so the mover gets one message per
move, not two; it never waits longer than ANSWER_WAIT_S, should the watch be behind. A
stream that sent nothing for ``heartbeat_s`` sends a heartbeat (the first one sooner, at a
point drawn for the stream: heartbeats.py). A stream asked ``with_table``
also queues the tables built from the records its watch was handed (``table``): a message
carries the newest one queued with its events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from services.runtime.errors import SeatRevoked
from services.runtime.heartbeats import first_heartbeat_s
from services.runtime.history import StoredEvent

# The longest a committed move's answer waits for its version's events.
ANSWER_WAIT_S = 1.0

# A stream position: (version, seq).
Cursor = tuple[int, int]
# (the response's answer field, its message, the last event it waits for)
Answer = tuple[str, Any, Cursor]
# (the rev of the record it was built from, the record's last event, the table's message)
Table = tuple[int, Cursor, Any]
Batch = tuple[list[StoredEvent], Answer | None, Table | None]


class PlayOutbox:
    def __init__(self, heartbeat_s: float, heartbeat: Callable[[int], StoredEvent]) -> None:
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._heartbeat_s = heartbeat_s
        # Quiet time before the next heartbeat: drawn for the first (heartbeats.py).
        self._quiet_s = first_heartbeat_s(heartbeat_s)
        # The heartbeat event after events up to a version (MatchService.heartbeat).
        self._heartbeat = heartbeat
        self._sent_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        # The watch's starting position (version, 0): a heartbeat before any event has it.
        self._start: Cursor = (0, 0)
        self._in_flight = 0  # moves sent and not answered yet

    # -- the watch (services.runtime.matches.WatchSink) ----------------------------------

    def started(self, version: int) -> None:
        """The watch starts after events of ``version``; called before any event."""
        self._start = (version, 0)

    def event(self, event: StoredEvent) -> None:
        self._queue.put_nowait(("event", event))

    def ended(self) -> None:
        """The match is over: the stream ends once what is queued is sent."""
        self._queue.put_nowait(("ended", None))

    def table(self, table: Table) -> None:
        """The table after the events queued so far (the hub hands a record after them)."""
        self._queue.put_nowait(("table", table))

    def revoked(self) -> None:
        """The seat's token was revoked: the stream ends with that status, nothing more sent."""
        self._queue.put_nowait(("failed", SeatRevoked()))

    # -- the moves -----------------------------------------------------------------------

    def moving(self) -> None:
        """A move was sent: its answer is waited for, even after the match's end."""
        self._in_flight += 1

    def committed(self, response: Any, last_event: Cursor) -> None:
        """A committed move's answer, sent with (or after) its last event ``last_event``."""
        self._queue.put_nowait(("answer", ("committed", response, last_event)))

    def refused(self, refusal: Any) -> None:
        self._queue.put_nowait(("answer", ("refused", refusal, (-1, 0))))

    def failed(self, error: Exception) -> None:
        """The stream ends with ``error``'s status."""
        self._queue.put_nowait(("failed", error))

    # -- the stream ----------------------------------------------------------------------

    async def batches(self) -> AsyncIterator[Batch]:
        """What to send, message by message: events in order, and at most one answer."""
        loop = asyncio.get_running_loop()
        self._sent_at = loop.time()
        # One timer for the stream's life, moved on lazily (_beat), rather than one armed
        # and cancelled around every wait: a move's messages are the hot path.
        self._timer = loop.call_later(self._quiet_s, self._beat)
        try:
            async for batch in self._batches():
                self._sent_at = loop.time()
                yield batch
        finally:
            self._timer.cancel()

    def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        quiet = loop.time() - self._sent_at
        if quiet >= self._quiet_s:
            self._queue.put_nowait(("heartbeat", None))
            self._sent_at = loop.time()  # the heartbeat's message is about to go
            self._quiet_s = self._heartbeat_s
            quiet = 0.0
        self._timer = loop.call_later(self._quiet_s - quiet, self._beat)

    async def _batches(self) -> AsyncIterator[Batch]:
        events: list[StoredEvent] = []
        answer: Answer | None = None
        table: Table | None = None
        seen: Cursor = self._start  # the furthest event sent or batched
        ended = False
        while True:
            if not self._queue.empty():
                kind, item = self._queue.get_nowait()
            elif (answer is not None and answer[2] > seen and not ended) or (ended and self._in_flight):
                # An answer waits for its version's events; after the match's last event,
                # the answer of a move still in flight (the mover's last) is waited for.
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop a
                # cancellation that lands as the queue hands over an item (watching.py, _live).
                try:
                    async with asyncio.timeout(ANSWER_WAIT_S):
                        kind, item = await self._queue.get()
                except TimeoutError:
                    if events or answer is not None:
                        yield events, answer, table
                    if ended:
                        return
                    events, answer, table = [], None, None
                    continue
            elif events or answer is not None:
                yield events, answer, table
                events, answer, table = [], None, None
                continue
            elif ended:
                return
            else:
                kind, item = await self._queue.get()
            if kind == "event":
                events.append(item)
                seen = max(seen, (item.version, item.seq))
            elif kind == "heartbeat":
                events.append(self._heartbeat(seen[0]))
            elif kind == "answer":
                self._in_flight -= 1
                if answer is not None:  # one answer per message: the earlier one goes first
                    yield events, answer, table
                    events, table = [], None
                answer = item
            elif kind == "table":
                table = item
            elif kind == "failed":
                raise item
            else:  # ended
                ended = True
