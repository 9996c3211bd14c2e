"""Part 2 of ``make bench-bots`` (``bench/bench_bots.py``): a human's PlayMatch moves on one
replica, idle and then beside all-bot matches on the same replica, in each placement of the
bot workers, with what every process of the system did meanwhile (from ``/proc``)."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from mogames.common.v1 import common_pb2

from bench.baselines import with_descendants
from bench.load import percentile
from clients.bot import play_match
from clients.game_client import GameClient
from deploy.launcher import running_system
from deploy.redis_server import free_port
from services.catalog import rules_module
from services.runtime import cpus


async def human_latencies(client: GameClient, duration_s: float, seed: int) -> list[float]:
    """The latencies of a human's moves over ``duration_s``: two-seat matches this client plays."""
    latencies: list[float] = []
    until = time.monotonic() + duration_s
    rng = random.Random(seed)
    while time.monotonic() < until:
        played = await play_match(client, 2, seed=rng.randrange(2**32), rng=rng, until=until, one_stream=True)
        latencies += played.move_latencies_s
    return latencies


async def bot_matches(client: GameClient, count: int, level: str, players: int) -> list[str]:
    table_options = common_pb2.TableOptions(bot_seats=range(players), bot_level=level)
    created = await asyncio.gather(*(client.create(players, table=table_options) for _ in range(count)))
    return [m.match_id for m in created]


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def scheduled_seconds(pid: int) -> tuple[float, float]:
    """The seconds every thread of ``pid`` has run on a CPU and waited for one, so far (Linux
    ``/proc/<pid>/task/<tid>/schedstat``); zeros once it is gone."""
    ran = waited = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            fields = (task / "schedstat").read_text().split()
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
    except OSError:
        pass
    return ran / 1e9, waited / 1e9


@dataclass
class Processes:
    """The processes of a latency phase, by role: the human's path (the bench's own client,
    the gateway, the replica, Redis) and the replica's bot workers."""

    path: dict[str, int]
    workers: list[int]

    @classmethod
    def of(cls, gateway: int, replica: int) -> Processes:
        redis = [p for p in with_descendants([os.getpid()]) if "redis-server" in _command(p)]
        path = {"client": os.getpid(), "gateway": gateway, "replica": replica, "redis": redis[0]}
        return cls(path, []).with_workers()

    def with_workers(self) -> Processes:
        """The same processes, with the replica's bot workers as they are now."""
        replica = self.path["replica"]
        return Processes(self.path, [p for p in with_descendants([replica]) if "spawn_main" in _command(p)])

    def sample(self) -> dict[str, tuple[float, float]]:
        seconds = {role: scheduled_seconds(pid) for role, pid in self.path.items()}
        workers = [scheduled_seconds(pid) for pid in self.workers]
        seconds["workers"] = (sum(w[0] for w in workers), sum(w[1] for w in workers))
        return seconds


@dataclass
class Phase:
    """A phase's human move latencies, and per role the CPU share and the share of time its
    threads waited for a CPU (runnable, not running)."""

    latencies: list[float]
    ran: dict[str, float]
    waited: dict[str, float]


async def measured(client: GameClient, duration_s: float, seed: int, processes: Processes) -> Phase:
    """A human's move latencies over ``duration_s``, and what each process did meanwhile."""
    before, started = processes.sample(), time.monotonic()
    latencies = await human_latencies(client, duration_s, seed)
    after, elapsed = processes.sample(), time.monotonic() - started
    ran = {role: (after[role][0] - before[role][0]) / elapsed for role in after}
    waited = {role: (after[role][1] - before[role][1]) / elapsed for role in after}
    return Phase(latencies, ran, waited)


async def latency_figures(
    target: str, args: argparse.Namespace, processes: Processes, placement: str
) -> list[list[str]]:
    game = args.latency_game
    players = max(2, rules_module(game).GAME.min_players)
    async with grpc.aio.insecure_channel(target) as channel:
        client = GameClient(channel, game)
        await human_latencies(client, 2.0, seed=0)  # warm up
        idle = await measured(client, args.latency_duration, 1, processes)
        ids = await bot_matches(client, args.bot_matches, args.bot_level, players)
        await asyncio.sleep(3.0)  # the bots' worker is busy by now
        before, started = sum([(await client.match(m)).version for m in ids]), time.monotonic()
        # the pool starts its workers at the first searching decision: look for them again
        loaded = await measured(client, args.latency_duration, 2, processes.with_workers())
        bot_moves = sum([(await client.match(m)).version for m in ids]) - before
        bot_moves_per_s = bot_moves / (time.monotonic() - started)
    rows = []
    for name, phase in (("idle", idle), (f"{args.bot_matches} {args.bot_level} bot matches", loaded)):
        name = f"{placement}: {name}"
        values = phase.latencies
        path_waited = sum(phase.waited[role] for role in ("client", "gateway", "replica", "redis"))
        rows.append(
            [
                name,
                str(len(values)),
                f"{1000 * percentile(values, 0.5):.2f}",
                f"{1000 * percentile(values, 0.99):.2f}",
                f"{phase.ran['replica']:.0%}",
                f"{phase.ran['workers']:.0%}",
                f"{phase.ran['gateway']:.0%} / {phase.ran['redis']:.0%} / {phase.ran['client']:.0%}",
                f"{1000 * path_waited:.0f}",
            ]
        )
    ratio = percentile(loaded.latencies, 0.99) / percentile(idle.latencies, 0.99)
    print(
        f"  {placement}: bot moves committed while measuring: {bot_moves} ({bot_moves_per_s:.1f}/s);"
        f" p99 loaded/idle = {ratio:.2f}",
        flush=True,
    )
    return rows


def placements() -> list[tuple[str, int]]:
    """How the part-2 systems place the bot workers: by the replica's tasks at the lowest
    priority, and (on two CPUs or more) on a CPU of their own (``MOGAMES_BOT_OWN_CPUS=1``)."""
    shared = ("workers share the CPUs", 0)
    if len(cpus.allowed()) < 2:
        return [shared]
    return [shared, (f"workers on CPU {max(cpus.allowed())} alone", 1)]


def human_phases(args: argparse.Namespace, placement: str, own_cpus: int) -> list[list[str]]:
    """Part 2 on a system of its own whose replica gives its bot workers ``own_cpus`` CPUs;
    the gateway, Redis and this client then keep off them too, as the rest of a deployment
    would (other machines, or cores of their own)."""
    everywhere = cpus.allowed()
    os.environ["MOGAMES_BOT_OWN_CPUS"] = str(own_cpus)
    with running_system([args.latency_game], 1, gateway_listen=f"127.0.0.1:{free_port()}") as system:
        replica, gateway = (process.pid for process in system.processes[:2])
        processes = Processes.of(gateway, replica)
        if own_cpus:
            rest = cpus.split(everywhere, own_cpus)[0]
            for pid in (gateway, processes.path["redis"], os.getpid()):
                cpus.keep_process_on(rest, pid)
        try:
            return asyncio.run(latency_figures(system.gateway, args, processes, placement))
        finally:
            cpus.keep_process_on(everywhere)
