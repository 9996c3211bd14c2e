"""WatchMatch: complete history from the first join, per-watcher cursors, exact resume at
event granularity, across replicas, one pub/sub subscription per replica."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis

from clients.bot import play_match
from deploy.redis_server import running_redis
from services.catalog import rules_module
from services.runtime import keys
from services.runtime.matches import MatchService
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from tests import helpers
from tests.conftest import service_settings, services_on_own_redis
from tests.helpers import active_seat_move, events_before, is_history, refusal, start_match

GAME = "happy_mochi"


async def play_moves(client, started, count: int) -> int:
    version = 0
    for _ in range(count):
        seat, move, version = await active_seat_move(client, started)
        version = (
            await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
        ).version
    return version


async def collect(stream, until) -> list:
    """History events of ``stream`` until ``until(event)`` holds (that one included)."""
    seen = []
    async for event in stream:
        if is_history(event):
            seen.append(event)
            if until(event):
                break
    stream.cancel()
    return seen


async def test_watcher_on_one_replica_sees_moves_made_on_the_other(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=8)
    token = started.tokens[0]
    watcher = asyncio.create_task(
        collect(replica_b.watch(started.match_id, token, after_version=0), lambda e: e.version >= 6)
    )
    await asyncio.sleep(0.2)  # the watcher is now waiting for live events
    await play_moves(replica_a, started, 6)
    collected = await asyncio.wait_for(watcher, timeout=20)
    versions = [e.version for e in collected]
    # From (0, 0): version 0's joins and start too, then every move's events.
    assert versions == sorted(versions) and set(versions) == {0, 1, 2, 3, 4, 5, 6}
    assert [e.seq for e in collected if e.version == 1] == list(range(1, versions.count(1) + 1))


async def test_a_watcher_started_before_the_first_join_sees_every_join_and_the_start(cluster):
    client = cluster.client(GAME)
    match = await client.create(3, seed=2)
    live = asyncio.create_task(
        collect(client.watch(match.match_id), lambda e: e.WhichOneof("event") == "match_started")
    )
    await asyncio.sleep(0.2)
    for name in ("ann", "bob", "cid"):
        await client.join(match.match_id, name)
    seen = await asyncio.wait_for(live, timeout=20)
    assert [(e.version, e.seq) for e in seen] == [(0, 1), (0, 2), (0, 3), (0, 4)]
    assert [e.player_joined.player_name for e in seen[:3]] == ["ann", "bob", "cid"]
    # Replay from the beginning gives the same events.
    replayed = await collect(client.watch(match.match_id), lambda e: e.WhichOneof("event") == "match_started")
    assert replayed == seen


async def test_resume_from_every_position_misses_nothing_and_repeats_nothing(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 3, seed=12)
    last = await play_moves(replica_a, started, 8)
    token = started.tokens[1]
    whole = await events_before(replica_a.watch(started.match_id, token), last)
    assert whole[0].version == 0 and whole[0].WhichOneof("event") == "player_joined"
    assert {e.version for e in whole} == set(range(last))
    # From the start of a version (after_seq 0): that version's events and every later one.
    for version in range(last):
        resumed = await events_before(replica_b.watch(started.match_id, token, version), last)
        assert resumed == [e for e in whole if e.version >= version]
    # After one event, wherever it is, even between two events of one version.
    for n, event in enumerate(whole):
        stream = replica_b.watch(started.match_id, token, event.version, event.seq)
        resumed = await events_before(stream, last)
        assert resumed == whole[n + 1 :]


async def test_a_stream_cut_between_two_events_of_one_version_resumes_exactly(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=12)
    token = started.tokens[0]
    await play_moves(client, started, 1)
    whole = await events_before(client.watch(started.match_id, token), 1)
    # Version 0 holds the joins and the start: cut the stream after the first join.
    stream = client.watch(started.match_id, token)
    first = await anext(aiter(stream))
    stream.cancel()
    assert (first.version, first.seq) == (0, 1) and len(whole) >= 3
    rest = await events_before(client.watch(started.match_id, token, first.version, first.seq), 1)
    assert [first, *rest] == whole


async def test_watch_of_a_finished_match_replays_to_the_end_and_closes(cluster):
    client = cluster.client("mori")  # short matches
    played = await play_match(client, 3, seed=5)
    events = [e async for e in client.watch(played.match_id, None)]
    assert events[0].WhichOneof("event") == "player_joined"
    assert events[-1].WhichOneof("event") == "match_ended"
    assert list(events[-1].match_ended.winners) == played.winners
    assert [(e.version, e.seq) for e in events] == sorted((e.version, e.seq) for e in events)
    assert events[-1].version == played.moves
    # Resuming after the end: the end once more (every stream ends with it), and it closes.
    end = events[-1]
    after_end = [e async for e in client.watch(played.match_id, None, end.version, end.seq)]
    assert after_end == [end]
    # From the start of the last version: its events, the end last.
    last_version = [e async for e in client.watch(played.match_id, None, end.version)]
    assert last_version == [e for e in events if e.version == end.version]


async def test_out_of_range_cursors_are_refused_and_blind_nobody(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=19)
    player = asyncio.create_task(
        collect(replica_b.watch(started.match_id, started.tokens[0], 0), lambda e: e.version >= 2)
    )
    for version in (10**12, 2**64 - 1, 1):
        refused = await refusal(anext(aiter(replica_b.watch(started.match_id, None, version))))
        assert (refused.code, refused.field) == (grpc.StatusCode.INVALID_ARGUMENT, "after_version")
    # A watcher far ahead of another (at the current version) changes nothing for it.
    ahead = replica_b.watch(started.match_id, None, 0)
    await asyncio.sleep(0.2)
    await play_moves(replica_a, started, 2)
    seen = await asyncio.wait_for(player, timeout=20)
    ahead.cancel()
    assert {e.version for e in seen} == {0, 1, 2}


async def test_many_watchers_share_one_subscription_per_replica_and_all_see_each_move(cluster, redis_client):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=19)
    # Each from the last event of version 0 (the joins, the start, the deal): the move's first.
    opened = await MatchStore(redis_client, GAME).load(started.match_id)
    assert opened is not None and opened.version == 0
    streams = [replica_b.watch(started.match_id, None, 0, opened.event_seq) for _ in range(40)]
    firsts = [asyncio.create_task(anext(aiter(s))) for s in streams]
    await asyncio.sleep(1.0)  # every watcher has replayed its (empty) history and is waiting
    subscribers = await redis_client.pubsub_numsub(keys.notify(started.match_id))
    version = await play_moves(replica_a, started, 1)
    received = await asyncio.wait_for(asyncio.gather(*firsts), timeout=20)
    for stream in streams:
        stream.cancel()
    assert all((event.version, event.seq) == (version, 1) == (1, 1) for event in received)
    # Forty watchers on replica b: one subscription to the match's channel, b's.
    assert subscribers == [(keys.notify(started.match_id).encode(), 1)]


# Every command a watch could issue. The lifecycle scheduler's ticks (TIME and a script per
# replica every few hundred ms, whatever the number of watchers) are not watch costs.
WATCH_COMMANDS = ("xrange", "xread", "hmget", "hget", "get", "ping", "subscribe", "unsubscribe")


async def watch_command_calls(redis_client) -> dict[str, int]:
    stats = await redis_client.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in WATCH_COMMANDS}


async def test_quiet_watchers_cost_no_redis_commands():
    async with services_on_own_redis([GAME]) as (own, redis_client):
        await _quiet_watchers_cost_no_redis_commands(own, redis_client)


async def _quiet_watchers_cost_no_redis_commands(cluster, redis_client):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=5)
    streams = [
        replica.watch(started.match_id, started.tokens[n % 2] if n % 3 else None, 0)
        for n in range(30)
        for replica in (replica_a, replica_b)
    ]
    readers = [asyncio.create_task(collect(s, lambda e: False)) for s in streams]
    # Wait until every watch has subscribed, replayed and prompted (a busy machine is slow).
    before = await watch_command_calls(redis_client)
    for _ in range(40):
        await asyncio.sleep(0.5)
        settled, before = before, await watch_command_calls(redis_client)
        if settled == before:
            break
    await asyncio.sleep(2.0)
    after = await watch_command_calls(redis_client)
    for stream in streams:
        stream.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    assert after == before


async def wait_until(condition, timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s * 20)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


def _all_watching(service: MatchService, firsts: list[asyncio.Task[Any]], opened: int) -> bool:
    """Whether the hub serves all ``opened`` watches; a watch that failed to open says why."""
    for first in firsts:
        if first.done() and not first.cancelled() and first.exception() is not None:
            raise AssertionError(f"a watch failed to open: {first.exception()!r}")
    return service.hub.watched_matches() == opened


# Its bound (memory given back in time, a move's delay) is the servers', not the other
# tests' load: it runs alone (tests/machine_share.py).
@pytest.mark.alone
async def test_two_thousand_watched_matches_on_one_replica_deliver_a_move_at_once(redis_url):
    # No heartbeat in between: the first item each stream yields is its first event.
    settings = dataclasses.replace(service_settings(GAME, redis_url), heartbeat_s=600)
    clients = [connect(redis_url), connect(redis_url)]
    watching, moving = (MatchService(rules_module(GAME), MatchStore(c, GAME), settings) for c in clients)
    streams, firsts = [], []
    try:
        played = await watching.create_match(2, 3, {"first_player": 0})
        tokens = [(await moving.join_match(played.match_id, name)).token for name in ("a", "b")]
        quiet = [(await watching.create_match(2, n, {"first_player": 0})).match_id for n in range(1999)]
        # The played match's watch starts after its joins and start; the quiet ones have none.
        opened = await watching.store.load(played.match_id)
        assert opened is not None
        for n, match_id in enumerate([played.match_id, *quiet]):
            streams.append(watching.watch(match_id, None, 0, opened.event_seq if n == 0 else 0))
            firsts.append(asyncio.create_task(anext(streams[-1])))
            if n % 25 == 24:  # open in batches, as clients arrive, not 2,000 loads at once
                await wait_until(lambda n=n: _all_watching(watching, firsts, n + 1), timeout_s=60)
        assert watching.hub.watched_matches() == 2000
        await asyncio.sleep(1.0)  # every subscription confirmed and read
        legal, version = await moving.legal_moves(played.match_id, tokens[0])
        started = time.perf_counter()
        await moving.submit_move(played.match_id, tokens[0], legal[0], version, "")
        event = await asyncio.wait_for(firsts[0], 10)
        delivered_s = time.perf_counter() - started
        assert (event.version, event.seq) == (1, 1)
        print(f"2,000 watched matches: the move's event arrived in {delivered_s * 1000:.1f} ms")
        assert delivered_s < 0.05, f"the move's event took {delivered_s * 1000:.0f} ms"
        assert not any(f.done() for f in firsts[1:])
    finally:
        for first in firsts:
            first.cancel()
        await asyncio.gather(*firsts, return_exceptions=True)
        for stream in streams:
            await stream.aclose()
        for client in clients:
            await client.aclose()


class _SlowToHandOver(MatchStore):
    """A store whose commits come back a moment after Redis answered: the commit's own
    notification, on the hub's pub/sub connection, then reaches the hub first (as it can
    under load, when both arrive in one turn of the event loop)."""

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        result = await super().commit(*args, **kwargs)
        await asyncio.sleep(0.05)
        return result


async def test_a_replicas_own_commit_is_handed_to_its_watchers_without_a_read():
    """Its notification arriving before its reply does not make the watchers here read the
    history (a read per move was a tenth of a busy replica's moves); a commit of another
    replica landing meanwhile is still read, once the own one is over."""
    # A Redis of its own: Redis counts commands server-wide, and the session's shared one
    # serves other tests' bot matches meanwhile.
    with running_redis() as url:
        redis_client = aioredis.Redis.from_url(url)
        try:
            await _own_commit_is_handed_over_without_a_read(url, redis_client)
        finally:
            await redis_client.aclose()


async def _own_commit_is_handed_over_without_a_read(redis_url: str, redis_client: Any) -> None:
    async with _two_replicas(redis_url, _SlowToHandOver) as (here, other):
        facts = await here.create_match(2, 7, {"first_player": 0})
        tokens = [(await here.join_match(facts.match_id, name)).token for name in ("a", "b")]
        seen: list[Any] = []
        detach = here.hub.attach(facts.match_id, None, (0, 0), seen.append)
        await wait_until(lambda: seen and here.hub.is_watched(facts.match_id))
        await asyncio.sleep(0.5)  # subscribed and caught up: every later event is a move's

        async def move(service: MatchService, n: int) -> int:
            return await _first_legal_move(service, facts.match_id, tokens, f"m{n}")

        lranges = await _lrange_calls(redis_client)
        for n in range(6):
            await move(here, n)
        # The history (an LRANGE of its tail) is never read: every event is handed over.
        assert await _lrange_calls(redis_client) == lranges

        # Another replica's move while this one's commit is still handing over.
        mine = asyncio.create_task(move(here, 6))
        await wait_until(lambda: here.hub._matches[facts.match_id].committing == 1)
        theirs = await move(other, 7)
        await mine
        await wait_until(lambda: seen[-1].version == theirs)
        assert await _lrange_calls(redis_client) == lranges + 1  # read once, after

        _each_event_once_in_order(seen, theirs)
        detach()


@contextlib.asynccontextmanager
async def _two_replicas(
    redis_url: str, store_here: type[MatchStore]
) -> AsyncIterator[tuple[MatchService, MatchService]]:
    """Two replicas' match services on one Redis, in this process: the first with ``store_here``."""
    settings = dataclasses.replace(service_settings(GAME, redis_url), heartbeat_s=600)
    clients = [connect(redis_url), connect(redis_url)]
    try:
        yield (
            MatchService(rules_module(GAME), store_here(clients[0], GAME), settings),
            MatchService(rules_module(GAME), MatchStore(clients[1], GAME), settings),
        )
    finally:
        for client in clients:
            await client.aclose()


async def _first_legal_move(service: MatchService, match_id: str, tokens: list[str], request_id: str) -> int:
    """The first legal move of the seat to move, submitted; the version it made."""
    for token in tokens:
        legal, version = await service.legal_moves(match_id, token)
        if legal:
            await service.submit_move(match_id, token, legal[0], version, request_id)
            return version + 1
    raise AssertionError("nobody has a move")


def _each_event_once_in_order(seen: list[Any], last_version: int) -> None:
    positions = [(e.version, e.seq) for e in seen]
    assert positions == sorted(set(positions)), "an event delivered twice or out of order"
    assert {e.version for e in seen} >= set(range(1, last_version + 1))


async def _lrange_calls(redis_client) -> int:
    stats = await redis_client.info("commandstats")
    return int(stats.get("cmdstat_lrange", {}).get("calls", 0))


async def test_a_watch_whose_notification_connection_is_lost_misses_no_move(redis_url, redis_client):
    """The hub's pub/sub connection is killed under a watcher: it reconnects, subscribes
    again, and the watcher gets every move committed meanwhile and after, once each."""
    async with _two_replicas(redis_url, MatchStore) as (here, other):
        facts = await other.create_match(2, 9, {"first_player": 0})
        tokens = [(await other.join_match(facts.match_id, name)).token for name in ("a", "b")]
        seen: list[Any] = []
        detach = here.hub.attach(facts.match_id, None, (0, 0), seen.append)
        await wait_until(lambda: seen and here.hub._pubsub is not None and here.hub._pubsub.connection)

        async def move(n: int) -> int:
            return await _first_legal_move(other, facts.match_id, tokens, f"m{n}")

        version = await move(0)
        await wait_until(lambda: seen[-1].version == version)
        host, port = here.hub._pubsub.connection._writer.get_extra_info("sockname")[:2]
        address = f"{host}:{port}"
        assert await redis_client.client_kill(address)
        for n in range(1, 4):  # committed while the hub is reconnecting
            version = await move(n)
        await wait_until(lambda: seen[-1].version == version)
        version = await move(4)  # and after: heard on the new connection
        await wait_until(lambda: seen[-1].version == version)
        _each_event_once_in_order(seen, version)
        detach()


async def test_a_closed_hub_ends_its_subscriptions_and_starts_none_after(redis_url, redis_client):
    """A replica shutting down closes its hub: the subscription task and its connection end
    (nothing left pending when the loop closes), and a stream detaching later (a generator
    the loop finalises on its way out) starts no new one."""
    async with _two_replicas(redis_url, MatchStore) as (here, _):
        facts = await here.create_match(2, 7, {"first_player": 0})
        seen: list[Any] = []
        detach = here.hub.attach(facts.match_id, None, (0, 0), seen.append)

        await helpers.until_subscribers(redis_client, facts.match_id, 1, timeout_s=5)
        assert here.hub._tasks
        await here.hub.close()
        assert not here.hub._tasks
        # The hub closed its connection; Redis drops the subscription once it reads the
        # close, a moment later.
        await helpers.until_subscribers(redis_client, facts.match_id, 0, timeout_s=5)
        detach()
        assert not here.hub._tasks and here.hub._pubsub is None, "a task started after close"
