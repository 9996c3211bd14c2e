"""Seats you can trust, through the gateway and two replicas on real Redis: a request id is
no key to a seat, a revoked token's open streams end at once and hear nothing more of the
seat, and a watcher keeping its cursor as the README's loop does sees every lifecycle
event and the end of the match."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest
from mogames.common.v1 import common_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from clients.game_client import GameClient
from deploy.redis_server import running_redis
from tests.conftest import running_services
from tests.helpers import refusal, wait_until

GAME = "happy_mochi"
ABANDON = common_pb2.SeatPolicy.SEAT_POLICY_ABANDON
REVOKED = (grpc.StatusCode.UNAUTHENTICATED, "token_revoked")


@pytest.fixture(scope="module")
async def trust_cluster():
    with running_redis() as url:
        async with running_services(
            url, [GAME], gateways=1, bot_think_ms=0, scheduler_tick_ms=50, scheduler_lease_ms=1000
        ) as cluster:
            yield cluster


async def started(client: GameClient, players: int = 2, seed: int = 3, **table: Any) -> tuple[str, dict]:
    """A started match and each seat's JoinMatch answer."""
    match = await client.create(players, seed=seed, table=common_pb2.TableOptions(**table))
    joins = [await client.join(match.match_id, f"p{n}") for n in range(players)]
    return match.match_id, {j.seat: j for j in joins}


# -- request ids -------------------------------------------------------------------------


async def test_a_retried_join_gets_no_token_once_the_seat_was_rejoined_or_left(trust_cluster):
    client = trust_cluster.client(GAME)
    match = await client.create(4, seed=4)
    ann = await client.join(match.match_id, "ann", request_id="ann-1")
    retried = await client.join(match.match_id, "ann", request_id="ann-1")
    assert (retried.seat, retried.token) == (ann.seat, ann.token), "a moment later, the same answer"
    # A rejoin revokes the seat's tokens: the request id now seats nobody in it.
    await client.rejoin(match.match_id, ann.rejoin_key)
    again = await client.join(match.match_id, "ann", request_id="ann-1")
    assert again.seat != ann.seat and again.token != ann.token
    # A leave frees the seat: the same request id is then a new join, with a new token.
    bob = await client.join(match.match_id, "bob", request_id="bob-1")
    await client.leave(match.match_id, bob.token)
    fresh = await client.join(match.match_id, "bob", request_id="bob-1")
    assert fresh.token not in (bob.token, again.token)
    refused = await refusal(client.view(match.match_id, bob.token))
    assert (refused.code, refused.reason) == REVOKED


async def test_a_match_full_of_rejoined_seats_answers_an_old_request_id_with_no_token(trust_cluster):
    client = trust_cluster.client(GAME)
    match = await client.create(2, seed=5)
    ann = await client.join(match.match_id, "ann", request_id="ann-2")
    await client.join(match.match_id, "bob", request_id="bob-2")
    await client.rejoin(match.match_id, ann.rejoin_key)
    refused = await refusal(client.join(match.match_id, "ann", request_id="ann-2"))
    assert (refused.code, refused.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "match_full")


async def test_matchmaking_request_ids_cannot_be_derived_from_a_ticket(trust_cluster):
    lobby = lobby_pb2_grpc.LobbyStub(trust_cluster.gateways[0])

    async def find(ticket: str) -> common_pb2.JoinMatchResponse:
        request = lobby_pb2.FindMatchRequest(
            game=GAME, players=2, player_name=ticket, ticket_id=ticket, wait_seconds=30
        )
        return (await lobby.FindMatch(request, timeout=60)).joined

    alice, bob = await asyncio.gather(find("alice-ticket-1"), find("bob-ticket-1"))
    match_id = alice.match.match_id
    assert bob.match.match_id == match_id and {alice.seat, bob.seat} == {0, 1}
    client = trust_cluster.client(GAME)
    for guess in ("mm:alice-ticket-1", "mm:bob-ticket-1", "alice-ticket-1"):
        refused = await refusal(client.join(match_id, "bob", request_id=guess))
        assert (refused.code, refused.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "match_full"), guess


