"""The gateway sends every call about one match to one replica (a hash of the match id over
the replicas that are up), spreads matches over replicas, and moves a match to another
replica when its own goes down. Real processes; the replicas' debug logs say who served what."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import grpc

from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from gateway.backends import seed_of, weight
from tests.helpers import StartedMatch, active_seat_move, start_match, wait_serving
from tests.test_processes import spawn, spawn_service

MATCHES = 12
MOVES = 6


async def _play_a_little(client: GameClient, seed: int) -> StartedMatch:
    started = await start_match(client, 2, seed=seed)
    for _ in range(MOVES):
        seat, move, version = await active_seat_move(client, started)
        await client.view(started.match_id, started.tokens[seat])
        await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    return started


def _served(log: Path) -> dict[str, set[str]]:
    """match id -> the RPCs (other than CreateMatch) this replica answered about it."""
    served: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if entry.get("event") == "rpc_ok" and entry.get("match_id") and entry.get("rpc") != "CreateMatch":
            served.setdefault(entry["match_id"], set()).add(entry["rpc"])
    return served


def spawn_replicas(
    redis_url: str, tmp_path: Path
) -> tuple[list[subprocess.Popen[str]], list[int], list[Path]]:
    """Two Happy Mochi replicas, listening, whose debug logs say who served what; and a
    gateway in front of both (the last process): the processes, the replicas' ports (then
    the gateway's) and the replicas' logs (then the gateway's)."""
    ports = [free_port(), free_port()]
    logs = [tmp_path / "replica-0.log", tmp_path / "replica-1.log"]
    replicas = [
        spawn_service(
            "happy_mochi",
            f"127.0.0.1:{port}",
            redis_url,
            log,
            {"MOGAMES_ALLOW_CLIENT_SEED": "true", "MOGAMES_LOG_LEVEL": "debug"},
        )
        for port, log in zip(ports, logs, strict=True)
    ]
    try:
        # The replicas listen before the gateway starts: a gateway whose first connection
        # attempts were refused would answer UNAVAILABLE until its reconnect backoff ends.
        for port in ports:
            wait_for_port(port, 30)
    except BaseException:
        for replica in replicas:
            replica.kill()
        raise
    gateway_port = free_port()
    gateway_log = tmp_path / "gateway.log"
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
            "MOGAMES_BACKENDS_HAPPY_MOCHI": ",".join(f"127.0.0.1:{p}" for p in ports),
            "MOGAMES_WEB_LISTEN": "",
        },
        gateway_log,
    )
    return [*replicas, gateway], [*ports, gateway_port], [*logs, gateway_log]


def stop_all(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(timeout=30)


async def test_a_matchs_calls_go_to_one_replica_and_move_when_it_goes_down(redis_url, tmp_path):
    processes, (*_ports, gateway_port), logs = spawn_replicas(redis_url, tmp_path)
    replicas = processes[:2]
    try:
        wait_for_port(gateway_port, 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
            await wait_serving(channel, "mogames.happymochi.v1.HappyMochi")
            client = GameClient(channel, "happy_mochi")
            played = [await _play_a_little(client, n) for n in range(MATCHES)]
            served = [_served(log) for log in logs[:2]]
            for match in played:
                on = [n for n in (0, 1) if match.match_id in served[n]]
                assert len(on) == 1, f"match {match.match_id} was served by replicas {on}"
            counts = [sum(1 for m in played if m.match_id in served[n]) for n in (0, 1)]
            assert min(counts) > 0, f"every match went to one replica: {counts}"

            # Replica 0 goes down: its matches are answered by replica 1 (correct, only colder).
            replicas[0].send_signal(signal.SIGKILL)
            replicas[0].wait(timeout=10)
            moved = [m for m in played if m.match_id in served[0]]
            for match in moved:
                for _attempt in range(50):
                    try:
                        answer = await client.match(match.match_id)
                        break
                    except grpc.aio.AioRpcError as error:
                        assert error.code() == grpc.StatusCode.UNAVAILABLE, error
                assert answer.match_id == match.match_id
            assert {m.match_id for m in moved} <= set(_served(logs[1]))
    finally:
        stop_all(processes)


def test_the_match_hash_gives_every_replica_its_share():
    """Rendezvous hashing spreads matches evenly only on a hash that mixes the replica in: of
    6,000 match ids, each of 3 (then 5) replicas wins its share within a tenth."""
    keys = [f"m{n:06d}-{n * 7919 % 100_003:05d}".encode() for n in range(6_000)]
    for count in (3, 5):
        replicas = [seed_of(f"10.0.0.{n + 1}:50051") for n in range(count)]
        wins = [0] * count
        for key in keys:
            wins[max(range(count), key=lambda r: weight(key, replicas[r]))] += 1
        share = len(keys) / count
        assert all(0.9 * share < w < 1.1 * share for w in wins), wins
