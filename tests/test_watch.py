"""WatchMatch: replay from a version, then live events, across replicas, resumable without gaps."""

from __future__ import annotations

import asyncio

from clients.bot import play_match
from tests.conftest import REPLICAS
from tests.helpers import active_seat_move, events_before, start_match

GAME = "happy_mochi"


async def play_moves(client, started, count: int) -> int:
    version = 0
    for _ in range(count):
        seat, move, version = await active_seat_move(client, started)
        version = (
            await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
        ).version
    return version


async def test_watcher_on_one_replica_sees_moves_made_on_the_other(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=8)
    token = started.tokens[0]
    stream = replica_b.watch(started.match_id, token, after_version=0)
    collected: list = []

    async def watch() -> None:
        async for event in stream:
            collected.append(event)
            if event.version >= 6:
                return

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0.2)  # the watcher is now blocked waiting for live events
    await play_moves(replica_a, started, 6)
    await asyncio.wait_for(watcher, timeout=20)
    stream.cancel()
    versions = [e.version for e in collected]
    assert versions == sorted(versions) and set(versions) == {1, 2, 3, 4, 5, 6}


async def test_resume_from_last_version_misses_nothing_and_repeats_nothing(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 3, seed=12)
    last = await play_moves(replica_a, started, 12)
    token = started.tokens[1]
    whole = await events_before(replica_a.watch(started.match_id, token, 0), last)
    first_part = await events_before(replica_a.watch(started.match_id, token, 0), 6)
    resumed = await events_before(replica_b.watch(started.match_id, token, first_part[-1].version), last)
    assert first_part + resumed == whole
    assert {e.version for e in whole} == set(range(1, last))


async def test_watch_of_a_finished_match_replays_to_the_end_and_closes(cluster):
    client = cluster.client("mori")  # short matches
    played = await play_match(client, 3, seed=5)
    events = [e async for e in client.watch(played.match_id, None, 0)]
    assert events[-1].WhichOneof("event") == "match_ended"
    assert list(events[-1].match_ended.winners) == played.winners
    assert [e.version for e in events] == sorted(e.version for e in events)
    assert events[-1].version == played.moves


async def test_many_watchers_share_one_redis_reader_and_all_see_each_move(cluster, redis_client):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=19)
    streams = [replica_b.watch(started.match_id, started.tokens[n % 2], 0) for n in range(40)]
    firsts = [asyncio.create_task(anext(aiter(s))) for s in streams]
    await asyncio.sleep(1.0)  # every watcher has replayed its (empty) history and is waiting
    blocked = (await redis_client.info("clients"))["blocked_clients"]
    version = await play_moves(replica_a, started, 1)
    received = await asyncio.wait_for(asyncio.gather(*firsts), timeout=20)
    for stream in streams:
        stream.cancel()
    assert all(event.version == version == 1 for event in received)
    # Forty waiting watchers, and no more than one Redis client blocked reading per replica
    # (one replica may still serve a watch an earlier test left behind).
    assert blocked <= REPLICAS
