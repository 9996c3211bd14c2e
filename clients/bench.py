"""Load test: concurrent bot matches through the gateway against a real Redis, and a bare
gRPC echo on the same machine in the same run, so figures compare as ratios.

    python -m clients.bench [--games happy_mochi,mori] [--concurrency 16] [--duration 10]

It starts its own Redis, ``--replicas`` processes per game and a gateway (as ``make run``
does), plays for ``--duration`` seconds per game, then prints one line per game: moves/s,
SubmitMove latency p50/p99, errors, and Redis memory per match.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import redis.asyncio as aioredis

from clients.bot import parse_options, play_match
from clients.echo import METHOD
from clients.game_client import GameClient
from deploy.launcher import running_system
from deploy.redis_server import free_port, wait_for_port
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime import keys


@dataclass
class Load:
    moves: int = 0
    finished: int = 0
    matches: list[str] = field(default_factory=list)
    errors: int = 0
    latencies_s: list[float] = field(default_factory=list)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


async def game_load(
    target: str, game: str, concurrency: int, duration_s: float, options: dict[str, Any]
) -> tuple[Load, float]:
    info = rules_module(game).GAME
    load = Load()
    until = time.monotonic() + duration_s

    async def worker(n: int, client: GameClient) -> None:
        rng = random.Random(n)
        while time.monotonic() < until:
            players = rng.randint(info.min_players, info.max_players)
            try:
                played = await play_match(
                    client, players, seed=rng.randrange(2**32), rng=rng, until=until, options=options
                )
            except grpc.aio.AioRpcError as error:
                load.errors += 1
                print(f"  {game}: {error.code().name}: {error.details()}", file=sys.stderr)
                continue
            load.moves += played.moves
            load.finished += played.finished
            load.matches.append(played.match_id)
            load.latencies_s += played.move_latencies_s

    async with grpc.aio.insecure_channel(target) as channel:
        client = GameClient(channel, game)
        started = time.perf_counter()
        await asyncio.gather(*(worker(n, client) for n in range(concurrency)))
        return load, time.perf_counter() - started


@contextlib.contextmanager
def running_echo() -> Iterator[str]:
    address = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen([sys.executable, "-m", "clients.echo", address])
    try:
        wait_for_port(int(address.rsplit(":", 1)[1]))
        yield address
    finally:
        server.terminate()
        server.wait()


async def echo_rate(address: str, concurrency: int, duration_s: float) -> float:
    calls = 0
    payload = os.urandom(64)
    async with grpc.aio.insecure_channel(address) as channel:
        echo = channel.unary_unary(METHOD)
        until = time.monotonic() + duration_s

        async def worker() -> None:
            nonlocal calls
            while time.monotonic() < until:
                assert await echo(payload) == payload
                calls += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return calls / (time.perf_counter() - started)


async def memory_per_match(redis_url: str, match_ids: list[str]) -> float:
    client = aioredis.Redis.from_url(redis_url)
    try:
        total = 0
        for match_id in match_ids:
            for key in (keys.match(match_id), keys.events(match_id)):
                total += await client.memory_usage(key) or 0
        return total / max(len(match_ids), 1)
    finally:
        await client.aclose()


async def bench(args: argparse.Namespace, target: str, redis_url: str, echo_address: str) -> None:
    print(f"echo baseline: {args.concurrency} concurrent callers for {args.duration}s ...", flush=True)
    echo_per_s = await echo_rate(echo_address, args.concurrency, args.duration)
    header = (
        f"{'game':<12} {'matches':>7} {'done':>5} {'moves':>7} {'moves/s':>8} {'p50 ms':>7} {'p99 ms':>7}"
    )
    print(header + f" {'errors':>6} {'KiB/match':>9} {'moves/s ÷ echo/s':>17}")
    for game in args.games:
        options = parse_options([o.split(":", 1)[1] for o in args.option if o.startswith(f"{game}:")])
        load, elapsed = await game_load(target, game, args.concurrency, args.duration, options)
        rate = load.moves / elapsed
        memory = await memory_per_match(redis_url, load.matches)
        p50, p99 = (percentile(load.latencies_s, f) * 1000 for f in (0.5, 0.99))
        print(
            f"{game:<12} {len(load.matches):>7} {load.finished:>5} {load.moves:>7} {rate:>8.0f} {p50:>7.2f}"
            f" {p99:>7.2f} {load.errors:>6} {memory / 1024:>9.1f} {rate / echo_per_s:>17.4f}",
            flush=True,
        )
    print(f"echo: {echo_per_s:.0f} calls/s (bare grpc.aio unary echo, 64-byte payload, same concurrency)")
    print(
        "a move is one SubmitMove, its seat told by its WatchMatch prompt (through the gateway to a"
        " replica and Redis);"
        f" latency is SubmitMove's as the client sees it; replicas per game: {args.replicas}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default=",".join(GAME_PACKAGES), help="comma-separated game names")
    parser.add_argument("--concurrency", type=int, default=16, help="matches played at once")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load per game")
    parser.add_argument("--replicas", type=int, default=2, help="service processes per game")
    parser.add_argument(
        "--option", action="append", default=[], help="match option game:name=value, e.g. more:max_rounds=1"
    )
    args = parser.parse_args()
    args.games = [g for g in args.games.split(",") if g]
    unknown = set(args.games) - set(GAME_PACKAGES)
    if unknown:
        parser.error(f"unknown games: {', '.join(sorted(unknown))}")
    os.environ.setdefault("MOGAMES_LOG_LEVEL", "warning")
    # The bench picks seeds and creates every match from one address: lift those guards.
    os.environ.setdefault("MOGAMES_ALLOW_CLIENT_SEED", "true")
    os.environ.setdefault("MOGAMES_CREATE_LIMIT", "0")
    os.environ.setdefault("MOGAMES_JOIN_LIMIT", "0")
    os.environ.setdefault("MOGAMES_MAX_WAITING_PER_CLIENT", "0")
    gateway = f"127.0.0.1:{free_port()}"
    with running_system(args.games, args.replicas, gateway_listen=gateway) as system, running_echo() as echo:
        asyncio.run(bench(args, system.gateway, system.redis_url, echo))


if __name__ == "__main__":
    main()
