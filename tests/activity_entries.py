"""Helpers for the workers' tests: a Redis database of their own, activity entries in the
documented format, and worker processes (the real entry point) to start and kill."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from services.runtime import keys

_databases = itertools.cycle(range(1, 16))


@pytest.fixture
async def worker_redis(redis_url: str) -> Any:
    """A Redis database no other test of this process uses now, emptied: (url, client)."""
    url = f"{redis_url.rsplit('/', 1)[0]}/{next(_databases)}"
    client = aioredis.Redis.from_url(url)
    await client.flushdb()
    yield url, client
    await client.aclose()


def entry_fields(
    notice: str,
    game: str,
    match_id: str,
    version: int,
    players: list[str],
    *,
    at_ms: int,
    bots: list[int] | None = None,
    seats: list[int] | None = None,
    deadlines: dict[int, int] | None = None,
    status: str = "IN_PROGRESS",
    scores: list[int] | None = None,
    winners: list[int] | None = None,
    table: dict[str, Any] | None = None,
) -> dict[str, str]:
    """An activity entry as the game services write it (notes: the players' activity stream)."""
    return {
        "notice": notice,
        "game": game,
        "match_id": match_id,
        "version": str(version),
        "at_ms": str(at_ms),
        "players": json.dumps(players),
        "bots": json.dumps(bots or []),
        "seats": json.dumps(list(range(len(players))) if seats is None else seats),
        "deadlines": json.dumps({str(k): v for k, v in (deadlines or {}).items()}),
        "status": status,
        "scores": json.dumps(scores or []),
        "winners": json.dumps(winners or []),
        "table": json.dumps(table or {"players": len(players), "options": {}}),
    }


async def add_entry(client: aioredis.Redis, fields: dict[str, str]) -> str:
    entry_id = await client.xadd(keys.activity(fields["game"]), fields)  # type: ignore[arg-type]
    return entry_id.decode()


def start_worker(kind: str, redis_url: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """``python -m services.workers <kind>`` on ``redis_url``; its logs appended to ``log``."""
    settings = {"MOGAMES_REDIS_URL": redis_url, "MOGAMES_LOG_LEVEL": "info", "PYTHONUNBUFFERED": "1", **env}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "services.workers", kind],
            env={**os.environ, **settings},
            stdout=out,
            stderr=out,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=20)


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """A list to put started workers in: every one left running is killed at the end."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            stop(process)
