"""Searching bots decide in worker processes, never on a replica's event loop.

The scheduler (``services/runtime/timers.py``) hands a worker only the seat's view and the
events addressed to it; the search stops at its level's CPU budget (``services/bots/levels.py``)
and a worker runs at a lower priority than the replica. One pool per process, started at the
first searching decision.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor

from services.bots import worker
from services.engine import JsonDict, rng
from services.runtime.history import StoredEvent
from services.runtime.store import MatchStore

# Beyond this, a decision is given up and the policy move played instead. The budget is CPU
# time and a worker runs at a low priority, so on a machine busy with other work a decision
# takes many times its budget in wall time: this only catches a worker that is stuck.
DECISION_TIMEOUT_S = 30.0
# Decisions handed to the pool at once, per worker: one running, one ready to start. More
# would only wait in the pool's queue; the scheduler leaves them due and comes back.
IN_FLIGHT_PER_WORKER = 2
ROUND_START = "round_started"


class BotPool:
    _shared: BotPool | None = None

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.in_flight = 0
        self._executor: ProcessPoolExecutor | None = None

    @classmethod
    def shared(cls, workers: int) -> BotPool:
        """The process's pool (a replica is one process; tests run several in one)."""
        if cls._shared is None:
            cls._shared = cls(workers)
        return cls._shared

    def _started(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # Spawned, not forked: a fork of a process running grpc's threads is unsafe.
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=worker.initialize
            )
        return self._executor

    def busy(self) -> bool:
        """Every worker has a decision and one waiting."""
        return self.in_flight >= self.workers * IN_FLIGHT_PER_WORKER

    async def decide(
        self, game: str, view: JsonDict, seat: int, level: str, seed: int, history: list[JsonDict] | None
    ) -> tuple[JsonDict, float]:
        """The bot's move and the worker's CPU seconds for it."""
        loop = asyncio.get_running_loop()
        self.in_flight += 1
        try:
            future = loop.run_in_executor(
                self._started(), worker.decide_timed, game, view, seat, level, seed, history
            )
            return await asyncio.wait_for(future, DECISION_TIMEOUT_S)
        finally:
            self.in_flight -= 1

    @classmethod
    def close_shared(cls) -> None:
        """Stop the process's workers (when the replica stops)."""
        if cls._shared is not None and cls._shared._executor is not None:
            cls._shared._executor.shutdown(wait=False, cancel_futures=True)
        cls._shared = None


def bot_seed(match_id: str, version: int, seat: int) -> int:
    """A decision's seed: from the public match id, never from the match seed that deals."""
    return rng(0, "bot", match_id, version, seat).getrandbits(62)


class RoundEvents:
    """The events of the current round of matches bots play here, read incrementally (a
    searching bot's every decision needs them; the whole history would grow with the match)."""

    def __init__(self, store: MatchStore, size: int = 4096) -> None:
        self.store = store
        self.size = size
        self._kept: OrderedDict[str, list[StoredEvent]] = OrderedDict()

    async def of(self, match_id: str) -> list[StoredEvent]:
        kept = self._kept.pop(match_id, [])
        after = (kept[-1].version, kept[-1].seq) if kept else (0, 0)
        new, _ = await self.store.events_after(match_id, after, with_record=False)
        events = _from_round_start(kept + new)
        self._kept[match_id] = events
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return events

    def forget(self, match_id: str) -> None:
        self._kept.pop(match_id, None)


def _from_round_start(events: list[StoredEvent]) -> list[StoredEvent]:
    for i in range(len(events) - 1, -1, -1):
        if ROUND_START in events[i].body:
            return events[i:]
    return events
