"""``make bench-front``: the same bot load through the Python gateway alone, then through
nginx in front of it (deploy/nginx.py), in one run: moves/s, SubmitMove p50/p99, errors,
and server CPU per committed move (every server process, Redis included, from /proc).

    python -m deploy.bench_front --game happy_mochi --concurrency 16 --duration 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass

import redis.asyncio as aioredis

from clients.bench import game_load, percentile
from deploy.launcher import System, running_system
from deploy.redis_server import free_port

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and its waited-for children, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # Fields 14-17 of stat(5): utime, stime, cutime, cstime (here counted from field 3).
    return sum(int(value) for value in fields[11:15]) / TICKS


async def server_pids(system: System) -> list[int]:
    client = aioredis.Redis.from_url(system.redis_url)
    try:
        redis_pid = int((await client.info("server"))["process_id"])
    finally:
        await client.aclose()
    return [redis_pid, *(p.pid for p in system.processes)]


@dataclass
class Figures:
    front: str
    moves_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_ms_per_move: float


async def measure(system: System, front: str, args: argparse.Namespace) -> Figures:
    pids = await server_pids(system)
    before = sum(cpu_seconds(pid) for pid in pids)
    load, elapsed = await game_load(system.gateway, args.game, args.concurrency, args.duration, {})
    used = sum(cpu_seconds(pid) for pid in pids) - before
    return Figures(
        front,
        load.moves / elapsed,
        percentile(load.latencies_s, 0.5) * 1000,
        percentile(load.latencies_s, 0.99) * 1000,
        load.errors,
        used * 1000 / max(load.moves, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", default="happy_mochi")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--replicas", type=int, default=2)
    args = parser.parse_args()
    # The bots choose seeds and create many matches from one address.
    for name, value in (
        ("MOGAMES_LOG_LEVEL", "warning"),
        ("MOGAMES_ALLOW_CLIENT_SEED", "true"),
        ("MOGAMES_CREATE_LIMIT", "0"),
        ("MOGAMES_JOIN_LIMIT", "0"),
        ("MOGAMES_MAX_WAITING_PER_CLIENT", "0"),
    ):
        os.environ.setdefault(name, value)
    results = []
    for front, nginx_front in (("python gateway", False), ("nginx + gateway", True)):
        listen = f"127.0.0.1:{free_port()}"
        with running_system(
            [args.game], args.replicas, gateway_listen=listen, nginx_front=nginx_front
        ) as system:
            results.append(asyncio.run(measure(system, front, args)))
    setup = f"{args.concurrency} matches at once, {args.duration:g} s each, {args.replicas} replicas"
    print(f"\n{args.game}, {setup}")
    print(f"{'front':<16} {'moves/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} {'CPU ms/move':>11}")
    for r in results:
        print(
            f"{r.front:<16} {r.moves_per_s:>8.0f} {r.p50_ms:>7.1f} {r.p99_ms:>7.1f} {r.errors:>6} "
            f"{r.cpu_ms_per_move:>11.2f}"
        )


if __name__ == "__main__":
    main()
