"""What a bot worker process runs: the decision, timed in the worker's own CPU seconds.

A worker gives way to its replica: human moves come first. By default it runs under Linux's
``SCHED_IDLE`` policy, which the scheduler preempts at once for any ordinary task that wakes
(the replica, its gateway, Redis), so a search never delays a human move by a time slice, as a
niced worker does; it uses only the CPU nothing else wants. An operator may trade some of
that for the bots' pace under saturation with a niceness instead (``MOGAMES_BOT_WORKER_PRIORITY``).
"""

from __future__ import annotations

import os
import threading
import time

from services.bots.decide import decide
from services.engine import JsonDict

# MOGAMES_BOT_WORKER_PRIORITY: this, or a niceness.
IDLE = "idle"
# Where the system has no SCHED_IDLE (not Linux), the lowest priority it has.
LOWEST_NICENESS = 19
# How often a worker looks whether the replica that started it is still there.
PARENT_CHECK_S = 1.0


def initialize(priority: str = IDLE, cpus: frozenset[int] = frozenset()) -> None:
    if cpus:  # the CPUs the replica keeps off (services/runtime/cpus.py)
        os.sched_setaffinity(0, cpus)
    give_way(priority)
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


def decide_timed(
    game: str, view: JsonDict, seat: int, level: str, seed: int, history: list[JsonDict] | None
) -> tuple[JsonDict, float]:
    """The move, and the CPU seconds this process spent deciding it."""
    started = time.process_time()
    move = decide(game, view, seat, level, seed, history=history)
    return move, time.process_time() - started
