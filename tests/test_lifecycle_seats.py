"""Seats over a match's life, through the gateway and two replicas on real Redis: rejoining
with the rejoin key (the old token is revoked), retried joins, expired tokens, leaving in
both states, and server bots added or seated at creation."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import grpc
import pytest
from mogames.common.v1 import common_pb2

from clients.bot import play_match
from clients.game_client import GameClient
from deploy.redis_server import running_redis
from services.catalog import rules_module
from services.runtime.errors import Unauthenticated
from services.runtime.matches import MatchService
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from tests.conftest import running_services, service_settings
from tests.helpers import refusal

GAME = "happy_mochi"
BOT = common_pb2.SeatPolicy.SEAT_POLICY_BOT
ABANDON = common_pb2.SeatPolicy.SEAT_POLICY_ABANDON


@pytest.fixture(scope="module")
async def lifecycle_cluster():
    # Its own Redis: these replicas' schedulers act at once (no think time), and no other
    # test's replicas share their due sets.
    with running_redis() as url:
        async with running_services(
            url, [GAME, "mori"], gateways=1, bot_think_ms=0, scheduler_tick_ms=50, scheduler_lease_ms=1000
        ) as cluster:
            yield cluster


def client_of(cluster) -> GameClient:
    return cluster.client(GAME)


async def history(client: GameClient, match_id: str, until: str, timeout_s: float = 20.0) -> list:
    """Every event of the match's stream from version 1 on, until one with member ``until``."""
    seen = []
    stream = client.watch(match_id, after_version=0, timeout_s=timeout_s)
    async for event in stream:
        seen.append(event)
        if event.WhichOneof("event") == until:
            break
    stream.cancel()
    return seen


async def first_move(client: GameClient, match_id: str, token: str):
    legal = await client.legal_moves(match_id, token)
    return await client.submit(match_id, token, legal.moves[0], expected_version=legal.version)


