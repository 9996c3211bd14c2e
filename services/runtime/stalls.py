"""The stall watchdog each replica's scheduler runs: a live match whose seat to move is
watched on this replica but has had no prompt for the match's current version, with
nothing due (no turn timer, no bot), stays silent for good: nobody is told to move and
the server will not act until the idle reaper. Such matches are reported (a warning per
match and version, and the ``mogames_stalled_matches`` gauge) so an operator hears of a
missed prompt instead of a player.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from services.runtime import metrics
from services.runtime.matches import IN_PROGRESS, MatchService

log = structlog.get_logger("scheduler")

# Looks at most this often, and at least twice per MOGAMES_STALL_AFTER_S.
MOST_EVERY_S = 30.0


class StallWatch:
    def __init__(self, service: MatchService, stopping: Callable[[], bool]) -> None:
        self.service = service
        self.stall_after_s = service.settings.stall_after_s
        self._stopping = stopping
        self._reported: dict[str, int] = {}  # match id -> the version last warned about

    async def run(self) -> None:
        every_s = min(MOST_EVERY_S, self.stall_after_s / 2)
        while not self._stopping():
            await asyncio.sleep(every_s)
            try:
                await self.look()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("stall_watch_failed", error=repr(error))

    async def look(self) -> list[str]:
        """The matches stalled now (reported); the gauge is set to their count."""
        service = self.service
        now_s = await service.redis_now_ms() / 1000
        stalled = []
        for match_id, prompted in service.hub.prompted_seats().items():
            record = await service.store.load(match_id)
            if record is None or record.status != IN_PROGRESS:
                continue
            if now_s - record.updated_at < self.stall_after_s:
                continue
            if service.seats(record).next_due_ms() is not None:
                continue  # a timer or a bot will act: not silent
            active = service.decode_state(record.state).active_seats()
            unprompted = [s for s in active if prompted.get(s, record.version) < record.version]
            if not unprompted:
                continue
            stalled.append(match_id)
            if self._reported.get(match_id) != record.version:
                self._reported[match_id] = record.version
                log.warning(
                    "match_stalled",
                    match_id=match_id,
                    version=record.version,
                    seats=unprompted,
                    silent_s=round(now_s - record.updated_at),
                )
        self._reported = {m: v for m, v in self._reported.items() if m in stalled}
        metrics.STALLED_MATCHES.labels(game=service.game.name).set(len(stalled))
        return stalled
