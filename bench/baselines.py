"""The yardsticks of ``make bench``: CPU time of processes from /proc, and a bare grpc.aio
echo server's figures (unary calls, and a relay of stream messages) measured in the same
run as the game load they are compared with (bench/echo.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from bench.echo import EVENT, FULL, METHOD, RELAY_METHOD
from deploy.redis_server import free_port, wait_for_port

TICKS = os.sysconf("SC_CLK_TCK")


# -- CPU time from /proc -------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (all its threads) and its waited-for children."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    # Fields 14-17 of stat(5): utime, stime, cutime, cstime (here counted from field 3).
    return sum(int(value) for value in fields[11:15]) / TICKS


def with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and every live process under them (nginx's worker, under its master)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = set(pids), list(pids)
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in found]
        found.update(children)
        frontier += children
    return sorted(found)


class CpuMeter:
    """CPU seconds each of ``roles``' processes (and their descendants) spends between
    ``start`` and ``stop``, by role."""

    def __init__(self, roles: dict[str, list[int]]) -> None:
        self.roles = {role: with_descendants(pids) for role, pids in roles.items()}
        self._start: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        return {role: sum(cpu_seconds(pid) for pid in pids) for role, pids in self.roles.items()}

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> dict[str, float]:
        return {role: used - self._start[role] for role, used in self._now().items()}


# -- the echo baseline ---------------------------------------------------------------------


@contextlib.contextmanager
def running_echo(backend: str | None = None) -> Iterator[tuple[str, int]]:
    """An echo server; with ``backend`` (an echo server's address), a forwarder to it."""
    address = f"127.0.0.1:{free_port()}"
    # The yardstick stays grpc's own defaults, whatever the services run on (grpc_core.py).
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    command = [sys.executable, "-m", "bench.echo", address, *([backend] if backend else [])]
    server = subprocess.Popen(command, env=env)
    try:
        wait_for_port(int(address.rsplit(":", 1)[1]))
        yield address, server.pid
    finally:
        server.terminate()
        server.wait()


@dataclass
class EchoFigures:
    calls_per_s: float
    cpu_ms_per_call: float


async def echo_figures(
    address: str, pid: int, concurrency: int, duration_s: float, behind: tuple[int, ...] = ()
) -> EchoFigures:
    """Echo calls from ``concurrency`` callers for ``duration_s``: calls/s and the server CPU
    per call of ``pid`` and the processes ``behind`` it (a forwarder's echo server)."""
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

        await echo(payload)  # connected before the window opens
        meter = CpuMeter({"echo": [pid, *behind]})
        meter.start()
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        return EchoFigures(calls / elapsed, meter.stop()["echo"] * 1000 / max(calls, 1))


async def relay_figures(address: str, pid: int, matches: int, duration_s: float) -> EchoFigures:
    """The echo server's Relay: ``matches`` pairs of streams trading 64-byte moves, each
    answered to its sender and sent to the other stream; server CPU per move."""
    moves = 0
    payload = os.urandom(64)
    until = time.monotonic() + duration_s
    async with grpc.aio.insecure_channel(address) as channel:
        relay = channel.stream_stream(RELAY_METHOD)

        async def seat(call: Any, opens: bool) -> None:
            nonlocal moves
            while (message := await call.read()) is not grpc.aio.EOF:
                if message == FULL and opens:
                    await call.write(payload)
                if message[:1] != EVENT:
                    continue
                if time.monotonic() >= until:
                    return
                await call.write(payload)
                moves += 1

        async def match(n: int) -> None:
            calls = [relay(), relay()]
            for call in calls:
                await call.write(f"room-{n}".encode())
            seats = [asyncio.create_task(seat(calls[0], True)), asyncio.create_task(seat(calls[1], False))]
            # The seat whose turn came after the window stops; the other one waits for it.
            await asyncio.wait(seats, return_when=asyncio.FIRST_COMPLETED)
            for call in calls:
                call.cancel()
            await asyncio.gather(*seats, return_exceptions=True)

        meter = CpuMeter({"echo": [pid]})
        meter.start()
        started = time.perf_counter()
        await asyncio.gather(*(match(n) for n in range(matches)))
        elapsed = time.perf_counter() - started
        return EchoFigures(moves / elapsed, meter.stop()["echo"] * 1000 / max(moves, 1))


def median_of(figures: list[EchoFigures]) -> EchoFigures:
    return sorted(figures, key=lambda f: f.cpu_ms_per_call)[(len(figures) - 1) // 2]
