"""A game whose replicas are all down: the gateway says so at once (UNAVAILABLE), logs the
outage once, turns its overall health NOT_SERVING, and recovers by itself. Real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from tests.helpers import health_status, wait_until
from tests.test_processes import spawn, spawn_service

HAPPY = "mogames.happymochi.v1.HappyMochi"
MORI = "mogames.mori.v1.Mori"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _service(game: str, port: int, redis_url: str, log: Path) -> subprocess.Popen[str]:
    return spawn_service(game, f"127.0.0.1:{port}", redis_url, log)


def _log_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


async def test_all_replicas_down_answers_unavailable_fast_and_flips_overall_health(redis_url, tmp_path):
    happy_port, mori_port, gateway_port = free_port(), free_port(), free_port()
    happy = _service("happy_mochi", happy_port, redis_url, tmp_path / "happy.log")
    mori = _service("mori", mori_port, redis_url, tmp_path / "mori.log")
    gateway_log = tmp_path / "gateway.log"
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
            "MOGAMES_BACKENDS_HAPPY_MOCHI": f"127.0.0.1:{happy_port}",
            "MOGAMES_BACKENDS_MORI": f"127.0.0.1:{mori_port}",
        },
        gateway_log,
    )
    processes = [gateway, mori, happy]
    try:
        for port in (happy_port, mori_port, gateway_port):
            wait_for_port(port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
            happy_client = GameClient(channel, "happy_mochi")

            async def overall_is(status: int) -> bool:
                return await health_status(channel, "") == status

            await wait_until(lambda: overall_is(SERVING), "overall SERVING")
            created: list[common_pb2.Match] = []

            async def create() -> bool:
                # A replica that has just started may still be connecting to the gateway
                # (on a loaded machine, past the gateway's 1 s wait): UNAVAILABLE, retried.
                try:
                    created.append(await happy_client.create(2))
                except grpc.aio.AioRpcError as error:
                    if error.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                return bool(created)

            await wait_until(create, "a match created while every replica is up")
            match = created[0]

            happy.send_signal(signal.SIGKILL)
            happy.wait(timeout=10)
            get_match = channel.unary_unary(
                f"/{HAPPY}/GetMatch",
                request_serializer=common_pb2.GetMatchRequest.SerializeToString,
                response_deserializer=common_pb2.Match.FromString,
            )
            elapsed = []
            for _ in range(5):
                started = time.monotonic()
                try:
                    await get_match(common_pb2.GetMatchRequest(match_id=match.match_id))
                except grpc.aio.AioRpcError as error:
                    assert error.code() == grpc.StatusCode.UNAVAILABLE, error
                    assert HAPPY in (error.details() or "")
                else:
                    raise AssertionError("a call to a game with no replica succeeded")
                elapsed.append(time.monotonic() - started)
            # A watch without a deadline fails as fast instead of hanging.
            started = time.monotonic()
            watch = channel.unary_stream(
                f"/{HAPPY}/WatchMatch",
                request_serializer=common_pb2.WatchMatchRequest.SerializeToString,
                response_deserializer=common_pb2.Match.FromString,
            )(common_pb2.WatchMatchRequest(match_id=match.match_id))
            try:
                await watch.read()
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.UNAVAILABLE
            else:
                raise AssertionError("a watch of a game with no replica got a message")
            elapsed.append(time.monotonic() - started)
            assert max(elapsed) < 2.0, elapsed

            await wait_until(lambda: overall_is(NOT_SERVING), "overall NOT_SERVING")
            assert await health_status(channel, HAPPY) == NOT_SERVING
            assert await health_status(channel, MORI) == SERVING
            assert (await GameClient(channel, "mori").create(3)).match_id  # the other game goes on

            happy = _service("happy_mochi", happy_port, redis_url, tmp_path / "happy-again.log")
            processes.append(happy)
            wait_for_port(happy_port, 30)
            await wait_until(lambda: overall_is(SERVING), "overall SERVING again")

            async def answers() -> bool:
                try:
                    return (await happy_client.match(match.match_id)).match_id == match.match_id
                except grpc.aio.AioRpcError:
                    return False

            await wait_until(answers, "the restarted replica answering")
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=30)
    # The outage, once each way (a replica's own events, by the health rounds: test_gateway_ejection).
    events = [e["event"] for e in _log_events(gateway_log) if e.get("backend") == HAPPY]
    outage = [e for e in events if e in ("backend_unavailable", "backend_recovered")]
    assert outage == ["backend_unavailable", "backend_recovered"], events


def test_gateway_refuses_an_unknown_game_name_and_lists_the_accepted_ones():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOGAMES_BACKENDS_")}
    result = subprocess.run(
        [sys.executable, "-m", "gateway"],
        env={**env, "MOGAMES_BACKENDS_HAPPYMOCHI": "127.0.0.1:50061"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "MOGAMES_BACKENDS_HAPPYMOCHI: no such game" in result.stderr
    for accepted in ("MOGAMES_BACKENDS_HAPPY_MOCHI", "MOGAMES_BACKENDS_MORI", "MOGAMES_BACKENDS_MORISI"):
        assert accepted in result.stderr


async def test_a_starting_gateway_reports_a_game_serving_only_once_it_has_reached_a_replica(
    redis_url, tmp_path
):
    """Not SERVING from its first answer while no replica has answered it (it used to start
    SERVING and learn otherwise two seconds later: a client that waited for SERVING then
    met UNAVAILABLE)."""
    happy_port, gateway_port = free_port(), free_port()
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
            "MOGAMES_BACKENDS_HAPPY_MOCHI": f"127.0.0.1:{happy_port}",
        },
        tmp_path / "gateway.log",
    )
    happy = None
    try:
        wait_for_port(gateway_port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
            assert await health_status(channel, HAPPY) == NOT_SERVING
            assert await health_status(channel, "") == NOT_SERVING
            assert await health_status(channel, "mogames.lobby.v1.Lobby") == SERVING
            happy = _service("happy_mochi", happy_port, redis_url, tmp_path / "happy.log")
            await wait_until(lambda: _is(channel, HAPPY, SERVING), "happy_mochi SERVING", 30)
            # SERVING means a replica answered through the channel calls take: no wait.
            match = await GameClient(channel, "happy_mochi").create(2)
            assert match.match_id
    finally:
        for process in (gateway, happy):
            if process is not None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)


async def _is(channel: grpc.aio.Channel, service: str, status: int) -> bool:
    return await health_status(channel, service) == status
