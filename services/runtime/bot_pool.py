"""Searching bots decide in worker processes, never on a replica's event loop.

The scheduler (``services/runtime/timers.py``) hands a worker only the seat's view and the
events addressed to it; the search stops at its level's CPU budget (``services/bots/levels.py``)
and a worker gives way to the replica's tasks (``services/bots/worker.py``, ``give_way``). One
pool per process, started at the first searching decision.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import structlog

from services.bots import worker
from services.engine import JsonDict, rng
from services.runtime.history import StoredEvent
from services.runtime.store import MatchStore

log = structlog.get_logger("scheduler")

# Beyond this, a decision is given up and the policy move played instead. The budget is CPU
# time and a worker gives way to everything else, so on a machine busy with other work a decision
# takes many times its budget in wall time: this only catches a worker that is stuck or starved.
# A decision given up still holds its worker until its search ends, and counts until then.
DECISION_TIMEOUT_S = 30.0
# Decisions handed to the pool at once, per worker: one running, one ready to start. More
# would only wait in the pool's queue; the scheduler leaves them due and comes back.
IN_FLIGHT_PER_WORKER = 2
ROUND_START = "round_started"


class BotPool:
    _shared: BotPool | None = None

    def __init__(self, workers: int, priority: str = worker.IDLE, cpus: frozenset[int] = frozenset()) -> None:
        self.workers = workers
        self.priority = priority
        self.cpus = cpus
        self.in_flight = 0
        self.decision_timeout_s = DECISION_TIMEOUT_S
        self._executor: ProcessPoolExecutor | None = None

    @classmethod
    def shared(cls, workers: int, priority: str = worker.IDLE, cpus: frozenset[int] = frozenset()) -> BotPool:
        """The process's pool (a replica is one process; tests run several in one)."""
        if cls._shared is None:
            cls._shared = cls(workers, priority, cpus)
        return cls._shared

    def _started(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # Spawned, not forked: a fork of a process running grpc's threads is unsafe.
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=worker.initialize,
                initargs=(self.priority, self.cpus),
            )
        return self._executor

    def busy(self) -> bool:
        """Every worker has a decision and one waiting."""
        return self.in_flight >= self.workers * IN_FLIGHT_PER_WORKER

    async def decide(
        self, game: str, view: JsonDict, seat: int, level: str, seed: int, history: list[JsonDict] | None
    ) -> tuple[JsonDict, float]:
        """The bot's move and the worker's CPU seconds for it."""
        executor = self._started()
        try:
            submitted = executor.submit(worker.decide_timed, game, view, seat, level, seed, history)
        except BrokenProcessPool:
            self._drop(executor)
            executor = self._started()
            submitted = executor.submit(worker.decide_timed, game, view, seat, level, seed, history)
        decision = asyncio.wrap_future(submitted)
        # A decision counts until its worker is done with it, answered or given up: one given
        # up still holds the worker, and the next ones would only queue behind it.
        self.in_flight += 1
        decision.add_done_callback(functools.partial(self._done, executor))
        try:
            return await asyncio.wait_for(asyncio.shield(decision), self.decision_timeout_s)
        except BaseException:
            submitted.cancel()  # succeeds only while it is queued; a search ends by its budget
            raise

    def _done(self, executor: ProcessPoolExecutor, decision: asyncio.Future[tuple[JsonDict, float]]) -> None:
        self.in_flight -= 1
        if decision.cancelled():
            return
        # A given-up decision's failure is not news, but a dead worker breaks its whole pool
        # (every decision after it would fail): the next decision starts a new one.
        if isinstance(decision.exception(), BrokenProcessPool):
            self._drop(executor)

    def _drop(self, executor: ProcessPoolExecutor) -> None:
        """Let go of a pool whose worker died (killed, out of memory): once broken, a pool
        takes no more work."""
        if self._executor is executor:
            log.warning("bot_workers_restarted", workers=self.workers)
            executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def close(self) -> None:
        """Stop the workers, leaving their decisions under way."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    @classmethod
    def close_shared(cls) -> None:
        """Stop the process's workers (when the replica stops)."""
        if cls._shared is not None:
            cls._shared.close()
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