# -- revocation --------------------------------------------------------------------------


class OpenStreams:
    """A WatchMatch and a PlayMatch of one token, read in the background: what each got and
    how (and when) it ended."""

    def __init__(self, client: GameClient, match_id: str, token: str) -> None:
        self.events: dict[str, list[Any]] = {"watch": [], "play": []}
        self.ended: dict[str, tuple[grpc.StatusCode, float]] = {}
        self.watch = client.watch(match_id, token, timeout_s=60)
        self.tasks = [asyncio.create_task(self._read("watch", self.watch))]
        self.client, self.match_id, self.token = client, match_id, token

    async def open_play(self) -> None:
        call = await self.client.play(self.match_id, self.token)
        self.play = call
        self.tasks.append(asyncio.create_task(self._read("play", call, many=True)))

    async def _read(self, name: str, call: Any, many: bool = False) -> None:
        try:
            async for item in call:
                self.events[name] += list(item.events) if many else [item]
        except grpc.aio.AioRpcError as error:
            reason = (await refusal(_raise(error))).reason
            self.ended[name] = (error.code(), time.monotonic())
            self.events[name].append(reason)
        else:
            self.ended[name] = (grpc.StatusCode.OK, time.monotonic())

    async def until_history(self, kind: str) -> None:
        """Until both streams got an event of ``kind``."""

        async def got_it() -> bool:
            return all(any(_kind(e) == kind for e in got) for got in self.events.values())

        await wait_until(got_it, kind)

    async def ended_within(self, seconds: float, since: float) -> None:
        async with asyncio.timeout(10):
            await asyncio.gather(*self.tasks)
        for name, (code, at) in self.ended.items():
            assert (code, self.events[name][-1]) == REVOKED, name
            assert at - since < seconds, f"{name} ended {at - since:.2f} s after the revocation"


async def _raise(error: Exception) -> None:
    raise error


def _kind(event: Any) -> str:
    return "" if isinstance(event, str) else str(event.WhichOneof("event"))


def _positions(events: list[Any]) -> list[tuple[int, int]]:
    return [(e.version, e.seq) for e in events if not isinstance(e, str) and e.seq]


async def _history(client: GameClient, match_id: str, until: str) -> list[Any]:
    """The match's public history from its start, up to the first event ``until``."""
    seen = []
    async with asyncio.timeout(20):
        async for event in client.watch(match_id):
            if event.seq:
                seen.append(event)
            if _kind(event) == until:
                return seen
    raise AssertionError(f"no {until} in the history")


async def test_a_rejoin_ends_the_old_tokens_open_streams_at_once(trust_cluster):
    client = trust_cluster.client(GAME)
    match_id, joins = await started(client)
    streams = OpenStreams(client, match_id, joins[0].token)
    await streams.open_play()
    await streams.until_history("match_started")
    since = time.monotonic()
    other = GameClient(trust_cluster.replicas[GAME][1], GAME)  # another replica
    rejoined = await other.rejoin(match_id, joins[0].rejoin_key)
    await streams.ended_within(1.0, since)
    rejoin_at = _positions(await _history(client, match_id, "player_rejoined"))[-1]
    for name, got in streams.events.items():
        assert all(p < rejoin_at for p in _positions(got)), f"{name} got an event after the rejoin"
        assert not any(_kind(e) == "player_rejoined" for e in got), name
    # The new token plays on.
    assert (await client.view(match_id, rejoined.token)).seat == 0


