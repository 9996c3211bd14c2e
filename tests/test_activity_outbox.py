"""A commit's activity notices are never lost after it, on real Redis and on the Redis Cluster:
one Redis writes them to the activity stream in the commit script itself; a cluster writes them
to the match's outbox (its own slot) with a mark made before the commit. Either way they wait,
marked, in the outbox until the committer has indexed the match and pushed them to the
players' WatchMyTurns channels, and the scheduler's sweep does what a committer that died
right after its commit left undone: appends them (a cluster; exactly once), indexes the
match and pushes the notices still current.

A committer's death between its commit and its append is staged by replacing that replica's
``activity.after_commit`` (the step that runs after the commit) with one that does nothing."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from services.catalog import rules_module
from services.runtime import keys, redis_client
from services.runtime.activity import index_member
from services.runtime.matches import MatchService
from services.runtime.redis_client import connect, text
from services.runtime.store import MatchStore
from services.runtime.timers import Scheduler
from services.workers.activity import ActivityEntry
from services.workers.ladders import Ladders
from services.workers.ratings_worker import RatingsWorker
from tests.conftest import service_settings

GAME = "happy_mochi"


@contextlib.asynccontextmanager
async def replica(url: str, game: str = GAME) -> AsyncIterator[MatchService]:
    client = connect(url)
    try:
        yield MatchService(rules_module(game), MatchStore(client, game), service_settings(game, url))
    finally:
        await client.aclose()


def die_after_commits(service: MatchService, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the replica's process 'dies' right after each commit, before it tells anyone."""

    async def dead(*_args: Any) -> None:
        return None

    monkeypatch.setattr(service.activity, "after_commit", dead)


async def seated_players(
    service: MatchService, players: list[str], seed: int = 5
) -> tuple[str, dict[int, str]]:
    """A match of ``players`` (player ids; '' an anonymous seat), every seat joined: started."""
    facts = await service.create_match(len(players), seed, {})
    tokens = {}
    for n, player in enumerate(players):
        joined = await service.join_match(facts.match_id, f"p{n}", player_id=player)
        tokens[joined.seat] = joined.token
    return facts.match_id, tokens


async def pass_the_turn(service: MatchService, match_id: str, tokens: dict[int, str]) -> int:
    """Seat 0 plays (first legal moves) until the turn is seat 1's: the version it passed at."""
    for _ in range(30):
        record = await service.store.load(match_id)
        assert record is not None
        state = service.decode_state(record.state)
        if state.active_seats() == [1]:
            return record.version
        await service.submit_move(match_id, tokens[0], state.legal_moves(0)[0], None, "")
    raise AssertionError("seat 0 kept the turn")


async def notices(redis: Any, match_id: str, game: str = GAME) -> list[tuple[str, str, str]]:
    """The match's entries in the activity stream: (notice, version, seats), in order."""
    entries = await redis.xrange(keys.activity(game))
    fields = [{text(k): text(v) for k, v in entry.items()} for _, entry in entries]
    return [(f["notice"], f["version"], f["seats"]) for f in fields if f["match_id"] == match_id]


async def marks(redis: Any, match_id: str, game: str = GAME) -> list[str]:
    members = [text(m) for m in await redis.zrange(keys.outbox_marks(game), 0, -1)]
    return [m for m in members if m.startswith(f"{match_id}/")]


def swept_count() -> float:
    return REGISTRY.get_sample_value("mogames_activity_swept_total", {"game": GAME}) or 0.0


EXPECTED_START = [("match_started", "0", "[0,1]"), ("your_turn", "0", "[0]")]


async def pushed(pubsub: Any, count: int) -> list[tuple[str, str, str]]:
    """``count`` messages of the subscribed WatchMyTurns channels, then none more for a while:
    (player, notice, notice id), sorted."""
    got: list[tuple[str, str, str]] = []
    for _ in range(200):
        message = await pubsub.get_message(
            ignore_subscribe_messages=True, timeout=0.1 if len(got) < count else 1.0
        )
        if message is None:
            if len(got) >= count:
                break
            continue
        channel = text(message["channel"])
        told = json.loads(message["data"])
        got.append(
            (channel[channel.index("{p:") + 3 : channel.rindex("}")], told["notice"], told["notice_id"])
        )
    return sorted(got)


