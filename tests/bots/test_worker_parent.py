"""A bot worker ends with the replica that started it: a replica killed outright cannot stop
its pool, and an orphaned worker would keep a core searching for nobody."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A replica's bot pool started, its worker's pid printed, then the replica waits.
REPLICA = """
import os, sys
from services.runtime.bot_pool import BotPool
pool = BotPool(1)
print(pool._started().submit(os.getpid).result(), flush=True)
sys.stdin.read()
"""


def test_a_worker_ends_within_seconds_of_its_replica_being_killed() -> None:
    replica = subprocess.Popen(
        [sys.executable, "-c", REPLICA], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert replica.stdout is not None
        worker = int(replica.stdout.readline())
        assert Path(f"/proc/{worker}").exists(), "the worker runs"
        replica.send_signal(signal.SIGKILL)
        replica.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _alive(worker):
            assert time.monotonic() < deadline, f"worker {worker} outlived its replica"
            time.sleep(0.1)
    finally:
        if replica.poll() is None:
            replica.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for good (its parent is gone too; init reaps it).
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()