async def test_a_leave_ends_the_streams_before_the_bot_gets_a_private_card(trust_cluster):
    client = trust_cluster.client(GAME)
    match_id, joins = await started(client, seed=7)
    leaver = joins[0]
    streams = OpenStreams(client, match_id, leaver.token)
    await streams.open_play()
    await streams.until_history("match_started")
    since = time.monotonic()
    await client.leave(match_id, leaver.token)
    await streams.ended_within(1.0, since)
    # Seat 1 leaves too: the bots play the match to its end, seat 0's dealt its cards.
    await client.leave(match_id, joins[1].token)
    await _history(client, match_id, "match_ended")
    left_at = _positions(await _history(client, match_id, "player_left"))[-1]
    for name, got in streams.events.items():
        assert all(p < left_at for p in _positions(got)), f"{name} got an event after the leave"
        kinds = {_kind(e) for e in got}
        assert not kinds & {"bot_seated", "player_left"}, name
        assert all(e.version == 0 for e in got if not isinstance(e, str) and _kind(e) == "prompt"), name
    for call in (client.view(match_id, leaver.token), client.legal_moves(match_id, leaver.token)):
        refused = await refusal(call)
        assert (refused.code, refused.reason) == REVOKED


async def test_timeouts_handing_the_seat_to_a_bot_end_its_streams(trust_cluster):
    client = trust_cluster.client(GAME)
    match_id, joins = await started(client, seed=9, turn_seconds=1, max_timeouts=1)
    active = (await client.match(match_id)).active_seats[0]
    streams = OpenStreams(client, match_id, joins[active].token)
    await streams.open_play()
    await streams.until_history("match_started")

    async def both_ended() -> bool:
        return streams.ended.keys() >= {"watch", "play"}

    await wait_until(both_ended, "the streams' end")
    history = await _history(client, match_id, "bot_seated")
    seated_at = _positions(history[-1:])[0]
    for name, got in streams.events.items():
        assert got[-1] == "token_revoked", name
        assert all(p < seated_at for p in _positions(got)), f"{name} got an event after the bot took the seat"


# -- the cursor --------------------------------------------------------------------------


async def readme_loop(
    client: GameClient, match_id: str, token: str | None, cursor: dict, reconnect_after: str
) -> list:
    """The README's watch loop (the cursor from what it received only), reconnecting once
    after an event ``reconnect_after``; every event kind it saw, until ``match_ended``."""
    kinds: list[str] = []
    reconnected = False
    async with asyncio.timeout(60):
        while True:
            stream = client.watch(match_id, token, **cursor, timeout_s=30)
            async for event in stream:
                kind = _kind(event)
                if event.seq:
                    cursor = {"after_version": event.version, "after_seq": event.seq}
                    kinds.append(kind)
                if kind == "match_ended":
                    return kinds
                if kind == reconnect_after and not reconnected:
                    reconnected = True
                    stream.cancel()
                    break
            else:
                raise AssertionError(f"the stream closed without match_ended after {kinds}")


async def test_a_leave_that_abandons_reaches_a_watcher_from_after_version_0(trust_cluster):
    client = trust_cluster.client(GAME)
    match_id, joins = await started(client, on_leave=ABANDON)
    watcher = asyncio.create_task(
        readme_loop(client, match_id, joins[1].token, {"after_version": 0}, "player_left")
    )
    await asyncio.sleep(0.3)
    await client.leave(match_id, joins[0].token)
    kinds = await watcher
    assert kinds[-3:] == ["player_left", "match_abandoned", "match_ended"]
    # The leaver's token answers nothing of the seat, its rejoin key nothing either.
    for call in (client.view(match_id, joins[0].token), client.legal_moves(match_id, joins[0].token)):
        assert ((refused := await refusal(call)).code, refused.reason) == REVOKED
    refused = await refusal(client.rejoin(match_id, joins[0].rejoin_key))
    assert (refused.code, refused.reason) == (grpc.StatusCode.UNAUTHENTICATED, "bad_rejoin_key")
    # A watch opened after the end, from any cursor, ends with match_ended too.
    for cursor in ({}, {"after_version": 0}, {"after_version": 0, "after_seq": 10**6}):
        events = [e async for e in client.watch(match_id, joins[1].token, **cursor)]
        assert _kind(events[-1]) == "match_ended", cursor


