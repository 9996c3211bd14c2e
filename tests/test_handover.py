"""A replica stopped with SIGTERM under PlayMatch play hands its streams over (real
processes): each ends UNAVAILABLE at once, the reference bot opens it again through the
gateway on the other replica within 2 s, no call fails otherwise, every match finishes,
and the replica exits well inside its grace."""

from __future__ import annotations

import asyncio
import signal
import time

import grpc

from clients.bot import CUT_WHILE_SENDING, PlayedMatch, play_match
from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from services.catalog import rules_module
from tests.helpers import wait_serving, wait_until
from tests.test_metrics import scrape, value
from tests.test_processes import spawn, spawn_service

GAME = "mori"
SERVICE = rules_module(GAME).GAME.full_service
PLAYERS = 3
LOOPS = 6
GRACE_S = 20
SERVICE_ENV = {
    "MOGAMES_LOG_LEVEL": "warning",
    "MOGAMES_SHUTDOWN_GRACE_S": str(GRACE_S),
    "MOGAMES_CREATE_LIMIT": "0",
    "MOGAMES_JOIN_LIMIT": "0",
    "MOGAMES_MAX_WAITING_PER_CLIENT": "0",
}


async def test_a_replica_stopped_under_play_hands_every_stream_over(redis_url, tmp_path):
    addresses = [f"127.0.0.1:{free_port()}" for _ in range(2)]
    stopped_metrics = free_port()  # the replica stopped: how many PlayMatch streams it holds
    replicas = [
        spawn_service(
            GAME,
            address,
            redis_url,
            tmp_path / f"replica-{n}.log",
            {**SERVICE_ENV, "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{stopped_metrics}"}
            if n == 0
            else SERVICE_ENV,
        )
        for n, address in enumerate(addresses)
    ]
    gateway_address = f"127.0.0.1:{free_port()}"
    gateway = spawn(
        ["-m", "gateway"],
        {
            "MOGAMES_GATEWAY_LISTEN": gateway_address,
            f"MOGAMES_BACKENDS_{GAME.upper()}": ",".join(addresses),
            "MOGAMES_REDIS_URL": redis_url,
            "MOGAMES_WEB_LISTEN": "",
            "MOGAMES_LOG_LEVEL": "warning",
        },
        tmp_path / "gateway.log",
    )
    processes = [*replicas, gateway]
    try:
        for address in [*addresses, gateway_address]:
            wait_for_port(int(address.rsplit(":", 1)[1]), 30)
        async with grpc.aio.insecure_channel(gateway_address) as channel:
            await wait_serving(channel, "")
            client = GameClient(channel, GAME)
            stop = asyncio.Event()
            played: list[PlayedMatch] = []

            async def loop(n: int) -> None:
                while not stop.is_set():
                    # A bound on each match, so that one that stalls fails the test (below)
                    # rather than hang it.
                    until = time.monotonic() + 30
                    played.append(await play_match(client, PLAYERS, one_stream=True, until=until))

            loops = [asyncio.create_task(loop(n)) for n in range(LOOPS)]

            async def streams_on_the_stopped_replica() -> bool:
                samples = await asyncio.to_thread(scrape, stopped_metrics)
                return value(samples, "mogames_watchers", service=SERVICE) >= PLAYERS

            await wait_until(streams_on_the_stopped_replica, "a match played on the replica to stop", 60)
            assert not any(task.done() for task in loops)
            replicas[0].send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            exit_code = await asyncio.to_thread(replicas[0].wait, GRACE_S + 10)
            stopped_after_s = time.monotonic() - signalled
            await asyncio.sleep(0.5)
            stop.set()
            await asyncio.wait_for(asyncio.gather(*loops), timeout=60)
            stalled = [await client.match(m.match_id) for m in played if not m.finished]
        assert exit_code == 0 and stopped_after_s < GRACE_S / 2
        assert not stalled, stalled
        resumed = [s for match in played for s in match.resumed_after_s]
        assert resumed, "some stream was on the stopped replica"
        # Every cut told UNAVAILABLE, but those whose status gRPC's client lost to a move it
        # was sending (it reports INTERNAL "Internal error from Core" then, of its own).
        cuts = {code for match in played for code in match.cut_codes}
        assert "UNAVAILABLE" in cuts and cuts <= {"UNAVAILABLE", CUT_WHILE_SENDING}
        # No process answered INTERNAL.
        for log in ("replica-0.log", "replica-1.log", "gateway.log"):
            assert '"INTERNAL"' not in (tmp_path / log).read_text()
        assert max(resumed) < 2.0, resumed
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            process.wait(30)
