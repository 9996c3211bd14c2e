"""A replica that stops answering (SIGSTOPped: its connection stays open, so only its health
checks tell) takes no new calls once the health rounds find it silent: its matches are
answered by the other replica, rather than hanging until the connection's keepalive gives up
(30 s), and it takes calls again once it answers. Real processes; the rounds' rules against a
real health server that answers as told."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.game_client import GameClient
from deploy.redis_server import wait_for_port
from gateway.backends import HEALTH_TIMEOUT_S, ReplicaPool
from tests.helpers import wait_serving, wait_until
from tests.test_gateway_routing import MATCHES, _play_a_little, _served, spawn_replicas, stop_all

SERVICE = "mogames.happymochi.v1.HappyMochi"
# Below the keepalive's 30 s: an answer within it came by the health rounds.
WITHIN_S = 25.0


def _replica_events(log: Path) -> list[tuple[str, str]]:
    events = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [(e["event"], e["replica"]) for e in events if e.get("event", "").startswith("backend_replica_")]


async def test_a_silent_replica_takes_no_new_calls_and_its_matches_are_answered_by_another(
    redis_url, tmp_path
):
    processes, ports, logs = spawn_replicas(redis_url, tmp_path)
    replicas, gateway_log = processes[:2], logs[2]
    stopped = False
    try:
        wait_for_port(ports[2], 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{ports[2]}") as channel:
            await wait_serving(channel, SERVICE)
            played = [await _play_a_little(GameClient(channel, "happy_mochi"), n) for n in range(MATCHES)]
            on_first = [m for m in played if m.match_id in _served(logs[0])]
            assert on_first, "no match went to the first replica"
            match_id = on_first[0].match_id

            os.kill(replicas[0].pid, signal.SIGSTOP)
            stopped = True
            # Each attempt gives up after 2 s: the first ones meet the silent replica.
            impatient = GameClient(channel, "happy_mochi", timeout_s=2.0)

            async def answered() -> bool:
                try:
                    return (await impatient.match(match_id)).match_id == match_id
                except grpc.aio.AioRpcError as error:
                    assert error.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
                    return False

            await wait_until(answered, "the match answered by the other replica", timeout_s=WITHIN_S)
            assert "GetMatch" in _served(logs[1]).get(match_id, set())
            first = f"127.0.0.1:{ports[0]}"
            assert _replica_events(gateway_log) == [("backend_replica_not_serving", first)]

            os.kill(replicas[0].pid, signal.SIGCONT)
            stopped = False

            async def serving_again() -> bool:
                return _replica_events(gateway_log)[-1:] == [("backend_replica_serving", first)]

            await wait_until(serving_again, "the first replica serving again")
    finally:
        if stopped:
            os.kill(replicas[0].pid, signal.SIGCONT)
        stop_all(processes)


class _Health(health_pb2_grpc.HealthServicer):
    """A replica's health service that answers as told: a status, or nothing (it stalls past
    the gateway's health timeout)."""

    def __init__(self) -> None:
        self.status = health_pb2.HealthCheckResponse.SERVING
        self.stall = False

    async def Check(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        if self.stall:
            await asyncio.sleep(HEALTH_TIMEOUT_S + 1)
        return health_pb2.HealthCheckResponse(status=self.status)


async def test_one_silent_health_round_is_forgiven_two_are_not_and_not_serving_counts_at_once():
    health = _Health()
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    pool = ReplicaPool(SERVICE, (f"127.0.0.1:{port}",))
    try:
        [replica] = pool.replicas
        await asyncio.wait_for(replica.channel.channel_ready(), 10)

        async def round_() -> list[bool]:
            await pool.serving_count()
            return [r.serving for r in pool.replicas]

        assert await round_() == [True]
        health.stall = True
        assert await round_() == [True]  # a slow answer under load, once
        assert await round_() == [False]  # silent twice in a row: out of the routing
        health.stall = False
        assert await round_() == [True]
        health.status = health_pb2.HealthCheckResponse.NOT_SERVING
        assert await round_() == [False]  # draining: out at once
        # None serving: the connected ones still take calls.
        assert pool.ready() == [replica]
    finally:
        await pool.close()
        await server.stop(None)