async def test_one_redis_commits_the_notices_with_the_match_and_a_sweep_tells_the_players(
    worker_redis, monkeypatch
):
    url, client = worker_redis
    ann, bob = f"ann-{secrets.token_hex(4)}", f"bob-{secrets.token_hex(4)}"
    for player in (ann, bob):  # signed in: indexed (the players service makes the profile)
        await client.hset(keys.player_profile(player), "name", player)
    async with replica(url) as service:
        die_after_commits(service, monkeypatch)
        match_id, tokens = await seated_players(service, [ann, bob])
        # Told by the commit itself: the replica died before appending anything.
        assert await notices(client, match_id) == EXPECTED_START
        passed = await pass_the_turn(service, match_id, tokens)
        assert await notices(client, match_id) == [*EXPECTED_START, ("your_turn", str(passed), "[1]")]
        # Kept and marked for a sweep: the committer died before indexing and pushing them.
        assert await client.llen(keys.outbox(match_id)) == 2  # the start's and the passing move's
        assert len(await marks(client, match_id)) == 2
        assert await client.hget(keys.player_match_facts(bob), index_member(GAME, match_id)) is None
    monkeypatch.undo()
    pubsub = redis_client.pubsub(client)
    try:
        await pubsub.subscribe(keys.player_turns(ann), keys.player_turns(bob))
        async with replica(url) as other:
            sweeper = Scheduler(other)
            assert await sweeper.sweep_outboxes(grace_ms=0) == 3
            assert await sweeper.sweep_outboxes(grace_ms=0) == 0
            record = await other.store.load(match_id)
        assert record is not None and record.version == passed
        # Pushed: the start to both, the turn that is still current to bob; ann's first turn
        # has passed since (a later commit), so it is not pushed any more.
        assert await pushed(pubsub, 3) == sorted(
            [
                (ann, "match_started", f"{match_id}:0:match_started:{ann}"),
                (bob, "match_started", f"{match_id}:0:match_started:{bob}"),
                (bob, "your_turn", f"{match_id}:{passed}:your_turn:{bob}"),
            ]
        )
    finally:
        await pubsub.aclose()
    # Indexed as stored; not appended to the stream again; nothing left waiting.
    for player in (ann, bob):
        indexed = await client.hget(keys.player_match_facts(player), index_member(GAME, match_id))
        assert indexed is not None and int(text(indexed).partition("|")[0]) == record.rev
    assert await notices(client, match_id) == [*EXPECTED_START, ("your_turn", str(passed), "[1]")]
    assert not await client.exists(keys.outbox(match_id))
    assert await marks(client, match_id) == []


async def test_one_redis_tells_a_bound_match_once_and_an_unbound_one_never(worker_redis):
    url, client = worker_redis
    async with replica(url) as service:
        bound, tokens = await seated_players(service, ["ann", "bob"])
        passed = await pass_the_turn(service, bound, tokens)
        anonymous, tokens = await seated_players(service, ["", ""])
        await pass_the_turn(service, anonymous, tokens)
        assert await notices(client, bound) == [*EXPECTED_START, ("your_turn", str(passed), "[1]")]
        assert await notices(client, anonymous) == []
        # The players' index is still written after the commit.
        assert await client.exists(keys.player_match_facts("ann")) == 0  # no profile: not indexed
        # A committer that lives on clears what it kept for a sweep.
        for match_id in (bound, anonymous):
            assert not await client.exists(keys.outbox(match_id))
            assert await marks(client, match_id) == []


async def test_a_cluster_sweeps_what_a_dead_committer_left_exactly_once(redis_cluster, monkeypatch):
    async with replica(redis_cluster.url) as service:
        redis = service.store.redis
        dying = Scheduler(service)
        die_after_commits(service, monkeypatch)
        match_id, tokens = await seated_players(service, ["ann", "bob"])
        passed = await pass_the_turn(service, match_id, tokens)
        # Committed, in the outbox, marked; not in the stream.
        assert await notices(redis, match_id) == []
        assert await redis.llen(keys.outbox(match_id)) == 2  # the start's and the passing move's
        # One per commit with notices: the second join and the passing move.
        assert len(await marks(redis, match_id)) == 2
        # A mark younger than the grace belongs to a committer still at work: left alone (a
        # grace of minutes here, so that a slow machine cannot age the marks past it).
        assert await dying.sweep_outboxes(grace_ms=600_000) == 0
        assert await notices(redis, match_id) == []
        monkeypatch.undo()
        # Another replica's scheduler, once the grace is over (here: at once).
        swept_before = swept_count()
        pubsub = redis_client.pubsub(redis)
        try:
            await pubsub.subscribe(keys.player_turns("ann"), keys.player_turns("bob"))
            async with replica(redis_cluster.url) as other:
                sweeper = Scheduler(other)
                assert await sweeper.sweep_outboxes(grace_ms=0) == 3
                assert await sweeper.sweep_outboxes(grace_ms=0) == 0
            told = [(player, notice) for player, notice, _id in await pushed(pubsub, 3)]
            assert told == [("ann", "match_started"), ("bob", "match_started"), ("bob", "your_turn")]
        finally:
            await pubsub.aclose()
        assert swept_count() - swept_before == 3
        expected = [*EXPECTED_START, ("your_turn", str(passed), "[1]")]
        assert await notices(redis, match_id) == expected
        assert not await redis.exists(keys.outbox(match_id))
        assert await marks(redis, match_id) == []


