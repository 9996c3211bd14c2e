"""The bench's load: bots playing matches as clients do, natively, over the web port's
WebSocket, or as browsers on the web port from load processes of their own
(bench/web_load.py); what they played, and how fast."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from bench.web_client import WebGameClient, web_http
from bench.ws_client import SocketGameClient
from clients.bot import play_match
from clients.game_client import GameClient
from services.catalog import rules_module


@dataclass
class Load:
    moves: int = 0
    finished: int = 0
    matches: list[str] = field(default_factory=list)
    # Matches still being played when the load stopped.
    live: list[str] = field(default_factory=list)
    errors: int = 0
    latencies_s: list[float] = field(default_factory=list)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


async def game_load(
    target: str,
    game: str,
    concurrency: int,
    duration_s: float,
    options: dict[str, Any],
    one_stream: bool = False,
    players: int | None = None,
    turn_seconds: int = 0,
    web: str | None = None,
    first: int = 0,
    play_on: str | None = None,
    with_table: bool = False,
) -> tuple[Load, float]:
    """``concurrency`` matches at a time for ``duration_s``, each of ``players`` seats (None:
    drawn from the game's range, match by match), with turn clocks of ``turn_seconds``.
    ``web`` ("HTTP/2" or "HTTP/1.1"): played as browsers do on the web port at ``target``
    (a base URL), each match on connections of its own. Worker ``n`` (from ``first`` on)
    draws its matches from a generator seeded ``n``. ``play_on``: the PlayMatch streams go over
    WebSocket to the web port at this base URL (bench/ws_client.py), the rest to ``target``;
    ``with_table``: asked with the seat's table, as the web page asks them."""
    info = rules_module(game).GAME
    load = Load()
    until = time.monotonic() + duration_s

    async def worker(n: int, client: GameClient) -> None:
        if web is not None:
            http = web_http(web, target)
            try:
                await play_for(n, WebGameClient(http, game))
            finally:
                await http.close()
        else:
            await play_for(n, client)

    async def play_for(n: int, client: GameClient) -> None:
        rng = random.Random(n)
        while time.monotonic() < until:
            seats = players or rng.randint(info.min_players, info.max_players)
            try:
                played = await play_match(
                    client,
                    seats,
                    seed=rng.randrange(2**32),
                    rng=rng,
                    until=until,
                    options=options,
                    one_stream=one_stream,
                    turn_seconds=turn_seconds,
                )
            except grpc.aio.AioRpcError as error:
                load.errors += 1
                print(f"  {game}: {error.code().name}: {error.details()}", file=sys.stderr)
                continue
            load.moves += played.moves
            load.finished += played.finished
            load.matches.append(played.match_id)
            if not played.finished:
                load.live.append(played.match_id)
            load.latencies_s += played.move_latencies_s

    async with grpc.aio.insecure_channel("127.0.0.1:1" if web else target) as channel:
        client = (
            SocketGameClient(channel, game, play_on, with_table) if play_on else GameClient(channel, game)
        )
        started = time.perf_counter()
        await asyncio.gather(*(worker(n, client) for n in range(first, first + concurrency)))
        return load, time.perf_counter() - started


async def web_game_load(
    target: str,
    game: str,
    concurrency: int,
    duration_s: float,
    options: list[str],
    players: int | None,
    turn_seconds: int,
    web: str,
    processes: int,
    started: Callable[[], None],
) -> tuple[Load, float, float]:
    """``game_load`` of ``web`` in ``processes`` load processes (bench/web_load.py), the
    matches shared between them; ``started()`` is called as they start playing. Also returns
    the CPU seconds the load processes used while playing."""
    commands = []
    first = 0
    for n in range(processes):
        share = concurrency // processes + (n < concurrency % processes)
        command = [sys.executable, "-m", "bench.web_load", "--target", target, "--http", web]
        command += ["--game", game, "--matches", str(share), "--first", str(first)]
        command += ["--duration", str(duration_s), "--turn-seconds", str(turn_seconds)]
        command += [f"--option={option}" for option in options]
        command += ["--players", str(players)] if players is not None else []
        commands.append(command)
        first += share
    loads = [
        await asyncio.create_subprocess_exec(*c, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for c in commands
    ]
    try:
        for process in loads:
            assert process.stdout is not None and process.stdin is not None
            if await process.stdout.readline() != b"ready\n":
                raise RuntimeError(f"a web load process did not start: {process.returncode}")
        started()
        for process in loads:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
        outputs = await asyncio.gather(*(process.communicate() for process in loads))
    finally:
        for process in loads:
            if process.returncode is None:
                process.kill()
                await process.wait()
    total, elapsed, cpu_s = Load(), 0.0, 0.0
    for output, _ in outputs:
        figures = json.loads(output)
        for name in ("moves", "finished", "errors"):
            setattr(total, name, getattr(total, name) + figures[name])
        for name in ("matches", "live", "latencies_s"):
            getattr(total, name).extend(figures[name])
        elapsed, cpu_s = max(elapsed, figures["elapsed_s"]), cpu_s + figures["cpu_s"]
    return total, elapsed, cpu_s
