"""Server bots are durable: a bot seat whose replica is killed with SIGKILL mid-match is
played on by the other replica (real processes, real Redis)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import grpc
from mogames.common.v1 import common_pb2

from bench.baselines import with_descendants
from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from tests.test_processes import spawn_service

# Mori: its timeout policy ends a match in a known, small number of moves.
GAME = "mori"


async def test_a_bot_seat_survives_its_replicas_kill_9(redis_url, tmp_path):
    ports = [free_port(), free_port()]
    env = {
        # Slow enough that the match is still going when a replica dies; a short lease so
        # the survivor takes over soon.
        "MOGAMES_BOT_THINK_MS": "5",
        "MOGAMES_SCHEDULER_TICK_MS": "50",
        "MOGAMES_SCHEDULER_LEASE_MS": "1000",
        "MOGAMES_LOG_LEVEL": "warning",
    }
    replicas = [
        spawn_service(GAME, f"127.0.0.1:{p}", redis_url, tmp_path / f"r{i}.log", env)
        for i, p in enumerate(ports)
    ]
    try:
        for port in ports:
            wait_for_port(port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{ports[1]}") as channel:
            client = GameClient(channel, GAME)
            table = common_pb2.TableOptions(bot_seats=[0, 1, 2], bot_level="policy")
            match = await client.create(3, table=table)
            for _ in range(500):
                if (match := await client.match(match.match_id)).version >= 5:
                    break
                await asyncio.sleep(0.02)
            assert match.status == common_pb2.IN_PROGRESS, "the match must still be going at the kill"
            replicas[0].send_signal(signal.SIGKILL)
            replicas[0].wait(10)
            killed_at = match.version
            for _ in range(1200):
                match = await client.match(match.match_id)
                if match.status != common_pb2.IN_PROGRESS:
                    break
                await asyncio.sleep(0.05)
            assert match.status == common_pb2.FINISHED and match.version > killed_at
            assert [s.bot for s in match.seats] == [True, True, True]
    finally:
        for replica in replicas:
            if replica.poll() is None:
                replica.terminate()
                replica.wait(10)


async def test_a_replica_keeps_off_the_cpus_it_gives_its_bot_workers(redis_url, tmp_path):
    """MOGAMES_BOT_OWN_CPUS=1: the searching workers run on the replica's last CPU alone, and
    no thread of the replica (gRPC's, Redis client's, the loop's) runs there."""
    everywhere = os.sched_getaffinity(0)
    assert len(everywhere) >= 2, "a CPU of the bots' own needs a machine of two CPUs or more"
    bots, replica_cpus = {max(everywhere)}, everywhere - {max(everywhere)}
    port = free_port()
    env = {"MOGAMES_BOT_OWN_CPUS": "1", "MOGAMES_BOT_THINK_MS": "5", "MOGAMES_LOG_LEVEL": "warning"}
    replica = spawn_service(GAME, f"127.0.0.1:{port}", redis_url, tmp_path / "replica.log", env)
    try:
        wait_for_port(port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = GameClient(channel, GAME)
            table = common_pb2.TableOptions(bot_seats=[0, 1, 2], bot_level="medium")
            match = await client.create(3, table=table)
            for _ in range(600):  # the first searches start the worker
                if (await client.match(match.match_id)).version >= 3:
                    break
                await asyncio.sleep(0.05)
            workers = _workers(replica.pid)
            assert workers, "the bots have decided, so a worker runs"
            assert _placement(replica.pid) == replica_cpus
            assert all(_placement(worker) == bots for worker in workers)
    finally:
        replica.terminate()
        replica.wait(10)


def _workers(replica: int) -> list[int]:
    """The pool's worker processes under ``replica`` (not its resource tracker, also a child)."""
    return [
        p for p in with_descendants([replica]) if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()
    ]


def _placement(pid: int) -> set[int]:
    """The CPUs every thread of ``pid`` may run on; fails if its threads differ."""
    placed = {frozenset(os.sched_getaffinity(int(t.name))) for t in Path(f"/proc/{pid}/task").iterdir()}
    assert len(placed) == 1, f"the threads of {pid} run on different CPUs: {placed}"
    return set(placed.pop())
