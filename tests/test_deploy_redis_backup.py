"""Backup and restore (deploy/redis_backup.py, as an operator runs it): a backup of a durable,
password-protected Redis taken while matches are live, restored into an empty folder, is
served by a fresh durable Redis started on that folder alone (its append-only file, as
``make run``'s Redis keeps it): a replica reads every match back as it was at the backup,
event for event, and the matches play on."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc

from clients.game_client import GameClient
from deploy.redis_backup import APPEND_ONLY
from deploy.redis_server import durable_redis_command, free_port, wait_for_port
from services.runtime.server import build as build_service
from tests.conftest import service_settings
from tests.helpers import StartedMatch, active_seat_move, start_match

GAME = "happy_mochi"
PASSWORD = "backup-test-password"
PROJECT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def durable_redis(data_dir: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        durable_redis_command(port, data_dir, PASSWORD), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        wait_for_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.asynccontextmanager
async def replica(redis_url: str) -> AsyncIterator[GameClient]:
    settings = dataclasses.replace(service_settings(GAME, redis_url), redis_password=PASSWORD)
    service = await build_service(settings)
    await service.server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            yield GameClient(channel, GAME)
    finally:
        await service.server.stop(None)
        await service.close()


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m deploy.redis_backup`` as an operator runs it (Redis is the one blocked meanwhile)."""
    return subprocess.run(
        [sys.executable, "-m", "deploy.redis_backup", *args],
        env={**os.environ, "MOGAMES_REDIS_PASSWORD": PASSWORD},
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def tool(*args: str) -> str:
    done = run_tool(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def history(client: GameClient, started: StartedMatch) -> list[tuple[int, int, str]]:
    """The stream of the seat to move up to its prompt (which comes after every stored event),
    but the seats' connection events, which watching itself appends."""
    seat = (await client.match(started.match_id)).active_seats[0]
    events = []
    stream = client.watch(started.match_id, started.tokens[seat], timeout_s=30)
    async for event in stream:
        if event.WhichOneof("event") == "prompt":
            break
        if event.WhichOneof("event") != "seat_connection":
            events.append((event.version, event.seq, event.WhichOneof("event")))
    stream.cancel()
    return events


async def test_a_backup_restored_into_an_empty_folder_serves_every_match_and_they_play_on(tmp_path):
    backup_file = tmp_path / "backup.rdb"
    with durable_redis(tmp_path / "live") as url:
        async with replica(url) as client:
            matches = [await start_match(client, 2, seed=seed) for seed in (11, 12, 13)]
            for started in matches[:2]:
                for _ in range(3):
                    seat, move, version = await active_seat_move(client, started)
                    await client.submit(
                        started.match_id, started.tokens[seat], move, expected_version=version
                    )
            seen = {m.match_id: await client.match(m.match_id) for m in matches}
            histories = {m.match_id: await history(client, m) for m in matches}
            assert "backed up to" in tool("backup", url, str(backup_file))
            # A move after the backup is not in it.
            seat, move, version = await active_seat_move(client, matches[0])
            await client.submit(matches[0].match_id, matches[0].tokens[seat], move, expected_version=version)

    restored = tmp_path / "restored"
    assert "restored" in tool("restore", str(backup_file), str(restored))
    assert any((restored / name).exists() for name in APPEND_ONLY) and not (restored / "dump.rdb").exists()
    with durable_redis(restored) as url:
        async with replica(url) as client:
            for started in matches:
                match = await client.match(started.match_id)
                before = seen[started.match_id]
                assert (match.version, match.status, list(match.active_seats)) == (
                    before.version,
                    before.status,
                    list(before.active_seats),
                )
                assert await history(client, started) == histories[started.match_id]
                # It plays on: the seat to move moves, with the tokens handed out before.
                seat, move, version = await active_seat_move(client, started)
                answer = await client.submit(
                    started.match_id, started.tokens[seat], move, expected_version=version
                )
                assert answer.version == version + 1
    # A folder that holds data is refused, not overwritten.
    refused = run_tool("restore", str(backup_file), str(restored))
    assert refused.returncode == 1 and "holds data already" in refused.stderr