async def test_rejoin_on_a_new_connection_revokes_the_old_token(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    match = await client.create(2, seed=3)
    first = await client.join(match.match_id, "ann")
    second = await client.join(match.match_id, "bob")
    assert first.rejoin_key and first.token_expires_unix_ms > 0
    assert first.rejoin_key != second.rejoin_key
    tokens = {first.seat: first.token, second.seat: second.token}
    await first_move(client, match.match_id, tokens[(await client.match(match.match_id)).active_seats[0]])
    async with grpc.aio.insecure_channel(lifecycle_cluster.replicas_addresses[GAME][1]) as phone:
        again = await GameClient(phone, GAME).rejoin(match.match_id, first.rejoin_key)
        assert again.seat == first.seat and again.token != first.token
        assert again.rejoin_key == first.rejoin_key
        view = await GameClient(phone, GAME).view(match.match_id, again.token)
        assert view.seat == first.seat
    refused = await refusal(client.view(match.match_id, first.token))
    assert refused.code == grpc.StatusCode.UNAUTHENTICATED
    assert refused.reason == "token_revoked" and "revoked" in refused.details
    events = await history(client, match.match_id, "player_rejoined")
    assert [e.player_rejoined.seat for e in events if e.WhichOneof("event") == "player_rejoined"] == [
        first.seat
    ]


async def test_bad_rejoin_keys_are_refused(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    match = await client.create(2, seed=4)
    await client.join(match.match_id, "ann")
    wrong = await refusal(client.rejoin(match.match_id, "not-a-key"))
    assert (wrong.code, wrong.reason) == (grpc.StatusCode.UNAUTHENTICATED, "bad_rejoin_key")
    empty = await refusal(client.rejoin(match.match_id, ""))
    assert (empty.code, empty.field) == (grpc.StatusCode.INVALID_ARGUMENT, "rejoin_key")
    unknown = await refusal(client.rejoin("no-such-match", "k"))
    assert unknown.code == grpc.StatusCode.NOT_FOUND


async def test_a_retried_join_gets_the_same_seat_and_token(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    match = await client.create(3, seed=5)
    first = await client.join(match.match_id, "ann", request_id="join-1")
    retried = await client.join(match.match_id, "ann", request_id="join-1")
    other = await client.join(match.match_id, "bob", request_id="join-2")
    assert (retried.seat, retried.token, retried.rejoin_key) == (first.seat, first.token, first.rejoin_key)
    assert other.seat != first.seat
    seats = (await client.match(match.match_id)).seats
    assert [s.taken for s in seats] == [True, True, False]


async def test_an_expired_token_is_refused_with_the_right_message():
    class Clock:
        now = 2_000_000.0

        def __call__(self) -> float:
            return self.now

    # Its own Redis: the match's reaper entry, due by this clock long ago, would be taken by
    # any running scheduler of the game on a shared one, and the match reaped mid-test.
    with running_redis() as redis_url:
        clock = Clock()
        settings = dataclasses.replace(service_settings(GAME, redis_url), token_ttl_s=60)
        client = connect(redis_url)
        service = MatchService(rules_module(GAME), MatchStore(client, GAME), settings, clock=clock)
        facts = await service.create_match(2, 5, {"first_player": 0})
        joined = await service.join_match(facts.match_id, "ann")
        await service.join_match(facts.match_id, "bob")
        assert joined.token_expires_ms == int((clock.now + 60) * 1000)
        await service.get_view(facts.match_id, joined.token)
        clock.now += 61
        with pytest.raises(Unauthenticated) as refused:
            await service.get_view(facts.match_id, joined.token)
        assert refused.value.reason == "token_expired" and "expired" in refused.value.message
        await client.aclose()


async def test_leaving_a_waiting_match_frees_the_seat(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    match = await client.create(2, seed=6)
    ann = await client.join(match.match_id, "ann")
    left = await client.leave(match.match_id, ann.token)
    assert left.status == common_pb2.WAITING_FOR_PLAYERS and not left.seats[ann.seat].taken
    assert (await refusal(client.view(match.match_id, ann.token))).reason == "token_revoked"
    assert (await refusal(client.rejoin(match.match_id, ann.rejoin_key))).reason == "bad_rejoin_key"
    again = await client.leave(match.match_id, (await client.join(match.match_id, "cy")).token)
    assert not any(s.taken for s in again.seats)
    await client.join(match.match_id, "dee")
    bob = await client.join(match.match_id, "bob")
    assert (await client.match(match.match_id)).status == common_pb2.IN_PROGRESS
    assert (await client.match(match.match_id)).seats[bob.seat].player_name == "bob"


async def test_leaving_a_match_in_progress_seats_a_bot_that_finishes_it(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    # The default policy (a bot takes over) with the quick-playing bot level.
    match = await client.create(2, seed=7, table=common_pb2.TableOptions(bot_level="policy"))
    ann = await client.join(match.match_id, "ann")
    bob = await client.join(match.match_id, "bob")
    tokens = {ann.seat: ann.token, bob.seat: bob.token}
    await first_move(client, match.match_id, tokens[(await client.match(match.match_id)).active_seats[0]])
    watching = asyncio.create_task(history(client, match.match_id, "match_ended", timeout_s=60))
    await asyncio.sleep(0.2)
    left = await client.leave(match.match_id, ann.token)
    assert left.seats[ann.seat].bot and left.seats[ann.seat].bot_level == "policy"
    assert (await refusal(client.view(match.match_id, ann.token))).reason == "token_revoked"
    await client.leave(match.match_id, bob.token)
    events = await watching
    kinds = [e.WhichOneof("event") for e in events]
    seated = [e.bot_seated for e in events if e.WhichOneof("event") == "bot_seated"]
    assert kinds.count("player_left") == 2 and {b.reason for b in seated} == {"left"}
    assert events[-1].match_ended.status == common_pb2.FINISHED
    assert (await client.match(match.match_id)).status == common_pb2.FINISHED
    assert (await refusal(client.rejoin(match.match_id, bob.rejoin_key))).reason == "bad_rejoin_key"


async def test_leaving_with_the_abandon_policy_ends_the_match(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    match = await client.create(2, seed=8, table=common_pb2.TableOptions(on_leave=ABANDON))
    ann = await client.join(match.match_id, "ann")
    bob = await client.join(match.match_id, "bob")
    tokens = {ann.seat: ann.token, bob.seat: bob.token}
    await first_move(client, match.match_id, tokens[(await client.match(match.match_id)).active_seats[0]])
    watching = asyncio.create_task(history(client, match.match_id, "match_ended"))
    await asyncio.sleep(0.2)
    left = await client.leave(match.match_id, bob.token)
    assert left.status == common_pb2.ABANDONED
    events = await watching
    abandoned = [e for e in events if e.WhichOneof("event") == "match_abandoned"]
    assert [e.match_abandoned.reason for e in abandoned] == ["left"]
    assert events[-1].match_ended.status == common_pb2.ABANDONED
    again = await refusal(client.leave(match.match_id, ann.token))
    assert (again.code, again.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "match_over")


async def test_add_bot_checks_its_input_and_marks_the_seat(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    match = await client.create(3, seed=9)
    added = await client.add_bot(match.match_id, seat=2)
    assert added.seats[2].bot and added.seats[2].taken and added.seats[2].bot_level == "random"
    taken = await refusal(client.add_bot(match.match_id, seat=2))
    assert (taken.code, taken.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "seat_taken")
    outside = await refusal(client.add_bot(match.match_id, seat=3))
    assert (outside.code, outside.field) == (grpc.StatusCode.INVALID_ARGUMENT, "seat")
    level = await refusal(client.add_bot(match.match_id, level="genius"))
    assert (level.code, level.field) == (grpc.StatusCode.INVALID_ARGUMENT, "level")
    ann = await client.join(match.match_id, "ann")
    assert ann.seat == 0
    full = await client.add_bot(match.match_id)
    assert full.status == common_pb2.IN_PROGRESS and [s.bot for s in full.seats] == [False, True, True]
    again = await refusal(client.add_bot(match.match_id))
    assert again.reason == "match_full"


async def test_bot_seats_at_creation_play_a_whole_match(lifecycle_cluster):
    client = client_of(lifecycle_cluster)
    table = common_pb2.TableOptions(bot_seats=[0, 1, 2], bot_level="policy")
    match = await client.create(3, seed=10, table=table)
    assert [s.bot_level for s in match.seats] == ["policy"] * 3
    for _ in range(400):
        match = await client.match(match.match_id)
        if match.status != common_pb2.IN_PROGRESS:
            break
        await asyncio.sleep(0.05)
    assert match.status == common_pb2.FINISHED and match.version > 0
    bad = await refusal(client.create(2, table=common_pb2.TableOptions(bot_seats=[2])))
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "table.bot_seats")


async def test_the_bot_client_plays_next_to_server_bots(lifecycle_cluster):
    # Mori: a short game, so random play ends soon.
    client = lifecycle_cluster.client("mori")
    played = await play_match(client, 3, rng=random.Random(1), server_bots=2, bot_level="policy")
    assert played.finished and played.moves > 0
    match = await client.match(played.match_id)
    assert [s.bot for s in match.seats] == [False, True, True]
    assert match.version > played.moves  # the server's bots moved too
