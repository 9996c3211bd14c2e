"""20,000 anonymous CreateMatch from one client through a real gateway process, with the
default budgets: cut off by the limit (RESOURCE_EXHAUSTED with a retry hint), and Redis
keeps only the few matches that were let through (issue 14, point 10). Real processes on
their own Redis."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import grpc
import redis.asyncio as aioredis

from clients.game_client import game_modules
from deploy.redis_server import running_redis
from services.catalog import rules_module
from tests.helpers import retry_delay_s, wait_serving
from tests.test_processes import running_service_and_gateway

GAME = "happy_mochi"
CALLS = 20_000
IN_FLIGHT = 50
# The defaults (services/runtime/settings.py): 30 CreateMatch per client a minute, and at
# most 10 of a client's matches waiting for players.
MAX_WAITING = 10


async def test_twenty_thousand_anonymous_create_match_from_one_client_are_cut_off(tmp_path):
    with running_redis() as redis_url, running_service_and_gateway(GAME, redis_url, tmp_path) as processes:
        redis = aioredis.Redis.from_url(redis_url)
        try:
            pb2, _ = game_modules(GAME)
            body = pb2.CreateMatchRequest(players=2).SerializeToString()
            outcomes: Counter[str] = Counter()
            delays: list[float] = []
            async with grpc.aio.insecure_channel(processes.gateway_address) as channel:
                await wait_serving(channel, rules_module(GAME).GAME.full_service)
                create = channel.unary_unary(
                    f"/{pb2.DESCRIPTOR.services_by_name['HappyMochi'].full_name}/CreateMatch"
                )
                left = iter(range(CALLS))

                async def caller() -> None:
                    for _ in left:
                        try:
                            await create(body, timeout=30)
                        except grpc.aio.AioRpcError as error:
                            outcomes[error.code().name] += 1
                            if len(delays) < 50:
                                delays.append(retry_delay_s(error))
                        else:
                            outcomes["OK"] += 1

                started = time.monotonic()
                await asyncio.gather(*(caller() for _ in range(IN_FLIGHT)))
                elapsed = time.monotonic() - started
            counted = (await redis.info("commandstats")).get("cmdstat_incr", {}).get("calls", 0)
            print(f"{CALLS} CreateMatch in {elapsed:.1f} s: {dict(outcomes)}; {counted} INCR")
            assert outcomes["OK"] == MAX_WAITING
            assert outcomes["RESOURCE_EXHAUSTED"] == CALLS - MAX_WAITING
            assert all(0 < d <= 60 for d in delays)
            # A client over its budget is refused by the replica from memory: the flood cost
            # Redis a counter increment per call let through (and a few racing), not 20,000.
            assert counted < 1_000
            stored = [key async for key in redis.scan_iter(match="mg:*:match", count=1000)]
            assert len(stored) == MAX_WAITING
            assert processes.running()
        finally:
            await redis.aclose()
