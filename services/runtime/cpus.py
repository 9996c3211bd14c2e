"""CPUs of their own for a replica's bot workers (``MOGAMES_BOT_OWN_CPUS``).

Sharing the replica's cores, a worker searches at the lowest priority and in short bursts, so
that human moves keep their latency (``services/bots/worker.py``); the pauses cost the bots
pace. Where a replica has cores of its own (a container's cpuset, systemd's
``CPUAffinity=``, Kubernetes' static CPU manager), the operator may hand the last ``n`` of
them to the workers, which then search straight through: the replica's threads keep off
those, and the workers run only there. The placement is Linux's thread affinity.
"""

from __future__ import annotations

import os
from pathlib import Path


def allowed() -> frozenset[int]:
    """The CPUs this process may run on (empty where the system does not say)."""
    if not hasattr(os, "sched_getaffinity"):
        return frozenset()
    return frozenset(os.sched_getaffinity(0))


def split(cpus: frozenset[int], own: int) -> tuple[frozenset[int], frozenset[int]]:
    """(the replica's, the bot workers') CPUs: the workers take the ``own`` highest-numbered
    ones. Raises ValueError when that leaves the replica none."""
    if own and own >= len(cpus):
        listed = ",".join(map(str, sorted(cpus))) or "none known"
        raise ValueError(f"{own} of the CPUs this replica may use ({listed}) would leave it none")
    bots = frozenset(sorted(cpus)[len(cpus) - own :])
    return cpus - bots, bots


def keep_process_on(cpus: frozenset[int], pid: int | None = None) -> None:
    """Every thread of this process (or of ``pid``), and every thread it starts later, runs on
    ``cpus`` only (a thread inherits the affinity of the thread that starts it)."""
    for task in Path(f"/proc/{pid or 'self'}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except ProcessLookupError:
            continue  # the thread ended meanwhile
