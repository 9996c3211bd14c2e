"""The one place that reaches into redis-py beyond its public API.

redis-py's connection pool keeps every connection it ever opened and offers no way to close
the idle ones, which a burst of watches leaves behind by the thousand
(``redis_client.IdleClosingPool``); closing them needs the pool's list of free connections
and the lock it takes around it. Both are private, so they are read here only, for the
redis-py release pinned in requirements.txt (``PINNED``): tests/test_redis_private.py checks
that the installed release is that one and that each hook still does what is relied on, so
an upgrade that breaks one fails there, by name.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio.connection import ConnectionPool

PINNED = "8.1.0"


def idle_connections(pool: ConnectionPool) -> list[Any]:
    """The pool's free connections, most recently released last (the list itself: removing
    one takes it out of the pool; hold ``pool_lock`` while changing it)."""
    free: list[Any] = pool._available_connections  # type: ignore[attr-defined]
    return free


def pool_lock(pool: ConnectionPool) -> asyncio.Lock:
    """The lock the pool takes around handing out and taking back connections."""
    lock: asyncio.Lock = pool._lock  # type: ignore[attr-defined]
    return lock
