"""What a bot worker process runs: the decision, timed in the worker's own CPU seconds.

Workers run at a lower scheduling priority than the replica that feeds them, so a searching
bot takes the CPU the replica's event loop leaves and human moves keep their latency.
"""

from __future__ import annotations

import os
import threading
import time

from services.bots.decide import decide
from services.engine import JsonDict

WORKER_NICENESS = 10
# How often a worker looks whether the replica that started it is still there.
PARENT_CHECK_S = 1.0


def initialize() -> None:
    os.nice(WORKER_NICENESS)
    parent = os.getppid()
    threading.Thread(target=_exit_with, args=(parent,), name="parent-watch", daemon=True).start()
    # Importing every adapter now keeps that cost out of the first decisions.
    from services.bots.adapters import games_with_adapters

    games_with_adapters()


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
