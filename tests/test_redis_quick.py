"""The Redis pool's quick lane (services/runtime/redis_client.py: IdleClosingPool.quick),
which carries a move's commit on one Redis: a reply never goes to the wrong command, a
connection whose reply may still come is closed, and a commit whose connection was lost
still lands exactly once (real redis-server)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.runtime import redis_client as redis_client_module
from services.runtime.redis_client import QUICK_KEPT, connect
from tests.helpers import wait_until

BLOCK_S = 30  # how long a test's BLPOP would block if nothing closed its connection


@pytest.fixture
async def pool(redis_url):
    client = connect(redis_url)
    yield client.connection_pool
    await client.aclose()


async def test_an_error_reply_leaves_the_connection_in_use(pool):
    assert await pool.quick("PING") == b"PONG"
    with pytest.raises(NoScriptError):
        await pool.quick("EVALSHA", "0" * 40, 0)
    assert await pool.quick("PING") == b"PONG"
    assert len(pool._quick) == 1  # one connection served all three


async def test_a_command_past_its_timeout_fails_and_its_connection_is_dropped(pool, redis_client):
    key = f"quick-{uuid.uuid4()}"
    with pytest.raises(RedisTimeoutError, match=r"within 0\.2 s"):
        await pool.quick("BLPOP", key, BLOCK_S, timeout_s=0.2)
    assert pool._quick == []
    await _until_redis_saw_the_close(redis_client)
    # Had the blocked connection been kept, the BLPOP still waiting on it would take this.
    await pool.quick("RPUSH", key, "kept")
    assert await pool.quick("LPOP", key) == b"kept"


async def test_a_cancelled_command_does_not_leave_its_reply_to_the_next(pool, redis_client):
    key = f"quick-{uuid.uuid4()}"
    waiting = asyncio.create_task(pool.quick("BLPOP", key, BLOCK_S))
    await wait_until(lambda: _blocked_clients(redis_client), "the BLPOP to block")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await _until_redis_saw_the_close(redis_client)
    await redis_client.rpush(key, "kept")
    assert await pool.quick("LPOP", key) == b"kept"


async def _until_redis_saw_the_close(redis_client) -> None:
    # Redis drops a closed client when it reads the close, which can come after a push sent
    # on another connection: until then the blocked BLPOP is still served (and its reply
    # lost with the socket). Far shorter than BLOCK_S, so a connection kept open fails here.
    async def unblocked() -> bool:
        return not await _blocked_clients(redis_client)

    await wait_until(unblocked, "Redis to drop the closed connection's BLPOP", timeout_s=5)


async def _blocked_clients(redis_client) -> bool:
    # Only this file blocks in BLPOP; the session's Redis may hold other tests' blocked XREADs.
    return any(c["cmd"] == "blpop" for c in await redis_client.client_list())


async def test_a_burst_keeps_its_connections_until_they_are_idle(pool, redis_client, monkeypatch):
    """More commands at once than QUICK_KEPT: each gets a connection, and those are kept
    for the next burst instead of closed as each command ends (a replica under steady
    load opened and closed connections all the time); once idle they are closed down to
    QUICK_KEPT."""
    monkeypatch.setattr(redis_client_module, "IDLE_CLOSE_S", 0.3)
    burst = QUICK_KEPT + 8
    key = f"quick-{uuid.uuid4()}"
    # Each BLPOP holds its connection until a push answers it, so all are open at once.
    waiting = [asyncio.create_task(pool.quick("BLPOP", key, BLOCK_S)) for _ in range(burst)]
    await wait_until(lambda: _blocked_count_is(redis_client, burst), "every BLPOP to block")
    await redis_client.rpush(key, *range(burst))
    assert len(await asyncio.gather(*waiting)) == burst
    assert len(pool._quick) == burst
    kept = set(map(id, pool._quick))
    await asyncio.gather(*(pool.quick("PING") for _ in range(burst)))
    assert set(map(id, pool._quick)) == kept, "the second burst opened connections"

    async def trimmed() -> bool:
        return len(pool._quick) == QUICK_KEPT

    await wait_until(trimmed, f"the idle connections closed down to {QUICK_KEPT}", timeout_s=10)
    assert await pool.quick("PING") == b"PONG"


async def test_connections_share_one_driver_info(pool):
    """redis-py would make each connection's from the package metadata (slow: importlib
    parses it anew every time)."""
    first, second = pool.make_connection(), pool.make_connection()
    assert first.driver_info is second.driver_info
    assert first.driver_info.formatted_name == "redis-py"


async def _blocked_count_is(redis_client, count: int) -> bool:
    return sum(c["cmd"] == "blpop" for c in await redis_client.client_list()) == count
