"""A searching bot's decision runs in a worker process: the event loop's thread keeps turning
and does not spend the search's CPU time (no cluster in this module, so nothing else runs on
the loop); the worker gives way to the replica's tasks."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from services.bots import worker
from services.bots.decide import seat_information
from services.catalog import rules_module
from services.runtime.bot_pool import BotPool
from services.runtime.cpus import split
from services.runtime.settings import ServiceSettings, SettingsError

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


@pytest.mark.parametrize("priority", ["idle", "7"])
def test_a_worker_gives_way_to_its_replica(priority):
    """Every thread of a worker runs under the policy the replica asked for: SCHED_IDLE, which
    any ordinary task that wakes preempts at once, or a niceness above the replica's."""
    pool = BotPool(1, priority)
    try:
        worker = pool._started().submit(os.getpid).result(timeout=60)
        threads = [int(task.name) for task in Path(f"/proc/{worker}/task").iterdir()]
        assert len(threads) >= 2, "the parent watch runs beside the main thread"
        for thread in threads:
            if priority == "idle":
                assert os.sched_getscheduler(thread) == os.SCHED_IDLE
                assert _proc_policy(worker, thread) == os.SCHED_IDLE
            else:
                assert os.sched_getscheduler(thread) == os.SCHED_OTHER
                replica_niceness = os.getpriority(os.PRIO_PROCESS, 0)
                assert os.getpriority(os.PRIO_PROCESS, thread) == min(19, replica_niceness + 7)
    finally:
        pool.close()


async def test_a_decision_given_up_counts_until_its_worker_is_done_with_it():
    """A worker starved past the decision timeout (here: stopped) still holds the decision: the
    pool counts it as in flight until the worker is done, so the scheduler hands it no more."""
    state = rules_module(GAME).State.new(3, 5, {})
    seat = state.active_seats()[0]
    view, history = seat_information(state, seat, state.opening_events())
    pool = BotPool(1)
    pool.decision_timeout_s = 0.5
    try:
        worker = await asyncio.wrap_future(pool._started().submit(os.getpid))
        os.kill(worker, signal.SIGSTOP)
        try:
            with pytest.raises(TimeoutError):
                await pool.decide(GAME, view, seat, "medium", 1, history)
            assert pool.in_flight == 1, "the stopped worker still holds the decision"
        finally:
            os.kill(worker, signal.SIGCONT)
        for _ in range(600):  # 30 s at most: a medium search is 60 ms of CPU
            if not pool.in_flight:
                break
            await asyncio.sleep(0.05)
        assert pool.in_flight == 0, "the decision counted on after its worker was done"
    finally:
        pool.close()


async def test_a_worker_that_died_is_replaced_at_the_next_decision():
    """A killed worker breaks its pool (its decision fails, and the bot plays its policy
    move): the next decision starts new workers instead of failing for good."""
    state = rules_module(GAME).State.new(3, 5, {})
    seat = state.active_seats()[0]
    view, history = seat_information(state, seat, state.opening_events())
    pool = BotPool(1)
    try:
        worker = await asyncio.wrap_future(pool._started().submit(os.getpid))
        deciding = asyncio.ensure_future(pool.decide(GAME, view, seat, "hard", 1, history))
        await asyncio.sleep(0.05)
        os.kill(worker, signal.SIGKILL)
        with pytest.raises(BrokenProcessPool):
            await deciding
        move, _ = await pool.decide(GAME, view, seat, "medium", 2, history)
        assert move in state.legal_moves(seat)
        replacement = await asyncio.wrap_future(pool._started().submit(os.getpid))
        assert replacement != worker
        assert pool.in_flight == 0
    finally:
        pool.close()


