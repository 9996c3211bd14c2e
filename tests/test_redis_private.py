"""The redis-py hooks of services/runtime/redis_private.py hold for the installed release: it
is the pinned one, and each hook still reads what the pool really uses (real redis-server).
An upgrade of redis-py that changes them fails here, by name, before anything misbehaves."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import redis

from services.runtime import redis_private
from services.runtime.redis_client import connect

ROOT = Path(__file__).resolve().parent.parent


def test_the_installed_redis_py_is_the_one_the_hooks_were_written_for() -> None:
    pinned = re.search(r"^redis==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned is not None, "requirements.txt pins no redis-py"
    assert pinned.group(1) == redis_private.PINNED == redis.__version__


async def test_idle_connections_are_the_pools_free_connections(redis_url: str) -> None:
    client = connect(redis_url)
    pool = client.connection_pool
    try:
        # Three commands at once open three connections; released, they are the free ones.
        await asyncio.gather(*(client.execute_command("DEBUG", "SLEEP", "0.05") for _ in range(3)))
        free = redis_private.idle_connections(pool)
        assert len(free) == 3 and all(connection.is_connected for connection in free)
        # Taken out of the list, a connection is out of the pool: the next command gets another.
        taken = free.pop()
        used = await pool.get_connection()
        assert used is not taken
        await pool.release(used)
        assert used in redis_private.idle_connections(pool)
        await taken.disconnect()
    finally:
        await client.aclose()


async def test_pool_lock_is_the_lock_the_pool_hands_connections_out_under(redis_url: str) -> None:
    client = connect(redis_url)
    pool = client.connection_pool
    try:
        await client.ping()
        lock = redis_private.pool_lock(pool)
        assert isinstance(lock, asyncio.Lock)
        async with lock:
            waiting = asyncio.create_task(pool.get_connection())
            await asyncio.sleep(0.05)
            assert not waiting.done(), "the pool handed a connection out without its lock"
        connection = await asyncio.wait_for(waiting, 2)
        await pool.release(connection)
    finally:
        await client.aclose()
