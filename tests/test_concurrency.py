"""Two replicas and many clients racing on one match: no move lost, none duplicated."""

from __future__ import annotations

import asyncio
import random
import uuid

import grpc

from services.runtime.history import StoredEvent
from services.runtime.store import MatchStore
from tests.helpers import active_seat_move, refusal, start_match

GAME = "happy_mochi"


async def stored_events(redis_client, match_id: str, game: str = GAME) -> list[StoredEvent]:
    return await MatchStore(redis_client, game).history(match_id)


async def test_retried_request_id_returns_the_first_answer_and_applies_nothing(cluster):
    replica_a, replica_b = cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)
    started = await start_match(replica_a, 2, seed=17)
    seat, move, version = await active_seat_move(replica_a, started)
    request_id = uuid.uuid4().hex
    first = await replica_a.submit(started.match_id, started.tokens[seat], move, request_id=request_id)
    again = await replica_b.submit(started.match_id, started.tokens[seat], move, request_id=request_id)
    assert first.version == again.version == version + 1
    assert list(first.events) == list(again.events) and len(first.events) > 0
    # The retry arrived with a stale expected_version: still the first answer, not ABORTED.
    late = await replica_a.submit(
        started.match_id, started.tokens[seat], move, expected_version=version, request_id=request_id
    )
    assert late == first
    assert (await replica_b.match(started.match_id)).version == version + 1


async def test_racing_submits_of_one_move_commit_exactly_once(cluster, redis_client):
    replicas = [cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)]
    started = await start_match(replicas[0], 3, seed=23)
    seat, move, version = await active_seat_move(replicas[0], started)
    token = started.tokens[seat]
    calls = [
        replicas[n % 2].submit(started.match_id, token, move, expected_version=version) for n in range(16)
    ]
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    accepted = [o for o in outcomes if not isinstance(o, Exception)]
    refused = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
    assert len(accepted) == 1 and accepted[0].version == version + 1
    assert len(refused) == 15
    assert {r.code() for r in refused} <= {grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION}
    events = await stored_events(redis_client, started.match_id)
    assert max(e.version for e in events) == version + 1
    ids = [e.stream_id for e in events]
    assert len(ids) == len(set(ids))


RACE_MOVES = 80


async def play_racing(client, started, seat_tokens, rng, accepted: list[int]) -> None:
    """One player's loop: act whenever it is their turn, racing the others, retrying refusals,
    until the match ends or has RACE_MOVES moves."""
    while True:
        match = await client.match(started.match_id)
        if match.status != 2 or match.version >= RACE_MOVES:  # 2: IN_PROGRESS
            return
        mine = [s for s in match.active_seats if s in seat_tokens]
        if not mine:
            await asyncio.sleep(0.002)
            continue
        seat = rng.choice(mine)
        legal = await client.legal_moves(started.match_id, seat_tokens[seat])
        if not legal.moves:
            continue
        try:
            response = await client.submit(
                started.match_id, seat_tokens[seat], rng.choice(legal.moves), expected_version=legal.version
            )
        except grpc.aio.AioRpcError as error:
            assert error.code() in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION), error
            continue
        accepted.append(response.version)


async def test_many_clients_on_two_replicas_lose_and_duplicate_nothing(cluster, redis_client):
    replicas = [cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)]
    started = await start_match(replicas[0], 4, seed=99)
    accepted: list[int] = []
    # Eight clients: each seat is driven by two clients, one on each replica, racing each other.
    players = [
        play_racing(replicas[n % 2], started, {n // 2: started.tokens[n // 2]}, random.Random(n), accepted)
        for n in range(8)
    ]
    await asyncio.wait_for(asyncio.gather(*players), timeout=240)
    final = await replicas[1].match(started.match_id)
    assert final.version >= min(RACE_MOVES, 1) and (final.status == 3 or final.version >= RACE_MOVES)
    assert sorted(accepted) == list(range(1, final.version + 1))
    events = await stored_events(redis_client, started.match_id)
    versions = sorted({e.version for e in events if e.version > 0})
    assert versions == list(range(1, final.version + 1))
    assert len({e.stream_id for e in events}) == len(events)


async def test_stale_expected_version_is_aborted_and_changes_nothing(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=41)
    seat, move, version = await active_seat_move(client, started)
    await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    seat, move, _ = await active_seat_move(client, started)
    stale = await refusal(
        client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    )
    assert stale.code == grpc.StatusCode.ABORTED
    assert (await client.match(started.match_id)).version == version + 1


async def test_racing_joins_fill_each_seat_once(cluster):
    replicas = [cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)]
    match = await replicas[0].create(4, seed=3)
    joins = [replicas[n % 2].join(match.match_id, f"p{n}") for n in range(10)]
    outcomes = await asyncio.gather(*joins, return_exceptions=True)
    seats = sorted(o.seat for o in outcomes if not isinstance(o, Exception))
    assert seats == [0, 1, 2, 3]
    assert all(o.code() == grpc.StatusCode.FAILED_PRECONDITION for o in outcomes if isinstance(o, Exception))
    facts = await replicas[1].match(match.match_id)
    assert all(s.taken for s in facts.seats) and facts.status == 2


async def test_one_request_id_racing_itself_across_replicas_commits_once(cluster, redis_client):
    replicas = [cluster.replica_client(GAME, 0), cluster.replica_client(GAME, 1)]
    started = await start_match(replicas[0], 2, seed=57)
    seat, move, version = await active_seat_move(replicas[0], started)
    request_id = uuid.uuid4().hex
    answers = await asyncio.gather(
        *(
            replicas[n % 2].submit(started.match_id, started.tokens[seat], move, request_id=request_id)
            for n in range(12)
        )
    )
    assert {a.version for a in answers} == {version + 1}
    assert all(list(a.events) == list(answers[0].events) for a in answers)
    assert all(list(a.active_seats) == list(answers[0].active_seats) for a in answers)
    events = await stored_events(redis_client, started.match_id)
    assert max(e.version for e in events) == version + 1
