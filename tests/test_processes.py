"""The real entry points as separate processes: settings fail fast, health, reflection,
JSON logs with request context, graceful shutdown on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from clients.bot import play_match
from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from tests.conftest import TOKEN_SECRET
from tests.helpers import start_match, wait_serving


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    # Logs go to a file, not a pipe: a full pipe nobody reads would block the process.
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, *args], env={**os.environ, **env}, stdout=out, stderr=out, text=True
        )


def spawn_service(
    game: str, listen: str, redis_url: str, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """A game service process on ``listen``, with the tests' token secret, and ``env`` on top.
    The per-client budgets are off: they are counted in Redis, and every test process calls
    from 127.0.0.1 on the session's shared Redis (tests of the budgets set their own)."""
    settings = {
        "MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(),
        "MOGAMES_REDIS_URL": redis_url,
        "MOGAMES_LISTEN": listen,
        "MOGAMES_CREATE_LIMIT": "0",
        "MOGAMES_JOIN_LIMIT": "0",
    }
    return spawn(["-m", "services", game], {**settings, **(env or {})}, log)


@dataclass
class ServicesAndGateway:
    services: dict[str, subprocess.Popen[str]]  # by game
    service_addresses: dict[str, str]
    gateway: subprocess.Popen[str]
    gateway_address: str

    @property
    def service(self) -> subprocess.Popen[str]:
        """The service process, when there is one game."""
        (only,) = self.services.values()
        return only

    def running(self) -> bool:
        return all(p.poll() is None for p in (*self.services.values(), self.gateway))


@contextlib.contextmanager
def running_services_and_gateway(
    games: list[str], redis_url: str, tmp_path: Path, service_env: dict[str, str] | None = None
) -> Iterator[ServicesAndGateway]:
    """A service process per game of ``games`` and a gateway process routing to them, all on
    ``redis_url``, logging warnings to ``tmp_path`` (the gateway without its web port);
    ``service_env`` adds to the services' settings. Yields once every port is open; all are
    stopped after."""
    for _attempt in range(3):
        started = _start_services_and_gateway(games, redis_url, tmp_path, service_env)
        processes = (*started.services.values(), started.gateway)
        try:
            for address in (*started.service_addresses.values(), started.gateway_address):
                wait_for_port(int(address.rsplit(":", 1)[1]), 30)
        except BaseException:
            _stop(processes)
            raise
        # A free port can be taken by another process before ours binds it; ours then
        # exits (serving.bound) while the port answers: start again on other ports.
        if started.running():
            break
        _stop(processes)
    else:
        raise RuntimeError(f"the processes kept exiting at start: see the logs in {tmp_path}")
    try:
        yield started
    finally:
        _stop(processes)


def _start_services_and_gateway(
    games: list[str], redis_url: str, tmp_path: Path, service_env: dict[str, str] | None
) -> ServicesAndGateway:
    addresses = {game: f"127.0.0.1:{free_port()}" for game in games}
    gateway_address = f"127.0.0.1:{free_port()}"
    services = {
        game: spawn_service(
            game,
            addresses[game],
            redis_url,
            tmp_path / f"{game}.log",
            {"MOGAMES_LOG_LEVEL": "warning", **(service_env or {})},
        )
        for game in games
    }
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": gateway_address,
            **{f"MOGAMES_BACKENDS_{game.upper()}": address for game, address in addresses.items()},
            "MOGAMES_REDIS_URL": redis_url,
            "MOGAMES_WEB_LISTEN": "",
            "MOGAMES_LOG_LEVEL": "warning",
        },
        tmp_path / "gateway.log",
    )
    return ServicesAndGateway(services, addresses, gateway, gateway_address)


def _stop(processes: tuple[subprocess.Popen[str], ...]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=20)


def running_service_and_gateway(
    game: str, redis_url: str, tmp_path: Path, service_env: dict[str, str] | None = None
) -> contextlib.AbstractContextManager[ServicesAndGateway]:
    """``running_services_and_gateway`` for one game."""
    return running_services_and_gateway([game], redis_url, tmp_path, service_env)