async def test_a_cluster_commit_that_lives_on_leaves_no_outbox_and_no_mark(redis_cluster):
    async with replica(redis_cluster.url) as service:
        redis = service.store.redis
        match_id, tokens = await seated_players(service, ["ann", "bob"])
        passed = await pass_the_turn(service, match_id, tokens)
        assert await notices(redis, match_id) == [*EXPECTED_START, ("your_turn", str(passed), "[1]")]
        assert not await redis.exists(keys.outbox(match_id))
        assert await marks(redis, match_id) == []
        # A mark whose commit never ran (a lost race, a death before it) is swept away.
        await service.store.outbox.mark(match_id, 99)
        assert await marks(redis, match_id) == [f"{match_id}/99"]
        assert await Scheduler(service).sweep_outboxes(grace_ms=0) == 0
        assert await marks(redis, match_id) == []
        assert len(await notices(redis, match_id)) == 3


async def test_a_finished_match_whose_replica_dies_after_every_commit_is_told_and_rated_once(
    redis_cluster, monkeypatch
):
    players = [f"ann-{secrets.token_hex(4)}", f"bob-{secrets.token_hex(4)}"]
    async with replica(redis_cluster.url, "momiji") as service:
        redis = service.store.redis
        for player in players:  # signed in: indexed (the players service makes the profile)
            await redis.hset(keys.player_profile(player), "name", player)
        die_after_commits(service, monkeypatch)
        match_id, tokens = await seated_players(service, players, seed=7)
        for _ in range(300):
            record = await service.store.load(match_id)
            assert record is not None
            state = service.decode_state(record.state)
            if state.is_over():
                break
            seat = state.active_seats()[0]
            await service.submit_move(match_id, tokens[seat], state.legal_moves(seat)[0], None, "")
        assert record.status == "FINISHED"
        assert await notices(redis, match_id, "momiji") == []
        swept = await Scheduler(service).sweep_outboxes(grace_ms=0)
        told = await notices(redis, match_id, "momiji")
        assert len(told) == swept
        # Each notice once, in commit order, the match's end last.
        assert len(set(told)) == len(told)
        assert [int(version) for _n, version, _s in told] == sorted(int(v) for _n, v, _s in told)
        assert told[0][0] == "match_started" and told[-1] == ("match_ended", str(record.version), "[0,1]")
        assert await redis.llen(keys.outbox(match_id)) == 0
        assert await marks(redis, match_id, "momiji") == []
        # And the sweep indexed the match for its players as it ended.
        for player in players:
            indexed = await redis.hget(keys.player_match_facts(player), index_member("momiji", match_id))
            assert indexed is not None
            rev, _, summary = text(indexed).partition("|")
            assert int(rev) == record.rev
            assert json.loads(summary)["match"]["status"] == "FINISHED"
        # A sweep racing a slow committer appends an element twice: rated once all the same.
        entries = [
            (i, f)
            for i, f in await redis.xrange(keys.activity("momiji"))
            if f[b"match_id"] == match_id.encode()
        ]
        await redis.xadd(keys.activity("momiji"), entries[-1][1])
        ladders = Ladders(redis)
        worker = RatingsWorker(ladders)
        ended = [
            (i, f)
            for i, f in await redis.xrange(keys.activity("momiji"))
            if f[b"match_id"] == match_id.encode() and f[b"notice"] == b"match_ended"
        ]
        assert len(ended) == 2
        for entry_id, fields in ended:
            await worker.handle(ActivityEntry.parse(entry_id, fields))
        ratings = [await ladders.rating("momiji", player) for player in players]
        assert [rating.matches for rating in ratings] == [1, 1]
