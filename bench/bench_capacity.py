"""Connected players: how many seats, each holding its stream and moving every ~20 s, one
machine holds.

    python -m bench.bench_capacity [--steps 1000,2000,5000,10000,20000] [--think 5]

One run starts Redis, a game service and the gateway (deploy/launcher.py, the bench's
settings from bench/environment.py), then load-generator processes (bench/capacity_load.py:
asyncio, many streams per connection). Each seat holds one PlayMatch stream through the
gateway and moves on its prompts after a think time drawn around ``--think`` seconds. Happy
Mochi is played in turns, one seat at a time: with four seats a match and the default 5 s,
each seat moves about every 20 s (printed as measured). The seats are ramped
through ``--steps``; at each step, with every seat's stream open:

- an idle window (``--idle-window`` s, moves held back: streams, heartbeats, keepalives):
  server CPU per connected seat-second;
- a moving window (``--move-window`` s, once every seat has had its first think time):
  moves/s, move p50/p99 (sent to answered on the stream) and server CPU per move, less what
  the same seats cost idle meanwhile;
- server RSS per connected seat.

Idle CPU and RSS per seat are counted above what the servers use with no seat at all
(measured first, over an idle window). "Server" is the whole tree of the service, the
gateway and Redis, from /proc. The load generators' own CPU is printed apart. Last, the
largest step whose p99 stayed under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import redis.asyncio as aioredis

from bench import markdown
from bench.baselines import CpuMeter, with_descendants
from bench.environment import use_bench_environment
from deploy.launcher import running_system
from deploy.redis_server import free_port

P99_BOUND_MS = 100.0
# Streams a load-generator process holds at most.
SEATS_PER_LOAD_PROCESS = 5_000
BROWSER_SEATS_PER_LOAD_PROCESS = 500
# A load process's report is one line holding every move's latency.
REPORT_LIMIT_BYTES = 256 * 1024 * 1024

NATIVE, BROWSER = "native PlayMatch", "browser WatchMatch + SubmitMove"


@dataclass
class Step:
    path: str
    seats: int
    rss_kb_per_seat: float
    idle_us_per_seat_s: float
    moves_per_s: float
    # Seconds between two moves of one seat, on average.
    seat_move_interval_s: float
    cpu_ms_per_move: float
    p50_ms: float
    p99_ms: float
    errors: int
    cuts: int
    refused: int
    load_cpu_cores: float
    server_cpu_cores: float


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            continue
    return total


class LoadProcess:
    """A bench/capacity_load.py process, one command at a time."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, target: str, web: str, args: argparse.Namespace, seed: int) -> LoadProcess:
        command = [
            *("-m", "bench.capacity_load", "--target", target, "--web", web, "--game", args.game),
            *("--players", str(args.players), "--think", str(args.think), "--seed", str(seed)),
            *("--streams-per-channel", str(args.streams_per_channel)),
        ]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=REPORT_LIMIT_BYTES,  # past asyncio's 64 KiB at a few thousand seats
        )
        return cls(process)

    async def ask(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError("a load process ended: see its errors above")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


async def ask_all(loads: list[LoadProcess], command: dict[str, Any]) -> list[dict[str, Any]]:
    return await asyncio.gather(*(load.ask(command) for load in loads))


@dataclass
class Base:
    """The servers with no seat: RSS and idle CPU (their own timers: scheduler, health)."""

    rss_kb: int
    idle_cpu_per_s: float


async def measure_base(server: CpuMeter, server_pids: list[int], window_s: float) -> Base:
    server.start()
    started = time.monotonic()
    await asyncio.sleep(window_s)
    idle = sum(server.stop().values()) / (time.monotonic() - started)
    return Base(rss_kb(server_pids), idle)


async def measure_step(
    path: str,
    seats: int,
    loads: list[LoadProcess],
    server: CpuMeter,
    server_pids: list[int],
    base: Base,
    args: Any,
) -> Step:
    share = [seats // len(loads) + (1 if n < seats % len(loads) else 0) for n in range(len(loads))]
    opened = time.monotonic()
    server.start()
    await asyncio.gather(*(load.ask({"seats": n}) for load, n in zip(loads, share, strict=True)))
    opening_cpu = sum(server.stop().values())
    print(
        f"  {seats} seats open ({time.monotonic() - opened:.0f} s, servers' CPU {opening_cpu:.1f} s)",
        file=sys.stderr,
    )

    # Idle: every stream open, no move sent.
    await ask_all(loads, {"moving": False})
    await asyncio.sleep(args.settle)
    await ask_all(loads, {"report": True})
    server.start()
    started = time.monotonic()
    await asyncio.sleep(args.idle_window)
    idle_s = time.monotonic() - started
    idle_cpu = sum(server.stop().values())
    rss = rss_kb(server_pids)

    # Moving, from once every seat has had a think time to start.
    await ask_all(loads, {"moving": True})
    await asyncio.sleep(args.settle + args.think)
    before = await ask_all(loads, {"report": True})
    server.start()
    started = time.monotonic()
    await asyncio.sleep(args.move_window)
    reports = await ask_all(loads, {"report": True})
    moving_s = time.monotonic() - started
    by_process = server.stop()
    moving_cpu = sum(by_process.values())
    cores = ", ".join(f"{name} {cpu / moving_s:.2f}" for name, cpu in by_process.items())
    print(f"  cores while moving: {cores}", file=sys.stderr)
    latencies = [ms for report in reports for ms in report["latencies_ms"]]
    moves = sum(report["moves"] for report in reports)
    load_cpu = sum(r["cpu_s"] for r in reports) - sum(r["cpu_s"] for r in before)
    idle_per_seat_s = (idle_cpu / idle_s - base.idle_cpu_per_s) / seats
    move_cpu = moving_cpu - (base.idle_cpu_per_s + idle_per_seat_s * seats) * moving_s
    return Step(
        path=path,
        seats=seats,
        rss_kb_per_seat=(rss - base.rss_kb) / seats,
        idle_us_per_seat_s=idle_per_seat_s * 1e6,
        moves_per_s=moves / moving_s,
        seat_move_interval_s=seats * moving_s / max(moves, 1),
        cpu_ms_per_move=move_cpu * 1000 / max(moves, 1),
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        errors=sum(r["errors"] for r in reports),
        cuts=sum(r["cuts"] for r in reports),
        refused=sum(r["refused"] for r in reports),
        load_cpu_cores=load_cpu / moving_s,
        server_cpu_cores=moving_cpu / moving_s,
    )


def row(step: Step) -> list[str]:
    return [
        step.path,
        f"{step.seats:,}",
        f"{step.rss_kb_per_seat:.1f}",
        f"{step.idle_us_per_seat_s:.1f}",
        f"{step.moves_per_s:.0f}",
        f"{step.seat_move_interval_s:.0f}",
        f"{step.cpu_ms_per_move:.2f}",
        f"{step.p50_ms:.1f}",
        f"{step.p99_ms:.1f}",
        f"{step.errors}/{step.cuts}/{step.refused}",
        f"{step.server_cpu_cores:.2f}",
        f"{step.load_cpu_cores:.2f}",
    ]


HEADER = [
    "path",
    "seats",
    "server RSS KB/seat",
    "idle server CPU µs/seat-s",
    "moves/s",
    "s between a seat's moves",
    "server CPU ms/move",
    "p50 ms",
    "p99 ms",
    "errors/cuts/refused",
    "server cores moving",
    "load-gen cores",
]


async def run(args: argparse.Namespace, log: IO[bytes]) -> list[Step]:
    results = []
    for path, steps in ((NATIVE, args.steps), (BROWSER, args.browser_steps)):
        if steps:
            results += await run_path(path, [int(n) for n in steps.split(",")], args, log)
    return results


async def run_path(path: str, steps: list[int], args: argparse.Namespace, log: IO[bytes]) -> list[Step]:
    """``steps`` on a system of their own: the servers' memory is counted from their start."""
    gateway, web = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    os.environ["MOGAMES_WEB_LISTEN"] = web if path == BROWSER else ""
    with running_system([args.game], gateway_listen=gateway, log=log) as system:
        probe = aioredis.Redis.from_url(system.redis_url)
        redis_pid = int((await probe.info("server"))["process_id"])
        await probe.aclose()
        server_pids = with_descendants([*(p.pid for p in system.processes), redis_pid])
        # By process, to tell which one a step's moves load most (the gateway comes last).
        *services, gateway_process = system.processes
        server = CpuMeter(
            {"service": [p.pid for p in services], "gateway": [gateway_process.pid], "redis": [redis_pid]}
        )
        await asyncio.sleep(args.settle)
        base = await measure_base(server, server_pids, args.idle_window)
        per_process = args.seats_per_process if path == NATIVE else args.browser_seats_per_process
        processes = max(1, -(-max(steps) // per_process))
        target_web = web if path == BROWSER else ""
        loads = [await LoadProcess.start(gateway, target_web, args, seed) for seed in range(processes)]
        results = []
        try:
            for seats in steps:
                step = await measure_step(path, seats, loads, server, server_pids, base, args)
                results.append(step)
                print(markdown.table(HEADER, [row(step)]), file=sys.stderr)
        finally:
            for load in loads:
                await load.stop()
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1000,2000,5000,10000,20000", help="seats at each step")
    parser.add_argument(
        "--browser-steps", default="1000,2000,5000", help="seats at each step of the browser row ('': none)"
    )
    parser.add_argument("--think", type=float, default=5.0, help="mean think time per decision, s")
    parser.add_argument("--game", default="happy_mochi")
    parser.add_argument("--players", type=int, default=4, help="seats per match")
    parser.add_argument("--idle-window", type=float, default=30.0, help="s; two heartbeats")
    parser.add_argument("--move-window", type=float, default=60.0, help="s")
    parser.add_argument("--settle", type=float, default=5.0, help="s before each window")
    parser.add_argument("--seats-per-process", type=int, default=SEATS_PER_LOAD_PROCESS)
    # httpx's HTTP/2 is pure Python: one process holding more browser seats adds its own delay.
    parser.add_argument("--browser-seats-per-process", type=int, default=BROWSER_SEATS_PER_LOAD_PROCESS)
    parser.add_argument("--streams-per-channel", type=int, default=1000)
    parser.add_argument("--log", default="/tmp/mogames-bench-capacity.log", help="the servers' log")
    args = parser.parse_args()
    use_bench_environment()
    with Path(args.log).open("wb") as log:
        results = asyncio.run(run(args, log))
    print(f"\n{args.game}, {args.players} seats a match, think time ~{args.think:g} s a decision:\n")
    print(markdown.table(HEADER, [row(step) for step in results]))
    for path in (NATIVE, BROWSER):
        held = [s.seats for s in results if s.path == path and s.p99_ms < P99_BOUND_MS and not s.errors]
        if any(s.path == path for s in results):
            largest = max(held, default=0)
            print(f"{path}: largest step with p99 < {P99_BOUND_MS:.0f} ms and no error: {largest:,} seats")


if __name__ == "__main__":
    main()