def test_service_refuses_to_start_without_a_token_secret(redis_url):
    env = {k: v for k, v in os.environ.items() if k != "MOGAMES_TOKEN_SECRET"}
    result = subprocess.run(
        [sys.executable, "-m", "services", "happy_mochi"],
        env={**env, "MOGAMES_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "MOGAMES_TOKEN_SECRET is required" in result.stderr


def test_service_stops_when_its_port_is_taken(redis_url, tmp_path):
    """The service must not run on without its port (it used to: its scheduler, started
    before the bind, kept the process alive after the bind failed)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        service = spawn_service("happy_mochi", f"127.0.0.1:{port}", redis_url, tmp_path / "service.log")
        try:
            assert service.wait(timeout=30) != 0
        finally:
            service.kill()
    assert f"cannot listen on 127.0.0.1:{port}" in (tmp_path / "service.log").read_text()


def test_gateway_refuses_a_bad_backend_list():
    result = subprocess.run(
        [sys.executable, "-m", "gateway"],
        env={**os.environ, "MOGAMES_BACKENDS_HAPPY_MOCHI": "localhost:http"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "MOGAMES_BACKENDS_HAPPY_MOCHI" in result.stderr


async def test_processes_serve_health_reflection_logs_and_stop_gracefully(redis_url, tmp_path):
    service_port, gateway_port = free_port(), free_port()
    service = spawn_service(
        "happy_mochi",
        f"127.0.0.1:{service_port}",
        redis_url,
        tmp_path / "service.log",
        # Per-move lines are at debug.
        {"MOGAMES_ALLOW_CLIENT_SEED": "true", "MOGAMES_LOG_LEVEL": "debug"},
    )
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
            "MOGAMES_BACKENDS_HAPPY_MOCHI": f"127.0.0.1:{service_port}",
        },
        tmp_path / "gateway.log",
    )
    try:
        wait_for_port(service_port, 30)
        wait_for_port(gateway_port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
            # The gateway's games (and so its overall health) turn SERVING once it has
            # reached their replicas.
            for name in ("", "mogames.happymochi.v1.HappyMochi", "mogames.lobby.v1.Lobby"):
                await wait_serving(channel, name)
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            responses = [r async for r in reflection.ServerReflectionInfo(iter([request]))]
            names = {s.name for s in responses[0].list_services_response.service}
            assert {
                "mogames.happymochi.v1.HappyMochi",
                "mogames.lobby.v1.Lobby",
                "grpc.health.v1.Health",
            } <= names
            played = await play_match(GameClient(channel, "happy_mochi"), 2, seed=2)
    finally:
        for process in (gateway, service):
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=30) for process in (gateway, service)]
    assert codes == [0, 0], (tmp_path / "gateway.log").read_text() + (tmp_path / "service.log").read_text()
    output = (tmp_path / "service.log").read_text()
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    committed = [line for line in lines if line["event"] == "move_committed"]
    assert len(committed) == played.moves
    assert {"rpc", "match_id", "seat", "request_id", "version"} <= set(committed[0])
    assert committed[0]["service"] == "happy_mochi"
    assert any(line["event"] == "stopped" for line in lines)


async def test_gateway_health_follows_its_backends(cluster):
    from gateway.backends import ReplicaPool, refresh_health
    from services.runtime import serving

    server = grpc.aio.server()
    checker = await serving.add_health_and_reflection(
        server, ["mogames.mori.v1.Mori", "mogames.more.v1.More"]
    )
    up = ReplicaPool("mogames.mori.v1.Mori", (cluster.replicas_addresses["mori"][0],))
    down = ReplicaPool("mogames.more.v1.More", (f"127.0.0.1:{free_port()}",))
    await refresh_health(checker, [up, down])
    check = health_pb2.HealthCheckRequest
    assert (
        await checker.Check(check(service=up.service), None)
    ).status == health_pb2.HealthCheckResponse.SERVING
    assert (await checker.Check(check(service=down.service), None)).status == (
        health_pb2.HealthCheckResponse.NOT_SERVING
    )
    await up.close()
    await down.close()


async def test_a_service_stopped_under_open_watches_leaves_nothing_pending(redis_url, tmp_path):
    """SIGTERM while matches are watched and played: the streams end, the process exits 0,
    and its log has no task destroyed pending nor a failed unsubscribe (both were seen once
    at the end of a `make bench`; tests/test_watch.py checks the hub's part of it)."""
    port = free_port()
    log = tmp_path / "service.log"
    service = spawn_service(
        "happy_mochi", f"127.0.0.1:{port}", redis_url, log, {"MOGAMES_ALLOW_CLIENT_SEED": "true"}
    )
    try:
        wait_for_port(port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = GameClient(channel, "happy_mochi")
            calls = []
            for seed in (3, 4, 5):
                started = await start_match(client, 2, seed=seed)
                for token in started.tokens.values():
                    # One seat watches, the other plays: both streams hold a subscription.
                    if calls and len(calls) % 2:
                        call = await client.play(started.match_id, token)
                    else:
                        call = client.watch(started.match_id, token)
                    await anext(aiter(call))  # subscribed: its first event came
                    calls.append(call)
            service.send_signal(signal.SIGTERM)
            assert service.wait(timeout=30) == 0, log.read_text()
            for call in calls:
                call.cancel()
    finally:
        if service.poll() is None:
            service.kill()
    output = log.read_text()
    assert "Task was destroyed but it is pending" not in output, output
    assert "watch_subscription_failed" not in output, output
    assert any(json.loads(line)["event"] == "stopped" for line in output.splitlines() if line.startswith("{"))
