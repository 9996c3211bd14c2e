"""Turn timers, server bots and the idle reaper on real Redis with two replicas: a stalled
seat is timed out exactly once (replicas racing, one dying mid-way), the timeout policy's
move is legal, repeated timeouts hand the seat to a bot or end the match, and an idle
match is reaped while its watchers look on."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

import pytest
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from deploy.redis_server import running_redis
from services.catalog import rules_module
from services.runtime import keys
from services.runtime.history import StoredEvent
from services.runtime.lifecycle import Lifecycle
from services.runtime.matches import MatchService
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from services.runtime.timers import Scheduler
from tests.conftest import running_services, service_settings

GAME = "happy_mochi"
ABANDON = common_pb2.SeatPolicy.SEAT_POLICY_ABANDON
QUICK = {"bot_think_ms": 0, "scheduler_tick_ms": 50, "scheduler_lease_ms": 1000}


@pytest.fixture(scope="module")
async def timed_cluster():
    # Its own Redis, so that only these replicas' schedulers see these matches.
    with running_redis() as url:
        async with running_services(url, [GAME, "momiji"], **QUICK) as cluster:
            yield cluster, url


async def stream_events(redis, match_id: str) -> list[StoredEvent]:
    return await MatchStore(redis, GAME).history(match_id)


def kinds(events: list[StoredEvent]) -> list[str]:
    return [next(iter(e.body)) for e in events]


async def wait_for(condition, timeout_s: float = 20.0, every_s: float = 0.05):
    for _ in range(int(timeout_s / every_s)):
        value = await condition()
        if value:
            return value
        await asyncio.sleep(every_s)
    raise AssertionError("condition not met in time")


async def seated(client: GameClient, table: common_pb2.TableOptions, seed: int) -> tuple[str, dict[int, str]]:
    match = await client.create(2, seed=seed, table=table)
    tokens = {}
    for name in ("ann", "bob"):
        joined = await client.join(match.match_id, name)
        tokens[joined.seat] = joined.token
    return match.match_id, tokens


async def test_a_stalled_seat_times_out_once_with_a_legal_move_and_its_clock_shows(timed_cluster):
    cluster, url = timed_cluster
    client = cluster.client(GAME)
    redis = connect(url)
    match_id, tokens = await seated(client, common_pb2.TableOptions(turn_seconds=1, max_timeouts=5), 11)
    match = await client.match(match_id)
    seat = match.active_seats[0]
    seconds, micros = await redis.time()
    redis_now_ms = seconds * 1000 + micros // 1000
    [clock] = match.clocks
    assert clock.seat == seat and redis_now_ms < clock.deadline_unix_ms <= redis_now_ms + 1000
    legal = await client.legal_moves(match_id, tokens[seat])
    view = await client.view(match_id, tokens[seat])
    assert [c.deadline_unix_ms for c in view.clocks] == [clock.deadline_unix_ms]
    await wait_for(lambda: _version_at_least(client, match_id, 1))
    events = await stream_events(redis, match_id)
    first = [e for e in events if e.version == 1]
    assert first[0].body == {"timed_out": {"seat": seat, "consecutive": 1}}
    assert kinds(events).count("timed_out") >= 1
    feed = await redis.xrange(keys.game_moves(GAME), "-", "+")
    # The feed tells the move's public events (never the move): the timeout's among them.
    published = [json.loads(f[b"events"]) for _, f in feed if f[b"match_id"].decode() == match_id]
    assert published[0][0] == {"timed_out": {"seat": seat, "consecutive": 1}} and legal.moves
    # Each version of this stalled match was reached by exactly one timeout.
    versions = [e.version for e in events if "timed_out" in e.body]
    assert versions == sorted(set(versions))
    await redis.aclose()


async def _version_at_least(client: GameClient, match_id: str, version: int) -> bool:
    return (await client.match(match_id)).version >= version


async def test_racing_replicas_and_one_dying_mid_way_fire_a_deadline_exactly_once():
    # No servers here: schedulers driven by hand, so the race is exactly the one staged.
    with running_redis() as url:
        settings = dataclasses.replace(service_settings(GAME, url), **{**QUICK, "scheduler_lease_ms": 1500})
        clients = [connect(url) for _ in range(3)]
        services = [MatchService(rules_module(GAME), MatchStore(c, GAME), settings) for c in clients]
        dying, first, second = (Scheduler(s) for s in services)
        facts = await services[0].create_match(2, 12, {}, {"turn_seconds": 1})
        for name in ("ann", "bob"):
            await services[0].join_match(facts.match_id, name)
        await asyncio.sleep(1.1)
        # One replica claims the due deadline and dies before (or while) it acts.
        claimed, _lease = await dying.claim()
        assert claimed == [facts.match_id]
        assert await first.tick() == 0 and await second.tick() == 0  # leased: nobody else acts
        record = await services[0].store.load(facts.match_id)
        assert record is not None and record.version == 0
        # Once the lease runs out the two others race for it (each tick claims at most once).
        claims = []
        while not any(claims):
            await asyncio.sleep(0.05)
            claims = await asyncio.gather(first.tick(), second.tick())
        assert sorted(claims) == [0, 1]
        # And each fires it once more by hand, as a replica would with a stale claim.
        lease = f"{int(time.time() * 1000)}.5"
        await asyncio.gather(first.fire(facts.match_id, lease), second.fire(facts.match_id, lease))
        events = await stream_events(clients[0], facts.match_id)
        assert kinds(events).count("timed_out") == 1
        record = await services[0].store.load(facts.match_id)
        assert record is not None and record.version == 1
        for client in clients:
            await client.aclose()


async def test_a_move_committed_while_the_scheduler_holds_the_match_is_not_lost():
    # The scheduler claims the match and reads it just before a player's move lands; the
    # move makes the bot's turn due (in 10 s: later than the lease). Settling from the
    # stale read would put the entry back at the idle reaper's time and the bot would sit
    # silent for the reaper's whole delay; the move's wake wins over that settle instead.
    with running_redis() as url:
        settings = dataclasses.replace(
            service_settings(GAME, url), bot_think_ms=10_000, scheduler_lease_ms=1500, abandon_after_s=600
        )
        client = connect(url)
        service = MatchService(rules_module(GAME), MatchStore(client, GAME), settings)
        scheduler = Scheduler(service)
        facts = await Lifecycle(service).create_match(2, 21, {}, {"bot_seats": [1]})
        human = await service.join_match(facts.match_id, "ann")
        for _ in range(30):  # a Happy Mochi turn may take a few moves: until one hands over
            record = await service.store.load(facts.match_id)
            assert record is not None
            state = service.decode_state(record.state)
            assert state.active_seats() == [human.seat]  # nothing but idling is due
            await client.zadd(keys.due(GAME), {facts.match_id: 0})
            claimed, lease = await scheduler.claim()
            assert claimed == [facts.match_id]
            stale = await service.store.load(facts.match_id)
            await service.submit_move(facts.match_id, human.token, state.legal_moves(human.seat)[0], None, "")
            settled = await scheduler.due.settle(facts.match_id, lease, scheduler._next_due(stale))
            fresh = await service.store.load(facts.match_id)
            assert fresh is not None
            if service.decode_state(fresh.state).active_seats() == [1]:
                break
        else:
            raise AssertionError("the bot's turn never came")
        bot_due = service.seats(fresh).next_due_ms()
        assert bot_due is not None and bot_due < (fresh.updated_at + 600) * 1000
        assert not settled
        assert await scheduler.due.score(facts.match_id) == bot_due
        await client.aclose()


async def test_repeated_timeouts_hand_both_seats_to_bots_that_finish_the_match(timed_cluster):
    cluster, _url = timed_cluster
    # Momiji: a short game, so the bots finish soon.
    client = cluster.client("momiji")
    table = common_pb2.TableOptions(turn_seconds=1, max_timeouts=2, bot_level="policy")
    match_id, _tokens = await seated(client, table, 13)
    watch = client.watch(match_id, after_version=0, timeout_s=30)
    seen = []
    async for event in watch:
        seen.append(event)
        if event.WhichOneof("event") == "match_ended":
            break
    timed = [e.timed_out for e in seen if e.WhichOneof("event") == "timed_out"]
    handed = [e.bot_seated for e in seen if e.WhichOneof("event") == "bot_seated"]
    assert sorted((t.seat, t.consecutive) for t in timed) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert sorted((b.seat, b.reason, b.level) for b in handed) == [
        (0, "timeouts", "policy"),
        (1, "timeouts", "policy"),
    ]
    assert seen[-1].match_ended.status == common_pb2.FINISHED
    match = await client.match(match_id)
    assert match.status == common_pb2.FINISHED and all(s.bot for s in match.seats)


async def test_timeouts_with_the_abandon_policy_end_the_match(timed_cluster):
    cluster, url = timed_cluster
    client = cluster.client(GAME)
    table = common_pb2.TableOptions(turn_seconds=1, max_timeouts=1, on_timeouts=ABANDON)
    match_id, _tokens = await seated(client, table, 14)
    redis = connect(url)
    match = await wait_for(lambda: _over(client, match_id))
    assert match.status == common_pb2.ABANDONED
    events = await stream_events(redis, match_id)
    assert kinds(events)[-3:] == ["timed_out", "match_abandoned", "match_ended"]
    assert events[-2].body == {"match_abandoned": {"reason": "timeouts"}}
    await redis.aclose()


async def _over(client: GameClient, match_id: str):
    match = await client.match(match_id)
    return match if match.status not in (common_pb2.IN_PROGRESS, common_pb2.WAITING_FOR_PLAYERS) else None


async def test_the_reaper_ends_an_idle_match_and_its_watchers_see_it():
    with running_redis() as url:
        async with running_services(url, [GAME], abandon_after_s=1, **QUICK) as cluster:
            client = cluster.client(GAME)
            match_id, tokens = await seated(client, common_pb2.TableOptions(), 15)
            waiting = await client.create(2, seed=16)
            match = await client.match(match_id)
            seat = match.active_seats[0]
            legal = await client.legal_moves(match_id, tokens[seat])
            await client.submit(match_id, tokens[seat], legal.moves[0])
            watch = client.watch(match_id, tokens[1 - seat], after_version=0, timeout_s=20)
            seen = [event async for event in watch]
            abandoned = [e.match_abandoned for e in seen if e.WhichOneof("event") == "match_abandoned"]
            assert [a.reason for a in abandoned] == ["idle"]
            assert (await client.match(match_id)).status == common_pb2.ABANDONED
            reaped = await wait_for(lambda: _over(client, waiting.match_id))
            assert reaped.status == common_pb2.ABANDONED
            redis = connect(url)
            ttl = await redis.ttl(keys.match(match_id))
            assert 0 < ttl <= service_settings(GAME, url).finished_ttl_s
            assert await redis.zscore(keys.due(GAME), match_id) is None
            await redis.aclose()


async def test_a_timed_move_on_one_redis_wakes_its_due_entry_inside_its_commit():
    """On one Redis a move of a timed match reads Redis's clock and commits: its due-set
    entry is woken by the commit script itself (no ZADD before it, no wake script after:
    two round trips instead of four), and stands at the new turn's deadline."""
    with running_redis() as url:
        client = connect(url)
        service = MatchService(rules_module(GAME), MatchStore(client, GAME), service_settings(GAME, url))
        facts = await service.create_match(2, 22, {}, {"turn_seconds": 60})
        tokens = {}
        for name in ("ann", "bob"):
            joined = await service.join_match(facts.match_id, name)
            tokens[joined.seat] = joined.token
        record = await service.store.load(facts.match_id)
        assert record is not None
        state = service.decode_state(record.state)
        seat = state.active_seats()[0]
        await service.submit_move(facts.match_id, tokens[seat], state.legal_moves(seat)[0], None, "first")
        before = await _command_calls(client)
        started_ms = await service.redis_now_ms()
        for n in range(5):
            record = await service.store.load(facts.match_id)
            assert record is not None
            state = service.decode_state(record.state)
            seat = state.active_seats()[0]
            await service.submit_move(facts.match_id, tokens[seat], state.legal_moves(seat)[0], None, f"m{n}")
        after = await _command_calls(client)
        sent = {name: after.get(name, 0) - before.get(name, 0) for name in ("evalsha", "time", "zadd")}
        sent["time"] -= 1  # started_ms
        # Five moves: a clock read and a commit each (the loop's loads are HMGETs); the
        # commit script's own ZADD counts as a zadd: one per move, none sent on its own.
        assert sent == {"evalsha": 5, "time": 5, "zadd": 5}, sent
        record = await service.store.load(facts.match_id)
        assert record is not None
        deadline = service.seats(record).next_due_ms()
        score = await service.due.score(facts.match_id)
        # Writers only ever lower a waiting entry: it stands at the earliest deadline these
        # moves set (a turn's 60 s), far before the idle reaper's time.
        assert deadline is not None and score is not None
        assert started_ms + 59_000 < score <= deadline
        await client.aclose()


async def _command_calls(client) -> dict[str, int]:
    stats = await client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}
