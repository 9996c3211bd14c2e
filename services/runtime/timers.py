"""The scheduler every replica runs: fires turn deadlines, plays server bots, reaps idle
matches, and reports stalled ones (services/runtime/stalls.py).

A tick claims the game's due entries (``services/runtime/due.py``): each is held by a lease
until which no other replica sees it as due, so one replica acts; if that replica dies
mid-way, the entry becomes due again and another takes over. What it does is committed with
the match's compare-and-set, and the record says what is due, so a second firing of the same
deadline finds it already handled. Then it settles the entry from the record it holds, which
is fresh: its own commits do not wake the entry, everyone else's do.

On a Redis Cluster it also sweeps the game's outboxes (services/runtime/outbox.py) every
``OUTBOX_SWEEP_EVERY_S``: the activity notices of commits whose committer died before it
appended them, and those matches' entries in their players' index.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from services.bots.adapters import adapter
from services.bots.decide import seat_information
from services.bots.levels import SEARCH_LEVELS
from services.engine import Event, JsonDict
from services.runtime import metrics
from services.runtime.bot_pool import IN_FLIGHT_PER_WORKER, BotPool, RoundEvents, bot_seed
from services.runtime.bots import bot_move, timeout_move
from services.runtime.lifecycle import abandon, left_in_progress
from services.runtime.matches import IN_PROGRESS, WAITING, MatchService
from services.runtime.outbox import GRACE_MS
from services.runtime.record import MatchRecord
from services.runtime.stalls import StallWatch
from services.runtime.tables import POLICY_ABANDON
from services.runtime.tasks import cancel_until_done

log = structlog.get_logger("scheduler")

CLAIM_BATCH = 50
# Server moves in a row for one match within one claim (bots answering bots).
MAX_STEPS_PER_CLAIM = 200
RETRY_AFTER_ERROR_S = 1.0
# A bot due while every bot worker is busy is looked at again later, not at every tick: each
# look loads and decodes its match on the event loop. Later the more bots wait: this much per
# decision the workers can hold at once, per waiting bot, at most PARKED_RECHECK_MAX_MS, so
# a hundred bot matches on one worker cost the loop a few looks a second, not hundreds.
BUSY_WORKERS_RETRY_MS = 500
PARKED_RECHECK_MAX_MS = 10_000
# A sweep is one script call when no committer died: a small share of the grace it waits out.
OUTBOX_SWEEP_EVERY_S = 1.0


class Scheduler:
    # The event loop keeps only weak references to tasks: the running schedulers live here.
    running: set[asyncio.Task[None]] = set()  # noqa: RUF012

    def __init__(self, service: MatchService) -> None:
        self.service = service
        self.settings = service.settings
        self.due = service.due
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.round_events = RoundEvents(service.store)
        self._waiting_for_workers: set[str] = set()
        # Matches whose bot found the workers busy, and when (monotonic seconds).
        self._parked: dict[str, float] = {}
        self.stall_watch = StallWatch(service, lambda: self._stopping)
        self._stall_task: asyncio.Task[None] | None = None
        # Fires a tick stopped waiting for (a bot deciding in a worker): they hold their leases.
        self._fires: set[asyncio.Task[None]] = set()

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(), name=f"scheduler-{self.service.game.name}")
        self.running.add(self._task)
        self._task.add_done_callback(self.running.discard)
        self._stall_task = asyncio.create_task(
            self.stall_watch.run(), name=f"stalls-{self.service.game.name}"
        )
        self.running.add(self._stall_task)
        self._stall_task.add_done_callback(self.running.discard)
        return self._task

    async def stop(self) -> None:
        self._stopping = True
        await cancel_until_done([t for t in (self._task, self._stall_task) if t is not None])
        await cancel_until_done(list(self._fires))

    async def run(self) -> None:
        next_sweep = time.monotonic()
        while not self._stopping:
            try:
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + OUTBOX_SWEEP_EVERY_S
                    await self.sweep_outboxes()
                claimed = await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if self._stopping:
                    return
                log.warning("scheduler_tick_failed", error=repr(error))
                await asyncio.sleep(RETRY_AFTER_ERROR_S)
                continue
            if claimed < CLAIM_BATCH:
                await asyncio.sleep(self.settings.scheduler_tick_ms / 1000)

    async def sweep_outboxes(self, grace_ms: int = GRACE_MS) -> int:
        """Deliver the notices that commits older than ``grace_ms`` left in their match's outbox
        (their committer died first): into the activity stream (a cluster), the match indexed
        for its players and the notices still current pushed, as the committer would have.
        How many notices."""
        service = self.service

        async def tell(match_id: str, entries: list[dict[str, str]]) -> None:
            try:
                record = await service.store.load(match_id)
                if record is not None:
                    await service.tell_players_again(record, entries)
            except Exception:
                # Its notices are in the stream; its index catches up at its next commit, if any.
                log.exception("outbox_tell_failed", match_id=match_id)

        delivered = await service.activity.outbox.sweep(self.settings.game_stream_maxlen, tell, grace_ms)
        return sum(delivered.values())

    async def claim(self) -> tuple[list[str], str]:
        """Hold every due match (up to a batch): their ids and the lease score."""
        return await self.due.claim(self.settings.scheduler_lease_ms, CLAIM_BATCH)

    async def tick(self) -> int:
        """Claim what is due and fire it. A tick waits for its fires at most a tick's time:
        one whose bot decides in a worker (seconds of wall time on a busy machine) goes on
        alone, holding its lease, so the next tick fires the deadlines of human seats on time."""
        match_ids, lease = await self.claim()
        fires = [asyncio.create_task(self.fire(match_id, lease)) for match_id in match_ids]
        for fire in fires:
            self._fires.add(fire)
            fire.add_done_callback(self._fire_done)
        if fires:
            await asyncio.wait(fires, timeout=self.settings.scheduler_tick_ms / 1000)
        return len(match_ids)

    def _fire_done(self, fire: asyncio.Task[None]) -> None:
        self._fires.discard(fire)
        if not fire.cancelled() and fire.exception() is not None and not self._stopping:
            log.warning("scheduler_fire_failed", error=repr(fire.exception()))

    async def fire(self, match_id: str, lease: str) -> None:
        """Do what is due for one claimed match, then settle its entry."""
        # Act only within the first half of the lease, so the settle lands before it ends.
        until = time.monotonic() + self.settings.scheduler_lease_ms / 2000
        record = await self.service.store.load(match_id)
        now_ms = 0
        for _ in range(MAX_STEPS_PER_CLAIM):
            if record is None:
                break
            now_ms = await self.service.redis_now_ms()
            acted = await self.act(record, now_ms)
            if acted is None:
                # Nothing due yet: wait here for what is due within a tick (a bot's think
                # time) rather than settle and be claimed again.
                wait_s = (int(self._next_due(record) or now_ms) - now_ms) / 1000
                if wait_s <= 0 or wait_s > self.settings.scheduler_tick_ms / 1000:
                    break
                if time.monotonic() + wait_s > until:
                    break
                await asyncio.sleep(wait_s)
            elif not acted:  # another write won: see what is due now
                record = await self.service.store.load(match_id)
            if time.monotonic() > until:
                break
        next_due = self._next_due(record)
        if match_id in self._waiting_for_workers and next_due:
            next_due = str(max(int(next_due), now_ms + self._park(match_id)))
        else:
            self._parked.pop(match_id, None)
        self._waiting_for_workers.discard(match_id)
        await self.due.settle(match_id, lease, next_due)

    def _park(self, match_id: str) -> int:
        """Milliseconds until a bot waiting for a worker is looked at again."""
        now = time.monotonic()
        self._parked[match_id] = now
        if len(self._parked) % 64 == 0:  # forget matches looked at no more (ended, taken elsewhere)
            stale = now - 2 * PARKED_RECHECK_MAX_MS / 1000
            self._parked = {m: t for m, t in self._parked.items() if t > stale}
        ahead = len(self._parked) / (self.pool.workers * IN_FLIGHT_PER_WORKER)
        return int(min(PARKED_RECHECK_MAX_MS, BUSY_WORKERS_RETRY_MS * max(1.0, ahead)))

    def _next_due(self, record: MatchRecord | None) -> str:
        if record is None or record.status not in (WAITING, IN_PROGRESS):
            return ""
        idle_due = int((record.updated_at + self.service.idle_limit_s(record)) * 1000)
        due = self.service.seats(record).next_due_ms()
        return str(idle_due if due is None else min(due, idle_due))

    async def act(self, record: MatchRecord, now_ms: int) -> bool | None:
        """One server action on ``record`` if one is due at ``now_ms``: True when committed,
        False when another write won the race, None when nothing is due."""
        if record.status not in (WAITING, IN_PROGRESS):
            return None
        service = self.service
        if (record.updated_at + self.service.idle_limit_s(record)) * 1000 <= now_ms:
            log.info("match_reaped", match_id=record.match_id)
            return await service.commit_events(record, abandon(service, record, "idle"), wake=False)
        if record.status != IN_PROGRESS:
            return None
        seats = service.seats(record)
        graced = seats.graced_seats(now_ms)
        if graced:
            # Disconnected past the reconnection grace: on_leave applies, as to a leave.
            log.info("seat_grace_over", match_id=record.match_id, seat=graced[0])
            events = left_in_progress(service, record, graced[0], "disconnected")
            return await service.commit_events(record, events, wake=False)
        state = service.decode_state(record.state)
        due = [s for s in seats.due_seats(now_ms) if s in state.active_seats()]
        if not due:
            return None
        seat = due[0]
        level = seats.bot(seat)
        if level:
            if self.searching(level) and self.pool.busy():
                self._waiting_for_workers.add(record.match_id)
                return None  # left due: claimed again later, when a worker may be free
            move = await self.bot_decision(record, state, seat, level)
            return await service.commit_server_move(record, seat, move, [], timed_out=False)
        consecutive = seats.timeouts(seat) + 1
        timed_out = Event({"timed_out": {"seat": seat, "consecutive": consecutive}})
        log.info("turn_timed_out", match_id=record.match_id, seat=seat, consecutive=consecutive)
        options = seats.options
        if consecutive >= options.max_timeouts and options.on_timeouts == POLICY_ABANDON:
            return await service.commit_events(
                record, [timed_out, *abandon(service, record, "timeouts")], wake=False
            )
        hand_over = options.bot_level if consecutive >= options.max_timeouts else ""
        move = timeout_move(state, seat)
        return await service.commit_server_move(record, seat, move, [timed_out], True, hand_over)

    def searching(self, level: str) -> bool:
        return level in SEARCH_LEVELS and adapter(self.service.game.name) is not None

    @property
    def pool(self) -> BotPool:
        settings = self.settings
        return BotPool.shared(settings.bot_workers, settings.bot_worker_priority, settings.bot_cpus)

    async def bot_decision(self, record: MatchRecord, state: Any, seat: int, level: str) -> JsonDict:
        """A bot's move. A searching level decides in a worker process from the seat's view and
        the events addressed to it; if that fails, the bot plays its policy move."""
        game = self.service.game.name
        if not self.searching(level):
            return bot_move(state, seat, level, record.seed, record.version)
        try:
            events = await self.round_events.of(record.match_id)
            view, history = seat_information(state, seat, events)
            move, cpu_s = await self.pool.decide(
                game, view, seat, level, bot_seed(record.match_id, record.version, seat), history
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("bot_search_failed", match_id=record.match_id, seat=seat, error=repr(error))
            return timeout_move(state, seat)
        metrics.bot_decided(game, level, cpu_s)
        return move
