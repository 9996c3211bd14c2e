"""``make run`` as real processes (deploy.local): its children are killed with SIGKILL while
bots play, and the whole set is stopped and started again, on one data folder."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from deploy.local import RunSettings, RunSettingsError
from deploy.redis_server import OWN_SETTINGS, durable_redis_command, free_port, wait_for_port
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore

GAME = "mori"  # 3 seats, 120 moves a match: short
PLAYERS = 3
BOTS = 3  # each plays match after match
KILLED = (f"{GAME}-1", "gateway", "nginx", "redis")
# Reconnect fast to a gateway that was restarted.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 500)]


@dataclass
class MakeRun:
    data_dir: Path
    gateway: str
    redis_port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, replicas: int, nginx: bool) -> None:
        env = {
            **os.environ,
            "MOGAMES_DATA_DIR": str(self.data_dir),
            "MOGAMES_RUN_GAMES": GAME,
            "MOGAMES_REPLICAS": str(replicas),
            "MOGAMES_REDIS_PORT": str(self.redis_port),
            "MOGAMES_FIRST_SERVICE_PORT": "0",
            "MOGAMES_GATEWAY_LISTEN": self.gateway,
            "MOGAMES_LOG_LEVEL": "warning",
            # The bots replay deals by seed and create matches from one address.
            "MOGAMES_ALLOW_CLIENT_SEED": "true",
            "MOGAMES_CREATE_LIMIT": "0",
            "MOGAMES_MAX_WAITING_PER_CLIENT": "0",
            "MOGAMES_NGINX": str(nginx).lower(),
            # "Loses no acknowledged move" holds for a killed Redis whatever the disk's speed
            # only with an fsync per write: everysec may reply ahead of a lagging file.
            "MOGAMES_REDIS_APPENDFSYNC": "always",
        }
        for name in ("MOGAMES_TOKEN_SECRET", "MOGAMES_REDIS_PASSWORD"):
            env.pop(name, None)  # make run's own, kept in the data folder
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "deploy.local"], env=env, stdout=out, stderr=out
            )
        wait_for_port(int(self.gateway.rsplit(":", 1)[1]), timeout_s=90)
        deadline = time.monotonic() + 30
        while not (self.data_dir / "processes.json").exists():  # written once all are up
            assert time.monotonic() < deadline, "make run did not write its pid file"
            time.sleep(0.05)

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)  # Ctrl-C
        return self.process.wait(timeout=60)

    def pids(self) -> dict[str, int | None]:
        return json.loads((self.data_dir / "processes.json").read_text())

    def kill(self, name: str) -> None:
        """SIGKILL one child; returns once the supervisor has started it again."""
        old = self.pids()[name]
        assert old is not None
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while self.pids().get(name) in (None, old):
            assert time.monotonic() < deadline, f"{name} was not restarted"
            time.sleep(0.05)

    def supervisor_events(self) -> list[dict[str, Any]]:
        lines = [line for line in self.log.read_text().splitlines() if line.startswith("{")]
        return [e for e in map(json.loads, lines) if e.get("service") == "supervisor"]

    def redis(self) -> Any:
        password = (self.data_dir / "redis-password").read_text().strip()
        # The test's own reads and bulk writes: a service's short timeout would fail a 60,000
        # command pipeline on a machine other work keeps busy.
        return connect(f"redis://127.0.0.1:{self.redis_port}/0", password, socket_timeout_s=30)


@pytest.fixture
async def make_run(tmp_path: Path) -> AsyncIterator[MakeRun]:
    run = MakeRun(tmp_path / "data", f"127.0.0.1:{free_port()}", free_port(), tmp_path / "make-run.log")
    yield run
    if run.process is not None and run.process.poll() is None:
        run.stop()


async def retried(call: Callable[[], Awaitable[Any]]) -> Any:
    """``call`` until it is not UNAVAILABLE: the same request, so the same request id."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


@dataclass
class BotMatch:
    match_id: str
    tokens: dict[int, str]
    acknowledged: list[int] = field(default_factory=list)
    status: int = common_pb2.IN_PROGRESS


async def start_match(client: GameClient) -> BotMatch:
    created = await retried(lambda: client.create(PLAYERS, seed=7))
    tokens = {}
    for n in range(PLAYERS):
        # A request id: a join whose answer a kill lost is answered again, not refused as
        # a second join of a match it filled.
        request_id = uuid.uuid4().hex
        joined = await retried(lambda n=n, r=request_id: client.join(created.match_id, f"bot-{n}", r))
        tokens[joined.seat] = joined.token
    return BotMatch(created.match_id, tokens)


async def play(client: GameClient, match: BotMatch, moves: int | None = None) -> None:
    """Its moves until the end (or ``moves`` of them), every call retried while UNAVAILABLE."""
    active = list((await retried(lambda: client.match(match.match_id))).active_seats)
    while match.status == common_pb2.IN_PROGRESS and (moves is None or moves > 0):
        token = match.tokens[active[0]]
        legal = await retried(lambda t=token: client.legal_moves(match.match_id, t))
        request_id = uuid.uuid4().hex
        answer = await retried(
            lambda t=token, m=legal.moves[0], r=request_id: client.submit(match.match_id, t, m, request_id=r)
        )
        match.acknowledged.append(answer.version)
        active, match.status = list(answer.active_seats), answer.status
        moves = None if moves is None else moves - 1


async def assert_intact(client: GameClient, run: MakeRun, matches: list[BotMatch]) -> None:
    """Every acknowledged move stored once, and the tokens handed out at the start still work."""
    redis = run.redis()
    try:
        for match in matches:
            assert match.acknowledged == list(range(1, len(match.acknowledged) + 1))
            stored = await MatchStore(redis, GAME).history(match.match_id)
            assert {e.version for e in stored} - {0} == set(match.acknowledged)
            found = await retried(lambda m=match: client.match(m.match_id))
            assert (found.version, found.status) == (len(match.acknowledged), match.status)
            for token in match.tokens.values():
                view = await retried(lambda t=token, m=match: client.view(m.match_id, t))
                assert view.version == found.version
    finally:
        await redis.aclose()