def _proc_policy(pid: int, thread: int) -> int:
    """The scheduling policy as the kernel shows it (``/proc/<pid>/task/<tid>/stat``, field 41)."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[38])


def test_the_worker_priority_setting_is_idle_or_a_niceness(monkeypatch):
    monkeypatch.setenv("MOGAMES_TOKEN_SECRET", "x" * 32)
    monkeypatch.delenv("MOGAMES_BOT_WORKER_PRIORITY", raising=False)
    assert ServiceSettings.from_env(GAME).bot_worker_priority == "idle"
    monkeypatch.setenv("MOGAMES_BOT_WORKER_PRIORITY", "19")
    assert ServiceSettings.from_env(GAME).bot_worker_priority == "19"
    for wrong in ("low", "20", "-1"):
        monkeypatch.setenv("MOGAMES_BOT_WORKER_PRIORITY", wrong)
        with pytest.raises(SettingsError, match="MOGAMES_BOT_WORKER_PRIORITY must be idle or a niceness"):
            ServiceSettings.from_env(GAME)


def test_own_cpus_are_the_highest_numbered_and_leave_the_replica_some():
    assert split(frozenset({0, 1, 2, 3}), 0) == (frozenset({0, 1, 2, 3}), frozenset())
    assert split(frozenset({0, 1, 2, 3}), 1) == (frozenset({0, 1, 2}), frozenset({3}))
    assert split(frozenset({2, 5, 7}), 2) == (frozenset({2}), frozenset({5, 7}))
    with pytest.raises(ValueError, match=r"of the CPUs this replica may use \(2,5\) would leave it none"):
        split(frozenset({2, 5}), 2)


def test_the_own_cpus_setting_fails_fast_when_it_leaves_the_replica_none(monkeypatch):
    monkeypatch.setenv("MOGAMES_TOKEN_SECRET", "x" * 32)
    monkeypatch.delenv("MOGAMES_BOT_OWN_CPUS", raising=False)
    assert ServiceSettings.from_env(GAME).bot_cpus == frozenset(), "by default the workers share"
    everywhere = os.sched_getaffinity(0)
    monkeypatch.setenv("MOGAMES_BOT_OWN_CPUS", str(len(everywhere)))
    with pytest.raises(
        SettingsError, match=f"MOGAMES_BOT_OWN_CPUS={len(everywhere)}: .* would leave it none"
    ):
        ServiceSettings.from_env(GAME)
    monkeypatch.setenv("MOGAMES_BOT_OWN_CPUS", "-1")
    with pytest.raises(SettingsError, match="MOGAMES_BOT_OWN_CPUS must be >= 0"):
        ServiceSettings.from_env(GAME)


def test_workers_given_cpus_of_their_own_run_only_there():
    """Every thread of a worker, the parent watch included, is bound to the pool's CPUs."""
    last = frozenset({max(os.sched_getaffinity(0))})
    pool = BotPool(1, "idle", last)
    try:
        worker = pool._started().submit(os.getpid).result(timeout=60)
        threads = [int(task.name) for task in Path(f"/proc/{worker}/task").iterdir()]
        assert len(threads) >= 2, "the parent watch runs beside the main thread"
        assert {t: os.sched_getaffinity(t) for t in threads} == {t: last for t in threads}
        assert os.sched_getscheduler(worker) == os.SCHED_IDLE, "and still at the lowest priority"
    finally:
        pool.close()


def _switches_spinning(cpu_s: float) -> tuple[int, tuple[float, float]]:
    """In a worker: how often its main thread gave up its CPU while a busy loop of ``cpu_s``
    ran as a decision does, and the worker's interval timer after it."""
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    with worker.paced():
        until = time.process_time() + cpu_s
        while time.process_time() < until:
            pass
    switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before
    worker._pause(signal.SIGALRM, None)  # a signal raised before the timer stopped, handled after
    return switches, signal.getitimer(signal.ITIMER_REAL)


@pytest.mark.parametrize("sharing", [True, False])
def test_a_worker_sharing_the_replicas_cpus_decides_in_bursts(sharing):
    """Sharing, a decision's 50 ms of CPU time come in bursts of 0.5 ms, each ended by a
    pause (a voluntary switch: about 100 of them); on CPUs of its own, a worker runs straight
    through. Either way the timer is off once the decision is made, and stays off."""
    pool = BotPool(1, "idle", frozenset() if sharing else frozenset({max(os.sched_getaffinity(0))}))
    try:
        switches, timer = pool._started().submit(_switches_spinning, 0.05).result(timeout=60)
    finally:
        pool.close()
    if sharing:
        assert switches >= 20, switches
    else:
        assert switches <= 3, switches
    assert timer == (0.0, 0.0)
