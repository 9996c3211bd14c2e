"""``make bench-discovery``: the same bot load through the gateway to three replicas of a
game, listed as three addresses, then behind one service name resolving to them (as a
Kubernetes headless Service does), in one run: moves/s, move p50/p99, errors, the
gateway's ``mogames_gateway_backends_up`` and the moves each replica committed.

    python -m bench.bench_discovery [--game happy_mochi] [--concurrency 12] [--duration 10]

Real processes: Redis, three service replicas on 127.0.0.1-3 at one port, and a gateway
whose resolver answers the service name from ``MOGAMES_BENCH_RECORDS`` (no DNS server
needed; the gateway's own code follows the name as it would in a cluster).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench import markdown
from bench.environment import use_bench_environment
from bench.load import game_load, percentile
from deploy.redis_server import free_port, running_redis
from services.catalog import rules_module

HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
NAME = "replicas.bench.invalid"
RECORDS_ENV = "MOGAMES_BENCH_RECORDS"  # "name=ip,ip,ip"


@dataclass
class Row:
    setup: str
    moves: int
    moves_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    backends_up: float
    committed: list[float]


def _metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
        for line in page.read().decode().splitlines():
            if line.startswith(name) and not line.startswith("#"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _until_serving(target: str, service: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    async with grpc.aio.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.2)
    raise TimeoutError(f"{target} never served {service}")


@contextmanager
def _processes(commands: list[tuple[list[str], dict[str, str]]], log: IO[bytes]) -> Iterator[None]:
    started = [subprocess.Popen(c, env=e, stdout=log, stderr=log) for c, e in commands]
    try:
        yield
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=30)


def run_setup(setup: str, backends: str, args: argparse.Namespace, log: IO[bytes]) -> Row:
    game = rules_module(args.game).GAME
    env = {**os.environ, "MOGAMES_TOKEN_SECRET": secrets.token_urlsafe(32)}
    service_port = free_port()
    metrics_ports = [free_port() for _ in HOSTS]
    gateway_port, gateway_metrics = free_port(), free_port()
    with running_redis() as redis_url:
        env["MOGAMES_REDIS_URL"] = redis_url
        services = [
            (
                [sys.executable, "-m", "services", args.game],
                {
                    **env,
                    "MOGAMES_LISTEN": f"{host}:{service_port}",
                    "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{m}",
                },
            )
            for host, m in zip(HOSTS, metrics_ports, strict=True)
        ]
        gateway = (
            [sys.executable, "-m", "bench.bench_discovery", "--serve-gateway"],
            {
                **env,
                "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
                "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{gateway_metrics}",
                "MOGAMES_WEB_LISTEN": "",
                f"MOGAMES_BACKENDS_{args.game.upper()}": backends.format(port=service_port),
                RECORDS_ENV: f"{NAME}={','.join(HOSTS)}",
            },
        )
        with _processes([*services, gateway], log):
            target = f"127.0.0.1:{gateway_port}"
            asyncio.run(_until_serving(target, game.full_service))
            asyncio.run(game_load(target, args.game, args.concurrency, args.warmup, {}))
            before = [_metric(m, "mogames_moves_committed_total") for m in metrics_ports]
            load, elapsed = asyncio.run(game_load(target, args.game, args.concurrency, args.duration, {}))
            after = [_metric(m, "mogames_moves_committed_total") for m in metrics_ports]
            up = _metric(gateway_metrics, "mogames_gateway_backends_up")
    latencies = load.latencies_s
    return Row(
        setup,
        load.moves,
        load.moves / elapsed,
        percentile(latencies, 0.5) * 1000,
        percentile(latencies, 0.99) * 1000,
        load.errors,
        up,
        [a - b for a, b in zip(after, before, strict=True)],
    )


def serve_gateway() -> None:
    """The gateway, its resolver answering the bench's one name from RECORDS_ENV."""
    from gateway.server import main as gateway_main
    from services.runtime import logs, serving
    from services.runtime.settings import GatewaySettings

    name, _, addresses = os.environ[RECORDS_ENV].partition("=")

    async def resolver(host: str) -> list[str]:
        if host != name:
            raise OSError(f"{host}: not a name of this bench")
        return addresses.split(",")

    settings = GatewaySettings.from_env()
    logs.configure(settings.log_level, service="gateway", replica=settings.listen)
    serving.run(gateway_main(settings, resolver), "mogames bench gateway")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="happy_mochi")
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--serve-gateway", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_gateway:
        serve_gateway()
        return
    use_bench_environment()
    setups = [
        ("addresses listed", ",".join(f"{h}:{{port}}" for h in HOSTS)),
        ("one service name", f"{NAME}:{{port}}"),
    ]
    with tempfile.TemporaryFile() as log:
        rows = [run_setup(setup, backends, args, log) for setup, backends in setups]
    print(
        f"{args.game}, three replicas, {args.concurrency} matches at a time for {args.duration:g} s"
        f" after {args.warmup:g} s of warm-up, through the Python gateway:\n"
    )
    header = ["backends", "moves", "moves/s", "p50 ms", "p99 ms", "errors", "backends up", "moves by replica"]
    print(
        markdown.table(
            header,
            [
                [
                    r.setup,
                    str(r.moves),
                    f"{r.moves_per_s:.0f}",
                    f"{r.p50_ms:.1f}",
                    f"{r.p99_ms:.1f}",
                    str(r.errors),
                    f"{r.backends_up:g}",
                    " / ".join(f"{c:.0f}" for c in r.committed),
                ]
                for r in rows
            ],
        )
    )


if __name__ == "__main__":
    main()
