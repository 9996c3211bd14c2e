"""``make bench-cluster``: the same bot load on one plain Redis, then on Redis Clusters of 1,
2 and 3 masters, in one run: moves/s, SubmitMove p50/p99, errors, and CPU per committed
move (from /proc) of every server process, split into the Redis nodes, the game service
replicas and the gateway, with the load client's own CPU beside it (it shares the machine).

    python -m bench.bench_cluster [--masters 1,2,3] [--concurrency 32] [--duration 20]

Every setup is started from scratch: its Redis (or cluster, from the project's
redis-server, ``--cluster-replicas`` replicas per master), ``--replicas`` service
processes and a gateway, as real processes. The bots play by WatchMatch prompts and
SubmitMove (clients/bot.py), through the gateway. A ``--warmup`` of play comes first and
is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import redis

from bench import markdown
from bench.baselines import cpu_seconds
from bench.environment import use_bench_environment
from bench.load import game_load, percentile
from deploy.launcher import System, running_system
from deploy.redis_cluster import running_redis_cluster
from deploy.redis_server import free_port

PLAIN = 0  # the "masters" count that stands for one plain (non-cluster) Redis


@dataclass
class Setup:
    """What one row ran on: its Redis URL and the pids of its Redis processes."""

    name: str
    redis_url: str
    redis_pids: list[int]


@contextlib.contextmanager
def running_redis_setup(masters: int, replicas_per_master: int) -> Iterator[Setup | None]:
    """A cluster of ``masters`` masters; None for PLAIN (the system then starts its own)."""
    if masters == PLAIN:
        yield None
        return
    with running_redis_cluster(masters, replicas_per_master) as cluster:
        name = f"cluster {masters}m" + (f"+{masters * replicas_per_master}r" if replicas_per_master else "")
        yield Setup(name, cluster.url, [node.process.pid for node in cluster.nodes])


@dataclass
class Row:
    setup: str
    moves_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    # CPU ms per committed move.
    redis_ms: float
    services_ms: float
    gateway_ms: float
    client_ms: float
    # The busiest Redis process's share of one core, and all server processes' cores busy.
    busiest_redis_core: float
    server_cores: float

    @property
    def server_ms(self) -> float:
        return self.redis_ms + self.services_ms + self.gateway_ms


def _client_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


async def measure(system: System, setup: Setup, args: argparse.Namespace) -> Row:
    # running_system starts the services first and the gateway last.
    groups = {
        "redis": setup.redis_pids,
        "services": [p.pid for p in system.processes[:-1]],
        "gateway": [system.processes[-1].pid],
    }
    await game_load(system.gateway, args.game, args.concurrency, args.warmup, {})
    before = {pid: cpu_seconds(pid) for pids in groups.values() for pid in pids}
    client_before, started = _client_cpu_s(), time.perf_counter()
    load, _ = await game_load(system.gateway, args.game, args.concurrency, args.duration, {})
    elapsed = time.perf_counter() - started
    used = {pid: cpu_seconds(pid) - before[pid] for pid in before}
    moves = max(load.moves, 1)

    def per_move_ms(group: str) -> float:
        return sum(used[pid] for pid in groups[group]) * 1000 / moves

    return Row(
        setup.name,
        load.moves / elapsed,
        percentile(load.latencies_s, 0.5) * 1000,
        percentile(load.latencies_s, 0.99) * 1000,
        load.errors,
        per_move_ms("redis"),
        per_move_ms("services"),
        per_move_ms("gateway"),
        (_client_cpu_s() - client_before) * 1000 / moves,
        max(used[pid] for pid in groups["redis"]) / elapsed,
        sum(used.values()) / elapsed,
    )


def _plain_redis_pid(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return int(client.info("server")["process_id"])
    finally:
        client.close()


def run_setup(masters: int, args: argparse.Namespace, log: IO[bytes]) -> Row:
    with running_redis_setup(masters, args.cluster_replicas) as setup:
        listen = f"127.0.0.1:{free_port()}"
        with running_system(
            [args.game],
            args.replicas,
            gateway_listen=listen,
            redis_url=setup.redis_url if setup else None,
            log=log,
        ) as system:
            if setup is None:
                setup = Setup("one Redis", system.redis_url, [_plain_redis_pid(system.redis_url)])
            print(f"{setup.name}: {args.concurrency} matches for {args.duration:g} s ...", flush=True)
            return asyncio.run(measure(system, setup, args))


def report(rows: list[Row], args: argparse.Namespace) -> None:
    print(
        f"\n{args.game}, {args.concurrency} matches at once, {args.duration:g} s each after "
        f"{args.warmup:g} s of warm-up, {args.replicas} service replicas, one gateway, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"
    )
    header = ["setup", "moves/s", "p50 ms", "p99 ms", "errors", "CPU ms/move", "redis", "svc", "gw"]
    header += ["client", "max redis core", "server cores"]
    cells = [
        [
            r.setup,
            f"{r.moves_per_s:.0f}",
            f"{r.p50_ms:.1f}",
            f"{r.p99_ms:.1f}",
            str(r.errors),
            *(f"{ms:.2f}" for ms in (r.server_ms, r.redis_ms, r.services_ms, r.gateway_ms, r.client_ms)),
            f"{r.busiest_redis_core:.0%}",
            f"{r.server_cores:.2f}",
        ]
        for r in rows
    ]
    print(markdown.table(header, cells))
    print(
        "CPU ms/move: every server process (Redis nodes + services + gateway) from /proc, split"
        " into redis/svc/gw; client: this load generator's own CPU, on the same machine."
        "\nmax redis core: the busiest Redis process's share of one core; server cores: all server"
        " processes' CPU / wall time."
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", default="happy_mochi")
    parser.add_argument(
        "--masters", default="0,1,2,3", help="comma-separated master counts; 0 = one plain Redis"
    )
    parser.add_argument("--cluster-replicas", type=int, default=0, help="replicas per master")
    parser.add_argument("--concurrency", type=int, default=32, help="matches played at once")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per setup")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
    parser.add_argument("--replicas", type=int, default=2, help="service processes")
    args = parser.parse_args()
    masters = [int(m) for m in args.masters.split(",") if m]
    if any(m < 0 for m in masters):
        parser.error("--masters are counts of masters, 0 for one plain Redis")
    use_bench_environment(MOGAMES_WEB_LISTEN="")  # no web port: only native gRPC is measured
    # The server processes' logs (warnings and errors: an INTERNAL answer's traceback).
    with tempfile.NamedTemporaryFile(prefix="mogames-bench-cluster-", suffix=".log", delete=False) as log:
        rows = [run_setup(m, args, log) for m in masters]
    report(rows, args)
    print(f"server logs: {log.name}")


if __name__ == "__main__":
    main()
