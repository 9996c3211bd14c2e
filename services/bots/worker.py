"""What a bot worker process runs: the decision, timed in the worker's own CPU seconds.

A worker gives way to its replica: human moves come first. By default it runs under Linux's
``SCHED_IDLE`` policy, which the scheduler preempts for any ordinary task that wakes on its CPU
(the replica, its gateway, Redis), so it uses only the CPU nothing else wants; an operator may
trade some of that for the bots' pace under saturation with a niceness instead
(``MOGAMES_BOT_WORKER_PRIORITY``). Priority alone is not enough: a CPU kept busy beside the
human path still lengthens the tail of its moves, the more the longer it stays busy at a
stretch (measured: docs/bots.md). So a worker that shares the replica's CPUs searches in short
bursts, each ended by a pause (``paced``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from services.bots.decide import decide
from services.engine import JsonDict

# MOGAMES_BOT_WORKER_PRIORITY: this, or a niceness.
IDLE = "idle"
# Where the system has no SCHED_IDLE (not Linux), the lowest priority it has.
LOWEST_NICENESS = 19
# How often a worker looks whether the replica that started it is still there.
PARENT_CHECK_S = 1.0
# A searching worker that shares the replica's CPUs leaves its CPU free for PAUSE_S after
# every BURST_S of wall time. Measured (docs/bots.md): the human path's tail next to such a
# worker is about what it is next to a free CPU; the pauses cost the bots about a fifth of
# their pace on an idle machine, a third beside a busy replica.
BURST_S = 0.0005
PAUSE_S = 0.0001

# Whether this worker shares the replica's CPUs (set at its start), and is deciding now.
_sharing = False
_deciding = False


def initialize(priority: str = IDLE, cpus: frozenset[int] = frozenset()) -> None:
    if cpus:  # the CPUs the replica keeps off (services/runtime/cpus.py)
        os.sched_setaffinity(0, cpus)
    give_way(priority)
    global _sharing
    _sharing = not cpus and hasattr(signal, "setitimer")
    if _sharing:
        signal.signal(signal.SIGALRM, _pause)
    parent = os.getppid()
    threading.Thread(target=_exit_with, args=(parent,), name="parent-watch", daemon=True).start()
    # Importing every adapter now keeps that cost out of the first decisions.
    from services.bots.adapters import games_with_adapters

    games_with_adapters()


def give_way(priority: str) -> None:
    """Lower this process below the replica's tasks (before it starts any thread: threads
    inherit the policy): ``idle`` is SCHED_IDLE, a number a niceness."""
    if priority == IDLE and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(LOWEST_NICENESS if priority == IDLE else int(priority))


def _exit_with(parent: int) -> None:
    """End this worker once its replica is gone (killed, it could not stop its pool): the
    pool's queues do not tell a waiting worker, and an orphan would search on for nobody."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(0)


@contextmanager
def paced() -> Iterator[None]:
    """Within, a worker sharing the replica's CPUs runs in bursts of ``BURST_S``, each ended by
    a pause of ``PAUSE_S`` (``SIGALRM``, handled between two bytecodes of whatever runs)."""
    global _deciding
    if not _sharing:
        yield
        return
    _deciding = True
    signal.setitimer(signal.ITIMER_REAL, BURST_S)
    try:
        yield
    finally:
        _deciding = False
        signal.setitimer(signal.ITIMER_REAL, 0)


def _pause(_signal: int, _frame: object) -> None:
    # A signal raised just before the timer was stopped is handled after it: ignored then, so
    # that an idle worker is not woken on and on.
    if _deciding:
        time.sleep(PAUSE_S)
        signal.setitimer(signal.ITIMER_REAL, BURST_S)


def decide_timed(
    game: str, view: JsonDict, seat: int, level: str, seed: int, history: list[JsonDict] | None
) -> tuple[JsonDict, float]:
    """The move, and the CPU seconds this process spent deciding it (its pauses are not)."""
    started = time.process_time()
    with paced():
        move = decide(game, view, seat, level, seed, history=history)
    return move, time.process_time() - started
