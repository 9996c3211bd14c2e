"""A bot deciding in a worker holds up nothing else the scheduler does: its replica's next
tick fires a human seat's deadline while the bot's decisions are still under way (real Redis,
a real worker process; the scheduler driven by hand, as in tests/test_lifecycle_timers.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from deploy.redis_server import running_redis
from services.catalog import rules_module
from services.runtime.lifecycle import Lifecycle
from services.runtime.matches import MatchService
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from services.runtime.timers import Scheduler
from tests.conftest import service_settings

GAME = "happy_mochi"


async def test_a_human_deadline_fires_while_a_bot_match_is_deciding():
    with running_redis() as url:
        # A long lease: one claim of the bot match plays its bots' moves for seconds.
        quick = {"bot_think_ms": 0, "scheduler_tick_ms": 50, "scheduler_lease_ms": 30_000}
        settings = dataclasses.replace(service_settings(GAME, url), **quick)
        client = connect(url)
        service = MatchService(rules_module(GAME), MatchStore(client, GAME), settings)
        scheduler = Scheduler(service)
        lifecycle = Lifecycle(service)
        bots = await lifecycle.create_match(2, 7, {}, {"bot_seats": [0, 1], "bot_level": "hard"})
        humans = await lifecycle.create_match(2, 12, {}, {"turn_seconds": 1})
        for name in ("ann", "bob"):
            await service.join_match(humans.match_id, name)
        try:
            assert await asyncio.wait_for(scheduler.tick(), 10) == 1  # the bot match
            (bot_fire,) = scheduler._fires
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                await asyncio.wait_for(scheduler.tick(), 10)
                record = await service.store.load(humans.match_id)
                assert record is not None
                if record.version >= 1:
                    break
                await asyncio.sleep(0.05)
            assert record.version >= 1, "the human seat's deadline did not fire"
            assert not bot_fire.done(), "the bots' claim ended first: nothing was shown"
            # The bots' claim is at a decision (a worker's start or its search), or past one.
            bot_record = await service.store.load(bots.match_id)
            assert bot_record is not None
            assert scheduler.pool.in_flight == 1 or bot_record.version >= 1
        finally:
            await scheduler.stop()
            await client.aclose()
