"""/metrics on a real service process and a real gateway process: the counters move, and
the moves the server makes itself (bots, timed-out seats) are counted like players'."""

from __future__ import annotations

import asyncio
import signal
import urllib.request

import grpc
from mogames.common.v1 import common_pb2
from prometheus_client.parser import text_string_to_metric_families

from clients.game_client import GameClient
from deploy.redis_server import free_port, running_redis, wait_for_port
from tests.helpers import active_seat_move, start_match, wait_serving, wait_until
from tests.test_processes import spawn, spawn_service

MOVES = 12
HAPPY = "mogames.happymochi.v1.HappyMochi"


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_of_service_and_gateway_move_with_play(tmp_path):
    # Its own Redis: no other process's matches (their bots, their timers) are played by
    # this service's scheduler, whose moves the counts below include.
    with running_redis() as redis_url:
        service_port, gateway_port = free_port(), free_port()
        service_metrics, gateway_metrics = free_port(), free_port()
        service = spawn_service(
            "happy_mochi",
            f"127.0.0.1:{service_port}",
            redis_url,
            tmp_path / "service.log",
            {"MOGAMES_ALLOW_CLIENT_SEED": "true", "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{service_metrics}"},
        )
        gateway = spawn(
            ["-m", "gateway"],
            {
                "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
                "MOGAMES_BACKENDS_HAPPY_MOCHI": f"127.0.0.1:{service_port}",
                "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{gateway_metrics}",
                "MOGAMES_WEB_LISTEN": "",
            },
            tmp_path / "gateway.log",
        )
        try:
            for port in (service_port, gateway_port, service_metrics, gateway_metrics):
                wait_for_port(port, 30)
            before = scrape(service_metrics)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}") as channel:
                # The gateway may have tried the replica before it listened: it answers
                # UNAVAILABLE until its reconnection, then reports the game SERVING.
                await wait_serving(channel, "mogames.happymochi.v1.HappyMochi")
                client = GameClient(channel, "happy_mochi")
                started = await start_match(client, 2, seed=5)
                for _ in range(MOVES):
                    seat, move, version = await active_seat_move(client, started)
                    token = started.tokens[seat]
                    await client.submit(started.match_id, token, move, expected_version=version)
                watched = await client.create(2)
                watch = client.watch(watched.match_id)
                read = asyncio.ensure_future(watch.read())
                play = await client.play(started.match_id, started.tokens[0])  # a watch too
                await asyncio.wait_for(play.read(), 10)

                async def both_open() -> bool:  # on the replica (the WatchMatch sends nothing yet)
                    return value(scrape(service_metrics), "mogames_watchers", service=HAPPY) >= 2

                await wait_until(both_open, "both watches open")
                during = scrape(service_metrics)
                watch.cancel()
                read.cancel()
                play.cancel()
            service_after, gateway_after = scrape(service_metrics), scrape(gateway_metrics)
        finally:
            for process in (gateway, service):
                process.send_signal(signal.SIGTERM)
            for process in (gateway, service):
                process.wait(timeout=30)

        moved = value(service_after, "mogames_moves_committed_total", game="happy_mochi") - value(
            before, "mogames_moves_committed_total", game="happy_mochi"
        )
        assert moved == MOVES
        ok_submits = value(service_after, "mogames_rpcs_total", method="SubmitMove", code="OK")
        assert ok_submits == MOVES
        assert value(gateway_after, "mogames_rpcs_total", method="SubmitMove", code="OK") == MOVES
        assert value(service_after, "mogames_rpc_seconds_count", method="SubmitMove") == MOVES
        assert value(gateway_after, "mogames_rpc_seconds_count", method="ListLegalMoves") > 0
        assert value(service_after, "mogames_redis_command_seconds_count", command="EVALSHA") >= MOVES
        assert value(gateway_after, "mogames_gateway_backends_up", service=HAPPY) == 1
        assert value(during, "mogames_watchers", service=HAPPY) == 2
        assert value(during, "mogames_watched_matches", service=HAPPY) == 2


async def test_moves_of_server_bots_and_timed_out_seats_are_counted_once_each(tmp_path):
    # Its own Redis: no other process's scheduler may play this match's bots.
    with running_redis() as redis_url:
        service_port, metrics_port = free_port(), free_port()
        service = spawn_service(
            "mori",
            f"127.0.0.1:{service_port}",
            redis_url,
            tmp_path / "service.log",
            {
                "MOGAMES_ALLOW_CLIENT_SEED": "true",
                "MOGAMES_METRICS_LISTEN": f"127.0.0.1:{metrics_port}",
                "MOGAMES_BOT_THINK_MS": "0",
                "MOGAMES_SCHEDULER_TICK_MS": "50",
                "MOGAMES_LOG_LEVEL": "warning",
            },
        )
        try:
            for port in (service_port, metrics_port):
                wait_for_port(port, 30)
            before = value(scrape(metrics_port), "mogames_moves_committed_total", game="mori")
            async with grpc.aio.insecure_channel(f"127.0.0.1:{service_port}") as channel:
                client = GameClient(channel, "mori")
                # Seats 1 and 2 are bots; the player at seat 0 never moves: its first turn
                # times out (a move the scheduler makes for it) and hands the seat to a bot.
                table = common_pb2.TableOptions(
                    bot_seats=[1, 2], bot_level="policy", turn_seconds=1, max_timeouts=1
                )
                match = await client.create(3, seed=4, table=table)
                assert (await client.join(match.match_id, "idle")).seat == 0

                async def over() -> bool:
                    nonlocal match
                    match = await client.match(match.match_id)
                    return match.status != common_pb2.IN_PROGRESS

                await wait_until(over, "the bots finishing the match", timeout_s=60)
            assert match.status == common_pb2.FINISHED
            assert [s.bot for s in match.seats] == [True, True, True]
            # Every version after the joins' is one committed move, none of them a SubmitMove.
            moves = match.version

            async def counted() -> bool:
                samples = scrape(metrics_port)
                return value(samples, "mogames_moves_committed_total", game="mori") - before >= moves

            # The counter moves right after the commit's reply, which a read may overtake.
            await wait_until(counted, f"{moves} moves counted")
            samples = scrape(metrics_port)
            assert value(samples, "mogames_moves_committed_total", game="mori") - before == moves
            assert value(samples, "mogames_rpcs_total", method="SubmitMove", code="OK") == 0
        finally:
            service.terminate()
            service.wait(timeout=20)
