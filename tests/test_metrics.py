"""/metrics on a real service process and a real gateway process: the counters move."""

from __future__ import annotations

import asyncio
import signal
import urllib.request

import grpc
from prometheus_client.parser import text_string_to_metric_families

from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from tests.conftest import TOKEN_SECRET
from tests.helpers import active_seat_move, start_match
from tests.test_processes import spawn

MOVES = 12
HAPPY = "mogames.happymochi.v1.HappyMochi"


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_of_service_and_gateway_move_with_play(redis_url, tmp_path):
    service_port, gateway_port = free_port(), free_port()
    service_metrics, gateway_metrics = free_port(), free_port()
    service = spawn(
        ["-m", "services", "happy_mochi"],
        {
            "MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(),
            "MOGAMES_REDIS_URL": redis_url,
            "MOGAMES_ALLOW_CLIENT_SEED": "true",
            "MOGAMES_LISTEN": f"127.0.0.1:{service_port}",
            "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{service_metrics}",
        },
        tmp_path / "service.log",
    )
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
            "MOGAMES_BACKENDS_HAPPY_MOCHI": f"127.0.0.1:{service_port}",
            "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{gateway_metrics}",
            "MOGAMES_WEB_LISTEN": "",
        },
        tmp_path / "gateway.log",
    )
    try:
        for port in (service_port, gateway_port, service_metrics, gateway_metrics):
            wait_for_port(port, 30)
        before = scrape(service_metrics)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
            client = GameClient(channel, "happy_mochi")
            started = await start_match(client, 2, seed=5)
            for _ in range(MOVES):
                seat, move, version = await active_seat_move(client, started)
                await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
            watched = await client.create(2)
            watch = client.watch(watched.match_id)
            read = asyncio.ensure_future(watch.read())
            await asyncio.sleep(1.0)  # the watch is open on the replica
            during = scrape(service_metrics)
            watch.cancel()
            read.cancel()
        service_after, gateway_after = scrape(service_metrics), scrape(gateway_metrics)
    finally:
        for process in (gateway, service):
            process.send_signal(signal.SIGTERM)
        for process in (gateway, service):
            process.wait(timeout=30)

    moved = value(service_after, "mogames_moves_committed_total", game="happy_mochi") - value(
        before, "mogames_moves_committed_total", game="happy_mochi"
    )
    assert moved == MOVES
    ok_submits = value(service_after, "mogames_rpcs_total", method="SubmitMove", code="OK")
    assert ok_submits == MOVES
    assert value(gateway_after, "mogames_rpcs_total", method="SubmitMove", code="OK") == MOVES
    assert value(service_after, "mogames_rpc_seconds_count", method="SubmitMove") == MOVES
    assert value(gateway_after, "mogames_rpc_seconds_count", method="ListLegalMoves") > 0
    assert value(service_after, "mogames_redis_command_seconds_count", command="EVALSHA") >= MOVES
    assert value(gateway_after, "mogames_gateway_backends_up", service=HAPPY) == 1
    assert value(during, "mogames_watchers", service=HAPPY) == 1
    assert value(during, "mogames_watched_matches", service=HAPPY) == 1
