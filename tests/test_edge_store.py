"""A hung Redis (SIGSTOP): calls answer UNAVAILABLE within a couple of seconds, not at their
deadline, and the service's health is NOT_SERVING until Redis answers again. Real processes."""

from __future__ import annotations

import os
import signal
import time

import grpc
import redis.asyncio as aioredis
from grpc_health.v1 import health_pb2

from clients.game_client import GameClient
from deploy.redis_server import free_port, running_redis, wait_for_port
from tests.helpers import health_status, wait_until
from tests.test_processes import spawn_service

HAPPY = "mogames.happymochi.v1.HappyMochi"


async def test_a_hung_redis_answers_unavailable_fast_and_turns_health_not_serving(tmp_path):
    with running_redis() as redis_url:
        probe = aioredis.Redis.from_url(redis_url)
        redis_pid = int((await probe.info("server"))["process_id"])
        await probe.aclose()
        port = free_port()
        service = spawn_service("happy_mochi", f"127.0.0.1:{port}", redis_url, tmp_path / "service.log")
        stopped = False
        try:
            wait_for_port(port, 30)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                client = GameClient(channel, "happy_mochi", timeout_s=30)
                match = await client.create(2)
                assert await health_status(channel, "") == health_pb2.HealthCheckResponse.SERVING

                os.kill(redis_pid, signal.SIGSTOP)
                stopped = True
                started = time.monotonic()
                try:
                    await client.match(match.match_id)
                except grpc.aio.AioRpcError as error:
                    assert error.code() == grpc.StatusCode.UNAVAILABLE, error
                else:
                    raise AssertionError("a read succeeded against a stopped Redis")
                assert time.monotonic() - started < 3.0

                async def health_is(status: int) -> bool:
                    return all([await health_status(channel, name) == status for name in ("", HAPPY)])

                await wait_until(lambda: health_is(health_pb2.HealthCheckResponse.NOT_SERVING), "NOT_SERVING")
                os.kill(redis_pid, signal.SIGCONT)
                stopped = False
                await wait_until(lambda: health_is(health_pb2.HealthCheckResponse.SERVING), "SERVING again")
                assert (await client.match(match.match_id)).match_id == match.match_id
        finally:
            if stopped:
                os.kill(redis_pid, signal.SIGCONT)
            service.send_signal(signal.SIGTERM)
            service.wait(timeout=30)
