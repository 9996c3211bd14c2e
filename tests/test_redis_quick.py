"""The Redis pool's quick lane (services/runtime/redis_lane.py, behind
IdleClosingPool.quick), which carries a move's commit on one Redis: commands of one loop
turn go out in one write on one shared connection, a reply never goes to the wrong
command, and a connection whose replies may still come is closed (real redis-server)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.runtime.redis_client import connect
from tests.helpers import wait_until

BLOCK_S = 30  # how long a test's BLPOP would block if nothing closed its connection


@pytest.fixture
async def pool(redis_url):
    client = connect(redis_url)
    yield client.connection_pool
    await client.aclose()


async def test_an_error_reply_leaves_the_connection_in_use(pool):
    lane_id = await pool.quick("CLIENT", "ID")
    with pytest.raises(NoScriptError):
        await pool.quick("EVALSHA", "0" * 40, 0)
    assert await pool.quick("PING") == b"PONG"
    assert await pool.quick("CLIENT", "ID") == lane_id  # one connection served them all


async def test_commands_of_one_turn_share_one_write_and_each_gets_its_own_reply(pool, monkeypatch):
    lane_id = await pool.quick("CLIENT", "ID")
    # The lane writes by redis-py's send_packed_command: one call, one write, per flush.
    connection = pool._lane._connection
    writes: list[bytes] = []
    send = connection.send_packed_command

    async def counted(command, check_health=True):
        writes.append(b"".join(command))
        await send(command, check_health=check_health)

    monkeypatch.setattr(connection, "send_packed_command", counted)
    replies = await asyncio.gather(*(pool.quick("ECHO", f"reply-{n}") for n in range(300)))
    assert replies == [f"reply-{n}".encode() for n in range(300)]
    assert len(writes) == 1 and writes[0].count(b"ECHO") == 300
    assert await pool.quick("CLIENT", "ID") == lane_id


async def test_a_command_past_its_timeout_fails_with_the_commands_behind_it(pool, redis_client):
    key = f"quick-{uuid.uuid4()}"
    lane_id = await pool.quick("CLIENT", "ID")
    blocked = asyncio.create_task(pool.quick("BLPOP", key, BLOCK_S, timeout_s=0.2))
    behind = asyncio.create_task(pool.quick("ECHO", "behind"))
    with pytest.raises(RedisTimeoutError, match=r"within 0\.2 s"):
        await blocked
    # Its reply (and so the next one's) could still come: the connection is closed.
    with pytest.raises(RedisConnectionError, match="got no reply in time"):
        await behind
    await _until_redis_saw_the_close(redis_client)
    # Had the blocked connection been kept, the BLPOP still waiting on it would take this.
    await pool.quick("RPUSH", key, "kept")
    assert await pool.quick("LPOP", key) == b"kept"
    assert await pool.quick("CLIENT", "ID") != lane_id


async def test_a_cancelled_command_does_not_leave_its_reply_to_the_next(pool, redis_client):
    key = f"quick-{uuid.uuid4()}"
    lane_id = await pool.quick("CLIENT", "ID")
    waiting = asyncio.create_task(pool.quick("BLPOP", key, BLOCK_S))
    await wait_until(lambda: _blocked_clients(redis_client), "the BLPOP to block")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    behind = asyncio.create_task(pool.quick("ECHO", "mine"))
    await redis_client.rpush(key, "taken by the cancelled BLPOP")
    assert await behind == b"mine"
    assert await redis_client.llen(key) == 0
    assert await pool.quick("CLIENT", "ID") == lane_id  # kept: its replies are in step


async def test_a_lost_connection_fails_its_commands_and_the_next_one_reconnects(pool, redis_client):
    key = f"quick-{uuid.uuid4()}"
    lane_id = await pool.quick("CLIENT", "ID")
    waiting = asyncio.create_task(pool.quick("BLPOP", key, BLOCK_S))
    await wait_until(lambda: _blocked_clients(redis_client), "the BLPOP to block")
    await redis_client.client_kill_filter(_id=lane_id)
    with pytest.raises(RedisConnectionError):
        await waiting
    assert await pool.quick("PING") == b"PONG"
    assert await pool.quick("CLIENT", "ID") != lane_id


async def test_closing_the_pool_closes_the_lane(redis_url, redis_client):
    client = connect(redis_url)
    lane_id = await client.connection_pool.quick("CLIENT", "ID")
    await client.aclose()

    async def closed() -> bool:
        return all(int(c["id"]) != lane_id for c in await redis_client.client_list())

    await wait_until(closed, "Redis to see the lane's connection closed", timeout_s=5)


async def test_connections_share_one_driver_info(pool):
    """redis-py would make each connection's from the package metadata (slow: importlib
    parses it anew every time)."""
    first, second = pool.make_connection(), pool.make_connection()
    assert first.driver_info is second.driver_info
    assert first.driver_info.formatted_name == "redis-py"


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
