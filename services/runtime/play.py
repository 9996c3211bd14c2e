"""PlayMatch's outgoing side: a seat's watch events and its moves' answers, merged into as
few stream messages as the timing allows.

Two producers feed one ``PlayOutbox``: the seat's watch (events, prompts, heartbeats, as
WatchMatch would send them) and its moves (each answered, committed or refused). The
stream sends, in one message, everything queued at that moment. A committed move's
answer waits for its version's events (the watch brings them a moment after the commit
lands, one by one), so the mover gets one message per move, not two; it never waits
longer than ANSWER_WAIT_S, should the watch be behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from services.runtime.store import StoredEvent

# The longest a committed move's answer waits for its version's events.
ANSWER_WAIT_S = 1.0

# A stream position: (version, seq).
Cursor = tuple[int, int]
# (the response's answer field, its message, the last event it waits for)
Answer = tuple[str, Any, Cursor]
Batch = tuple[list[StoredEvent], Answer | None]


class PlayOutbox:
    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def committed(self, response: Any, last_event: Cursor) -> None:
        """A committed move's answer, sent with (or after) its last event ``last_event``."""
        self._queue.put_nowait(("answer", ("committed", response, last_event)))

    def refused(self, refusal: Any) -> None:
        self._queue.put_nowait(("answer", ("refused", refusal, (-1, 0))))

    def failed(self, error: Exception) -> None:
        """The stream ends with ``error``'s status."""
        self._queue.put_nowait(("failed", error))

    async def pump(self, events: AsyncGenerator[StoredEvent, None]) -> None:
        """The seat's watch into the outbox, then the end of the stream (the match is over)."""
        try:
            async for event in events:
                self._queue.put_nowait(("event", event))
        except Exception as error:
            self.failed(error)
        else:
            self._queue.put_nowait(("ended", None))

    async def batches(self) -> AsyncIterator[Batch]:
        """What to send, message by message: events in order, and at most one answer."""
        events: list[StoredEvent] = []
        answer: Answer | None = None
        seen: Cursor = (-1, 0)  # the furthest event sent or batched
        while True:
            if not events and answer is None:
                kind, item = await self._queue.get()
            elif not self._queue.empty():
                kind, item = self._queue.get_nowait()
            elif answer is None or answer[2] <= seen:
                yield events, answer
                events, answer = [], None
                continue
            else:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop a
                # cancellation that lands as the queue hands over an item (watch_hub.py).
                try:
                    async with asyncio.timeout(ANSWER_WAIT_S):
                        kind, item = await self._queue.get()
                except TimeoutError:
                    yield events, answer
                    events, answer = [], None
                    continue
            if kind == "event":
                events.append(item)
                seen = max(seen, (item.version, item.seq))
            elif kind == "answer":
                if answer is not None:  # one answer per message: the earlier one goes first
                    yield events, answer
                    events = []
                answer = item
            elif kind == "failed":
                raise item
            else:  # ended
                if events or answer is not None:
                    yield events, answer
                return