async def bot(client: GameClient, matches: list[BotMatch], stop: asyncio.Event) -> None:
    """Match after match, each played to its end, until ``stop``."""
    while not stop.is_set():
        match = await start_match(client)
        matches.append(match)
        await play(client, match)


async def test_kill_9_of_a_replica_the_gateway_nginx_and_redis_loses_no_acknowledged_move(make_run):
    make_run.start(replicas=2, nginx=True)
    assert "nginx" in make_run.pids()  # in front; the gateway behind it
    async with grpc.aio.insecure_channel(make_run.gateway, options=CHANNEL_OPTIONS) as channel:
        client = GameClient(channel, GAME)
        matches: list[BotMatch] = []
        stop = asyncio.Event()
        bots = [asyncio.create_task(bot(client, matches, stop)) for _ in range(BOTS)]

        def moves() -> int:
            return sum(len(m.acknowledged) for m in matches)

        async def moved_since(before: int) -> bool:
            # However loaded the machine: some move acknowledged after ``before`` (within 30 s).
            for _ in range(300):
                if moves() > before:
                    return True
                await asyncio.sleep(0.1)
            return False

        for name in KILLED:
            assert await moved_since(moves()), f"the bots were playing when {name} was killed"
            await asyncio.to_thread(make_run.kill, name)
        after_last_restart = moves()
        await asyncio.sleep(1)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*bots), timeout=120)
        assert moves() > after_last_restart, "play went on"
        assert all(m.status == common_pb2.FINISHED for m in matches), "every match finished"
        await assert_intact(client, make_run, matches)
    exits = [e["name"] for e in make_run.supervisor_events() if e["event"] == "process_exited"]
    assert exits == list(KILLED)  # each logged, each restarted once


async def test_stopped_and_started_again_make_run_keeps_every_match_and_token(make_run):
    make_run.start(replicas=1, nginx=False)  # the Python gateway alone in front
    async with grpc.aio.insecure_channel(make_run.gateway, options=CHANNEL_OPTIONS) as channel:
        client = GameClient(channel, GAME)
        finished, halfway = await start_match(client), await start_match(client)
        await play(client, finished)
        await play(client, halfway, moves=10)
    assert make_run.stop() == 0
    make_run.start(replicas=1, nginx=False)
    async with grpc.aio.insecure_channel(make_run.gateway, options=CHANNEL_OPTIONS) as channel:
        client = GameClient(channel, GAME)
        await assert_intact(client, make_run, [finished, halfway])
        await play(client, halfway)  # and it plays on to the end
        assert halfway.status == common_pb2.FINISHED
        await assert_intact(client, make_run, [finished, halfway])


def test_make_run_s_redis_fsync_policy_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MOGAMES_REDIS_APPENDFSYNC", "always")
    settings = RunSettings.from_env()
    command = durable_redis_command(6379, tmp_path, None, settings.appendfsync)
    assert "appendfsync always" in Path(command[-1]).read_text().splitlines()
    monkeypatch.setenv("MOGAMES_REDIS_APPENDFSYNC", "sometimes")
    with pytest.raises(RunSettingsError, match="MOGAMES_REDIS_APPENDFSYNC must be one of everysec, always"):
        RunSettings.from_env()


async def test_make_run_comes_back_on_an_append_only_file_that_takes_seconds_to_load(make_run):
    make_run.start(replicas=2, nginx=False)
    async with grpc.aio.insecure_channel(make_run.gateway, options=CHANNEL_OPTIONS) as channel:
        client = GameClient(channel, GAME)
        halfway = await start_match(client)
        await play(client, halfway, moves=5)
    redis = make_run.redis()
    try:
        # Writes enough that, with Redis pausing LOAD_DELAY_US after each as it loads the
        # file again (its key-load-delay), loading takes LOADING_S at least.
        async with redis.pipeline(transaction=False) as pipe:
            for n in range(LOADED_WRITES):
                pipe.set(f"filler:{n}", "x")
            await pipe.execute()
    finally:
        await redis.aclose()
    assert make_run.stop() == 0
    (make_run.data_dir / "redis" / OWN_SETTINGS).write_text(f"key-load-delay {LOAD_DELAY_US}\n")
    began = time.monotonic()
    make_run.start(replicas=2, nginx=False)
    took_s = time.monotonic() - began
    events = [json.loads(line) for line in make_run.log.read_text().splitlines() if line.startswith("{")]
    # Both replicas (and every other process on Redis: players, workers) started while
    # Redis loaded, said so once each, and came up after it.
    loading = [(e["service"], e.get("replica")) for e in events if e.get("event") == "redis_loading"]
    assert len(set(loading)) == len(loading) and "players" in {service for service, _ in loading}
    assert len({replica for service, replica in loading if service == GAME}) == 2
    assert took_s >= LOADING_S
    assert not [e for e in make_run.supervisor_events() if e["event"] == "process_exited"]
    async with grpc.aio.insecure_channel(make_run.gateway, options=CHANNEL_OPTIONS) as channel:
        client = GameClient(channel, GAME)
        await assert_intact(client, make_run, [halfway])
        await play(client, halfway)
        assert halfway.status == common_pb2.FINISHED


# Long enough that every process, started at once on a loaded machine, is up before it ends.
LOADED_WRITES = 60_000
LOAD_DELAY_US = 100
LOADING_S = LOADED_WRITES * LOAD_DELAY_US / 1e6
