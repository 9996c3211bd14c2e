"""The workers under load: webhook notifications/s with their delay from commit to webhook
call, and rating updates/s.

    python -m bench.bench_workers [--notices-per-s 200] [--duration 5] [--matches 1000]

``make bench`` runs it last, on the Redis of the move load. The bench writes the activity
entries itself, in the format the game services write after a commit (docs/notifications.md),
stamped with the time of writing as their commit time: the figures are the workers' and the
webhook's, not the moves'. One notifier and one ratings worker process; the receiver is a
separate process on loopback (bench/webhook_sink.py) that checks every signature.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import redis.asyncio as aioredis

from bench import markdown
from deploy.redis_server import free_port, running_redis, wait_for_port
from services.catalog import GAME_PACKAGES
from services.runtime import keys

PLAYERS_PER_GAME = 200


@dataclass(frozen=True)
class WorkerFigures:
    notifications: int
    notifications_per_s: float
    delay_p50_ms: float
    delay_p99_ms: float
    rated_matches: int
    rating_updates_per_s: float


def _fields(notice: str, game: str, match_id: str, players: list[str], **more: object) -> dict[str, str]:
    return {
        "notice": notice,
        "game": game,
        "match_id": match_id,
        "version": str(more.get("version", 1)),
        "at_ms": str(int(time.time() * 1000)),
        "players": json.dumps(players),
        "bots": "[]",
        "seats": json.dumps(more.get("seats", list(range(len(players))))),
        "deadlines": "{}",
        "status": str(more.get("status", "IN_PROGRESS")),
        "scores": json.dumps(more.get("scores", [])),
        "winners": json.dumps(more.get("winners", [])),
        "table": json.dumps({"players": len(players), "options": {}}),
    }


@contextmanager
def _process(args: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _caught_up(client: aioredis.Redis, group: str) -> bool:
    for game in GAME_PACKAGES:
        stream = keys.activity(game)
        if not await client.exists(stream):
            continue
        groups = {g["name"].decode(): g for g in await client.xinfo_groups(stream)}
        tip = await client.xrevrange(stream, count=1)
        info = groups.get(group)
        if info is None or info["pending"] or (tip and info["last-delivered-id"] != tip[0][0]):
            return False
    return True


async def _notifications(client: aioredis.Redis, per_s: int, duration_s: float) -> tuple[int, float]:
    """Writes your_turn notices for one bound seat each at ``per_s`` a second; answers how
    many and the seconds it took to write them."""
    games = sorted(GAME_PACKAGES)
    started, written = time.monotonic(), 0
    while (elapsed := time.monotonic() - started) < duration_s:
        due = int(elapsed * per_s) - written
        for _ in range(due):
            game = games[written % len(games)]
            player = f"bench-{random.randrange(PLAYERS_PER_GAME)}"
            fields = _fields("your_turn", game, f"n{written}", [player, ""], version=written, seats=[0])
            await client.xadd(keys.activity(game), fields)  # type: ignore[arg-type]
            written += 1
        await asyncio.sleep(0.005)
    return written, time.monotonic() - started


async def _ratings(client: aioredis.Redis, matches: int) -> float:
    """Writes ``matches`` finished matches at once; answers seconds until all are rated."""
    games = sorted(GAME_PACKAGES)
    started = time.monotonic()
    async with client.pipeline(transaction=False) as pipe:
        for number in range(matches):
            game = games[number % len(games)]
            players = random.sample([f"bench-{i}" for i in range(PLAYERS_PER_GAME)], 2)
            scores = [random.randrange(10), random.randrange(10)]
            winners = [seat for seat in (0, 1) if scores[seat] == max(scores)]
            fields = _fields(
                "match_ended", game, f"r{number}", players, status="FINISHED", scores=scores, winners=winners
            )
            pipe.xadd(keys.activity(game), fields)  # type: ignore[arg-type]
        await pipe.execute()
    await _wait_caught_up(client, "ratings")
    return time.monotonic() - started


async def _wait_caught_up(client: aioredis.Redis, group: str, timeout_s: float = 300.0) -> None:
    give_up = time.monotonic() + timeout_s
    while not await _caught_up(client, group):
        if time.monotonic() > give_up:
            raise RuntimeError(f"the {group} group did not catch up within {timeout_s:g} s")
        await asyncio.sleep(0.02)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)] if ordered else 0.0


async def measure(redis_url: str, notices_per_s: int, duration_s: float, matches: int) -> WorkerFigures:
    secret = secrets.token_urlsafe(24)
    port = free_port()
    base = {"MOGAMES_REDIS_URL": redis_url, "MOGAMES_LOG_LEVEL": "warning", "MOGAMES_WEBHOOK_SECRET": secret}
    sink_args = ["-m", "granian", "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port)]
    sink_args.append("bench.webhook_sink:app")
    notifier_env = {**base, "MOGAMES_WEBHOOK_URL": f"http://127.0.0.1:{port}/hook"}
    client = aioredis.Redis.from_url(redis_url)
    try:
        with _process(sink_args, base), _process(["-m", "services.workers", "notifier"], notifier_env):
            wait_for_port(port, timeout_s=30)
            # The groups exist before the first entry: nothing written before counts.
            await _wait_caught_up(client, "notifier")
            written, _ = await _notifications(client, notices_per_s, duration_s)
            await _wait_caught_up(client, "notifier")
            async with httpx.AsyncClient() as http:
                sink = (await http.get(f"http://127.0.0.1:{port}/figures")).json()
        calls = sink["calls"]
        if sink["bad_signatures"] or sink["distinct"] < written:
            bad = sink["bad_signatures"]
            print(f"notifier: {sink['distinct']} of {written} delivered, {bad} bad signatures")
        delays = [came - committed for came, committed in calls]
        span_s = max((max(c for c, _ in calls) - min(c for c, _ in calls)) / 1000, 1e-9) if calls else 1.0
        with _process(["-m", "services.workers", "ratings"], base):
            await _wait_caught_up(client, "ratings")
            rating_s = await _ratings(client, matches)
    finally:
        await client.aclose()
    return WorkerFigures(
        len(calls),
        len(calls) / span_s,
        _percentile(delays, 0.5),
        _percentile(delays, 0.99),
        matches,
        matches / rating_s,
    )


def print_figures(figures: WorkerFigures, notices_per_s: int) -> None:
    header = [
        "notifications",
        "notifications/s",
        "commit to webhook p50 / p99 ms",
        "matches rated",
        "rating updates/s",
    ]
    row = [
        str(figures.notifications),
        f"{figures.notifications_per_s:.0f}",
        f"{figures.delay_p50_ms:.1f} / {figures.delay_p99_ms:.1f}",
        str(figures.rated_matches),
        f"{figures.rating_updates_per_s:.0f}",
    ]
    print(markdown.table(header, [row], text_columns=0))
    print(
        "workers: one notifier and one ratings worker process; your-turn notices written at"
        f" {notices_per_s}/s (one bound seat each) to a signature-checking receiver on loopback, then"
        " finished matches of two rated players written at once until all are rated (rating updates/s:"
        " matches, two players each)"
    )


async def run(redis_url: str, notices_per_s: int, duration_s: float, matches: int) -> None:
    """Measure and print (make bench's last table)."""
    print(f"\nthe workers: notices at {notices_per_s}/s for {duration_s:g} s, then {matches} matches ...")
    print_figures(await measure(redis_url, notices_per_s, duration_s, matches), notices_per_s)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notices-per-s", type=int, default=200, help="your-turn notices written a second")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of notices")
    parser.add_argument("--matches", type=int, default=1000, help="finished matches to rate")
    args = parser.parse_args()
    with running_redis() as redis_url:
        asyncio.run(run(redis_url, args.notices_per_s, args.duration, args.matches))


if __name__ == "__main__":
    main()