async def test_a_watcher_sees_every_seat_change_and_the_end(trust_cluster):
    client = trust_cluster.client(GAME)
    match_id, joins = await started(client, players=3, seed=11)
    watcher = asyncio.create_task(readme_loop(client, match_id, None, {}, "player_rejoined"))
    await asyncio.sleep(0.3)
    rejoined = await client.rejoin(match_id, joins[1].rejoin_key)
    # Every seat leaves to a bot in turn: the bots play the match to its end.
    for token in (joins[0].token, rejoined.token, joins[2].token):
        await client.leave(match_id, token)
    kinds = await asyncio.wait_for(watcher, 60)
    assert kinds.index("player_rejoined") < kinds.index("player_left") < kinds.index("bot_seated")
    assert kinds.count("bot_seated") == 3 and kinds[-1] == "match_ended"


# -- presence ----------------------------------------------------------------------------


async def test_presence_is_in_the_seats_and_told_to_the_table_and_a_grace_hands_the_seat_over(trust_cluster):
    client = trust_cluster.client(GAME)
    match_id, joins = await started(client, seed=13, reconnect_grace_seconds=1)
    # Seat 0 watches, then its stream drops; seat 1 never connects (no grace runs for it).
    watch = client.watch(match_id, joins[0].token, timeout_s=30)
    await anext(aiter(watch))

    async def seat_0_connected() -> bool:
        return (await client.match(match_id)).seats[0].connected

    await wait_until(seat_0_connected, "seat 0 connected")
    seats = (await client.match(match_id)).seats
    assert (seats[0].disconnected_since_unix_ms, seats[1].connected) == (0, False)
    watch.cancel()
    dropped_ms = time.time() * 1000

    async def seat_0_handed_over() -> bool:
        return (await client.match(match_id)).seats[0].bot

    await wait_until(seat_0_handed_over, "the grace's end", timeout_s=10)
    seat = (await client.match(match_id)).seats[0]
    assert not seat.connected and seat.disconnected_since_unix_ms == 0  # a bot's seat
    events = await _history(client, match_id, "bot_seated")
    kinds = [(_kind(e), getattr(e, _kind(e))) for e in events]
    connections = [(k.seat, k.connected) for name, k in kinds if name == "seat_connection"]
    assert connections == [(0, True), (0, False)]
    left, seated = events[-2], events[-1]
    assert (left.player_left.seat, seated.bot_seated.seat, seated.bot_seated.reason) == (0, 0, "disconnected")
    # No sooner than the grace after the drop (give the clocks a tenth of a second).
    assert time.time() * 1000 - dropped_ms >= 900
    refused = await refusal(client.view(match_id, joins[0].token))
    assert (refused.code, refused.reason) == REVOKED


async def test_fourteen_hundred_streams_of_one_replica_opening_and_closing_at_once_each_count(trust_cluster):
    """More streams than the replica's Redis pool has connections open and close together:
    each is counted in and out all the same (the counts queue rather than run the pool out)."""
    client = trust_cluster.replica_client(GAME, 0)
    matches = await asyncio.gather(*(started(client, seed=100 + n) for n in range(700)))
    watches = [
        client.watch(match_id, j.token, timeout_s=120) for match_id, joins in matches for j in joins.values()
    ]
    await asyncio.gather(*(anext(aiter(watch)) for watch in watches))

    async def connected_seats() -> int:
        found = await asyncio.gather(*(client.match(match_id) for match_id, _ in matches))
        return sum(seat.connected for match in found for seat in match.seats)

    async def all_connected() -> bool:
        return await connected_seats() == len(watches)

    await wait_until(all_connected, "every seat counted in", timeout_s=60)
    for watch in watches:
        watch.cancel()

    async def none_connected() -> bool:
        return await connected_seats() == 0

    await wait_until(none_connected, "every seat counted out", timeout_s=60)
