"""The stall watchdog: a live match whose seat to move is watched on a replica but never got
its prompt for the current version (staged: a commit whose notification never reached the
replica, as on a failover), with nothing due, is reported by that replica's scheduler; a
match whose seat was prompted is not, however long it waits. Real Redis and a real replica."""

from __future__ import annotations

import asyncio
import dataclasses

import grpc
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from clients.game_client import GameClient
from services.runtime import metrics
from services.runtime.matches import MatchService
from services.runtime.server import build as build_service
from services.runtime.stalls import StallWatch
from tests.conftest import service_settings
from tests.helpers import start_match, wait_until

GAME = "happy_mochi"
STALL_AFTER_S = 1


async def test_a_watched_seat_left_without_its_prompt_is_reported_and_a_prompted_one_is_not(redis_url):
    settings = dataclasses.replace(service_settings(GAME, redis_url), stall_after_s=STALL_AFTER_S)
    replica = await build_service(settings)
    await replica.server.start()
    service = replica.scheduler.service
    streams = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{replica.port}") as channel:
            client = GameClient(channel, GAME)
            stalled, waiting = await start_match(client, 2, seed=1), await start_match(client, 2, seed=2)
            for started in (stalled, waiting):
                seat = (await client.match(started.match_id)).active_seats[0]
                streams.append(client.watch(started.match_id, started.tokens[seat]))
            readers = [asyncio.create_task(_drain(s)) for s in streams]

            async def both_prompted() -> bool:
                prompted = service.hub.prompted_seats()
                records = [await service.store.load(m.match_id) for m in (stalled, waiting)]
                return all(
                    r is not None and r.version in prompted.get(r.match_id, {}).values() for r in records
                )

            await wait_until(both_prompted, "both seats to move prompted")
            with capture_logs() as logged:
                metrics.STALLED_MATCHES.labels(game=GAME).set(0)
                bumped = await _commit_unheard(service, stalled.match_id)

                # The replica's scheduler reports it, once for this version however often it looks.
                async def reported() -> bool:
                    return _stalled_gauge() == 1

                await wait_until(reported, "the scheduler's watchdog", timeout_s=10)
                await asyncio.sleep(STALL_AFTER_S + 0.5)  # more rounds of the watchdog
            warnings = [e for e in logged if e["event"] == "match_stalled"]
            assert len(warnings) == 1, warnings
            assert warnings[0]["log_level"] == "warning"
            assert (warnings[0]["match_id"], warnings[0]["version"]) == (stalled.match_id, bumped)

            watch = StallWatch(service, lambda: False)
            assert await watch.look() == [stalled.match_id]  # the prompted one never is
            watch.stall_after_s = 3600
            assert await watch.look() == []  # silent, but not for long enough
            for reader in readers:
                reader.cancel()
    finally:
        for stream in streams:
            stream.cancel()
        await replica.server.stop(None)
        await replica.close()


async def _commit_unheard(service: MatchService, match_id: str) -> int:
    """Staged: a commit this replica never hears of (no events, so no notification), after
    which the same seat is to move at a new version its watcher was not prompted at. Its
    version."""
    while True:
        record = await service.store.load(match_id)
        assert record is not None
        now_s = await service.redis_now_ms() / 1000
        bumped = dataclasses.replace(record, version=record.version + 1, updated_at=now_s)
        if (await service.store.commit(bumped, [], ttl_s=600)).outcome == "ok":
            return bumped.version


async def _drain(stream) -> None:  # type: ignore[no-untyped-def]
    async for _event in stream:
        pass


def _stalled_gauge() -> float | None:
    return REGISTRY.get_sample_value("mogames_stalled_matches", {"game": GAME})
