"""One service name for a game's replicas (a Kubernetes headless Service): the gateway
follows the name to every address it resolves to and keeps each match on one replica,
and when a replica leaves the name only its matches move. Real replica processes on three
loopback addresses and a real gateway; the resolver is the gateway's seam, its records
held by the test."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import grpc
import pytest
from prometheus_client import REGISTRY

from clients.game_client import GameClient
from deploy.redis_server import free_port
from gateway.backends import ReplicaPool, watch_health
from gateway.discovery import expand, system_resolver
from gateway.server import build as build_gateway
from services.runtime.settings import GatewaySettings
from tests.helpers import StartedMatch, active_seat_move, start_match, wait_until
from tests.test_processes import spawn_service

GAME = "happy_mochi"
SERVICE = "mogames.happymochi.v1.HappyMochi"
NAME = "happy-mochi.replicas.test"
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
MATCHES = 24  # on 3 replicas by an even hash, one gets none 1 time in 5,000


def _committed(log: Path) -> dict[str, int]:
    """match id -> moves this replica committed for it."""
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "move_committed" and entry.get("match_id"):
                counts[entry["match_id"]] = counts.get(entry["match_id"], 0) + 1
    return counts


async def _move(client: GameClient, started: StartedMatch) -> None:
    seat, move, version = await active_seat_move(client, started)
    await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)


def _backends_up() -> float | None:
    return REGISTRY.get_sample_value("mogames_gateway_backends_up", {"service": SERVICE})


async def test_one_name_for_three_replicas_keeps_each_match_on_one_and_moves_only_a_gone_ones(
    redis_url, tmp_path
):
    port = free_port()
    records = {NAME: list(HOSTS)}

    async def resolver(host: str) -> list[str]:
        return list(records[host])

    logs = [tmp_path / f"replica-{n}.log" for n in range(len(HOSTS))]
    replicas = [
        spawn_service(
            GAME,
            f"{host}:{port}",
            redis_url,
            log,
            {"MOGAMES_ALLOW_CLIENT_SEED": "true", "MOGAMES_LOG_LEVEL": "debug"},
        )
        for host, log in zip(HOSTS, logs, strict=True)
    ]
    settings = GatewaySettings(
        listen="127.0.0.1:0", backends={GAME: (f"{NAME}:{port}",)}, shutdown_grace_s=1, log_level="warning"
    )
    gateway, checker, pools, gateway_port = await build_gateway(settings, resolver)
    await gateway.start()
    health = asyncio.create_task(watch_health(checker, pools, every_s=0.2))
    try:
        (pool,) = pools

        async def all_up() -> bool:
            return _backends_up() == len(HOSTS)

        await wait_until(all_up, "the three replicas up", timeout_s=30)
        assert sorted(pool.addresses) == [f"{h}:{port}" for h in HOSTS]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
            client = GameClient(channel, GAME)
            played = [await start_match(client, 2, seed=n) for n in range(MATCHES)]
            for _ in range(4):
                for match in played:
                    await _move(client, match)
            before = [_committed(log) for log in logs]
            home = {}
            for match in played:
                on = [n for n, counts in enumerate(before) if match.match_id in counts]
                assert len(on) == 1, f"match {match.match_id} committed on replicas {on}"
                assert before[on[0]][match.match_id] == 4
                home[match.match_id] = on[0]
            spread = [list(home.values()).count(n) for n in range(len(HOSTS))]
            assert min(spread) > 0, f"some replica got no match: {spread}"

            # The third replica leaves the name (still running: routing follows the records).
            records[NAME] = HOSTS[:2]

            async def two_left() -> bool:
                return len(pool.addresses) == 2 and _backends_up() == 2

            await wait_until(two_left, "the gateway down to two replicas")
            for _ in range(2):
                for match in played:
                    await _move(client, match)
            after = [_committed(log) for log in logs]
            for match in played:
                gained = [
                    n
                    for n in range(len(HOSTS))
                    if after[n].get(match.match_id, 0) > before[n].get(match.match_id, 0)
                ]
                assert len(gained) == 1, (
                    f"match {match.match_id} committed on replicas {gained} after the change"
                )
                if home[match.match_id] != 2:
                    assert gained == [home[match.match_id]], (
                        f"match {match.match_id} moved off a replica that stayed"
                    )
                else:
                    assert gained[0] in (0, 1)
    finally:
        health.cancel()
        await gateway.stop(None)
        for each in pools:
            await each.close()
        for process in replicas:
            process.send_signal(signal.SIGTERM)
        for process in replicas:
            process.wait(timeout=30)


async def test_a_name_stands_for_one_family_of_its_addresses_and_an_ip_for_itself():
    assert await expand(("localhost:5000", "10.0.0.9:5001", "[::1]:5002"), system_resolver) == (
        "10.0.0.9:5001",
        "127.0.0.1:5000",
        "[::1]:5002",
    )

    async def dual_stack(host: str) -> list[str]:
        return ["fd00::2", "10.1.0.2", "fd00::3", "10.1.0.3", "10.1.0.2"]

    assert await expand(("svc:7000",), dual_stack) == ("10.1.0.2:7000", "10.1.0.3:7000")

    async def v6_only(host: str) -> list[str]:
        return ["fd00::3", "fd00::2"]

    assert await expand(("svc:7000",), v6_only) == ("[fd00::2]:7000", "[fd00::3]:7000")
    with pytest.raises(OSError):
        await expand(("no-such-host.invalid:7000",), system_resolver)


async def test_a_pool_keeps_its_replicas_when_the_name_stops_resolving():
    records: dict[str, list[str]] = {"svc": ["127.0.0.1", "127.0.0.2"]}

    async def resolver(host: str) -> list[str]:
        if host not in records:
            raise OSError(f"{host}: no such name")
        return records[host]

    pool = ReplicaPool(SERVICE, ("svc:7000",), resolver)
    try:
        assert pool.addresses == ("svc:7000",)  # gRPC's own resolution until the first round
        await pool.resolve()
        assert pool.addresses == ("127.0.0.1:7000", "127.0.0.2:7000")
        kept = {r.address: r for r in pool.replicas}
        del records["svc"]
        await pool.resolve()
        assert pool.addresses == ("127.0.0.1:7000", "127.0.0.2:7000")
        records["svc"] = ["127.0.0.2", "127.0.0.3"]
        await pool.resolve()
        assert pool.addresses == ("127.0.0.2:7000", "127.0.0.3:7000")
        assert pool.replicas[0] is kept["127.0.0.2:7000"]  # the one that stayed keeps its channel
    finally:
        await pool.close()
