"""A searching bot's decision runs in a worker process: the event loop's thread keeps turning
and does not spend the search's CPU time (no cluster in this module, so nothing else runs on
the loop)."""

from __future__ import annotations

import asyncio
import time

from services.bots.decide import seat_information
from services.catalog import rules_module
from services.runtime.bot_pool import BotPool

GAME = "mori"


async def test_a_search_runs_off_the_event_loop():
    state = rules_module(GAME).State.new(3, 5, {})
    events = state.opening_events()
    seat = state.active_seats()[0]
    view, history = seat_information(state, seat, events)
    pool = BotPool.shared(1)
    await pool.decide(GAME, view, seat, "medium", 1, history)  # the worker is up
    loop_cpu = time.thread_time()
    deciding = asyncio.ensure_future(pool.decide(GAME, view, seat, "hard", 2, history))
    ticks = 0
    while not deciding.done():
        await asyncio.sleep(0.05)
        ticks += 1
    loop_cpu = time.thread_time() - loop_cpu
    move, cpu_s = await deciding
    assert move in state.legal_moves(seat)
    assert cpu_s <= 0.3, "the hard level stops at its CPU budget"
    # Had the search run on the loop's thread, that thread would have spent its CPU time.
    assert ticks > 1 and loop_cpu < cpu_s, (loop_cpu, cpu_s)
