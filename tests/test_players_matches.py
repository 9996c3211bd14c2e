"""Seats that belong to players, through a real gateway to every game and a real players
service process: a JoinMatch with a session binds the seat, the player gets it again from
another device, never two seats of one match; ListMyMatches and WatchMyTurns follow each
game's matches, the activity stream carries their notices, timeouts included."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from mogames.common.v1 import common_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc
from mogames.players.v1 import players_pb2, players_pb2_grpc

from clients.game_client import GameClient
from services.catalog import rules_module
from services.runtime import keys
from services.runtime.auth import SESSION_METADATA, issue_session
from services.runtime.store import MatchStore
from tests.conftest import TOKEN_SECRET, available_games, running_services
from tests.helpers import refusal, wait_serving, wait_until
from tests.players_fixtures import running_players

SERVICE = "mogames.players.v1.Players"
KIND = {v: k.removeprefix("TURN_NOTICE_KIND_").lower() for k, v in players_pb2.TurnNoticeKind.items()}


@dataclass
class World:
    gateway: grpc.aio.Channel
    players: players_pb2_grpc.PlayersStub


@pytest.fixture(scope="module")
async def world(redis_url, tmp_path_factory) -> AsyncIterator[World]:
    log = tmp_path_factory.mktemp("players") / "players.log"
    with running_players(redis_url, log) as address:
        async with running_services(redis_url, players_backends=(address,)) as cluster:
            await wait_serving(cluster.gateway, SERVICE)
            yield World(cluster.gateway, players_pb2_grpc.PlayersStub(cluster.gateway))


@dataclass
class Player:
    session: players_pb2.Session
    stub: players_pb2_grpc.PlayersStub
    notices: list[players_pb2.TurnNotice] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session.player_id

    @property
    def token(self) -> str:
        return self.session.session_token

    def bearer(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")]

    async def my_matches(self, **request: Any) -> list[players_pb2.MyMatch]:
        reply = await self.stub.ListMyMatches(
            players_pb2.ListMyMatchesRequest(**request), metadata=self.bearer()
        )
        return list(reply.matches)

    async def my_match(self, match_id: str) -> players_pb2.MyMatch | None:
        return next((m for m in await self.my_matches(page_size=100) if m.match.match_id == match_id), None)

    def told(self, kind: str, match_id: str) -> list[players_pb2.TurnNotice]:
        return [n for n in self.notices if KIND[n.kind] == kind and n.match.match.match_id == match_id]


async def sign_in(world: World, name: str) -> Player:
    request = players_pb2.SignInGuestRequest(
        device_id=f"device-{secrets.token_hex(8)}", device_secret=secrets.token_hex(12), display_name=name
    )
    signed = await world.players.SignInGuest(request)
    return Player(signed.session, world.players)


@contextlib.asynccontextmanager
async def watching(player: Player) -> AsyncIterator[None]:
    """The player's WatchMyTurns, collecting notices into ``player.notices`` while the block runs."""
    call = player.stub.WatchMyTurns(players_pb2.WatchMyTurnsRequest(), metadata=player.bearer())
    first = await asyncio.wait_for(call.read(), 10)
    assert first.WhichOneof("event") == "heartbeat"  # subscribed: nothing is missed from here

    async def read() -> None:
        while (reply := await call.read()) is not grpc.aio.EOF:
            if reply.WhichOneof("event") == "notice":
                player.notices.append(reply.notice)

    reader = asyncio.create_task(read())
    try:
        yield
    finally:
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await reader


async def play_humans(
    client: GameClient, match_id: str, tokens: dict[int, str], until: Any, moves: int = 60
) -> None:
    """The human seats play a random legal move (seeded) whenever they have a decision (bots
    play themselves) until ``until()`` holds or the match is over."""
    choose = random.Random(match_id).choice
    for _ in range(moves):
        if await until():
            return
        match = await client.match(match_id)
        if match.status != common_pb2.IN_PROGRESS:
            return
        mine = [s for s in match.active_seats if s in tokens]
        if not mine:
            await asyncio.sleep(0.1)
            continue
        legal = await client.legal_moves(match_id, tokens[mine[0]])
        if legal.moves:
            with contextlib.suppress(grpc.aio.AioRpcError):  # a bot's move may come first
                await client.submit(
                    match_id, tokens[mine[0]], choose(legal.moves), expected_version=legal.version
                )


async def activity_of(redis_client: Any, game: str, match_id: str) -> list[dict[str, str]]:
    entries = await redis_client.xrange(keys.activity(game))
    decoded = [{k.decode(): v.decode() for k, v in fields.items()} for _, fields in entries]
    return [e for e in decoded if e["match_id"] == match_id]


@pytest.mark.parametrize("game", available_games())
async def test_my_matches_and_turn_notices_follow_a_match_of_every_game(world, redis_client, game):
    info = rules_module(game).GAME
    client = GameClient(world.gateway, game)
    ann, ben = await sign_in(world, "Ann"), await sign_in(world, "Ben")
    bots = list(range(2, info.min_players))
    async with watching(ann), watching(ben):
        created = await client.create(info.min_players, seed=7, table={"bot_seats": bots})
        match_id = created.match_id
        waiting = await ann.my_match(match_id)
        assert waiting is None  # creating is not sitting down
        joined_ann = await client.join(match_id, "Ann", session=ann.token)
        await wait_until(
            lambda: _listed_as(ann, match_id, "WAITING_FOR_PLAYERS"), "Ann's waiting match listed", 10
        )
        joined_ben = await client.join(match_id, "Ben", session=ben.token)
        seats = {ann.id: joined_ann.seat, ben.id: joined_ben.seat}
        tokens = {joined_ann.seat: joined_ann.token, joined_ben.seat: joined_ben.token}
        for player in (ann, ben):
            await wait_until(
                lambda p=player: _notice(p, "match_started", match_id), f"{game}: match_started told", 10
            )

        async def ann_told_her_turn_twice() -> bool:
            return len(ann.told("your_turn", match_id)) >= 2

        await play_humans(client, match_id, tokens, ann_told_her_turn_twice)
        match = await client.match(match_id)
        for player in (ann, ben):
            for notice in player.told("your_turn", match_id):
                # Each notice says the player had a decision at that version.
                assert notice.match.seat == seats[player.id] and notice.match.your_turn
                assert seats[player.id] in notice.match.match.active_seats
                assert notice.notice_id == f"{match_id}:{notice.match.match.version}:your_turn:{player.id}"
        if match.status == common_pb2.IN_PROGRESS:
            assert len(ann.told("your_turn", match_id)) >= 2, f"{game}: Ann was told her turns"

        async def index_current() -> bool:
            now = await client.match(match_id)
            listed = await ann.my_match(match_id)
            return (
                listed is not None
                and listed.match.version == now.version
                and list(listed.match.active_seats) == list(now.active_seats)
            )

        await wait_until(index_current, f"{game}: Ann's index at the match's version", 10)
        listed = await ann.my_match(match_id)
        assert listed.game == game and listed.seat == seats[ann.id]
        assert listed.your_turn == (seats[ann.id] in listed.match.active_seats)
        assert listed.match.seats[seats[ann.id]].player_name == "Ann"
        if listed.your_turn:
            turns = await ann.my_matches(your_turn_only=True, page_size=100)
            assert match_id in [m.match.match_id for m in turns]
    entries = await activity_of(redis_client, game, match_id)
    started = [e for e in entries if e["notice"] == "match_started"]
    assert len(started) == 1
    expected_players = ["" for _ in range(info.min_players)]
    expected_players[seats[ann.id]], expected_players[seats[ben.id]] = ann.id, ben.id
    assert json.loads(started[0]["players"]) == expected_players
    assert json.loads(started[0]["bots"]) == bots
    turn_entries = [e for e in entries if e["notice"] == "your_turn"]
    assert turn_entries and all(e["status"] == "IN_PROGRESS" for e in turn_entries)
    # No entry repeats a version's notice (a seat keeping the turn is not told again).
    assert len({(e["version"], e["notice"]) for e in entries}) == len(entries)


async def _listed_as(player: Player, match_id: str, status: str) -> bool:
    listed = await player.my_match(match_id)
    return listed is not None and common_pb2.MatchStatus.Name(listed.match.status) == status


async def _notice(player: Player, kind: str, match_id: str) -> bool:
    return bool(player.told(kind, match_id))


async def test_a_player_gets_their_seat_again_from_another_device_and_never_two_seats(world):
    client = GameClient(world.gateway, "happy_mochi")
    ann = await sign_in(world, "Ann")
    created = await client.create(3)
    first = await client.join(created.match_id, "Ann", session=ann.token)
    # Another device of the same player: a session of its own (here: refreshed).
    refreshed = await world.players.RefreshSession(
        players_pb2.RefreshSessionRequest(refresh_token=ann.session.refresh_token)
    )
    again = await client.join(created.match_id, "Ann's phone", session=refreshed.session.session_token)
    assert again.seat == first.seat and again.token != first.token
    match = await client.match(created.match_id)
    assert [s.taken for s in match.seats] == [True, False, False]  # still one seat
    # The older device's token is revoked (as after RejoinMatch); the new one plays.
    revoked = await refusal(client.view(created.match_id, first.token))
    assert (revoked.code, revoked.reason) == (grpc.StatusCode.UNAUTHENTICATED, "token_revoked")
    assert (await client.view(created.match_id, again.token)).seat == first.seat
    other = await client.join(created.match_id, "Anonymous")
    assert other.seat != first.seat
    # A session that does not verify is refused, not ignored.
    expired = issue_session(TOKEN_SECRET, ann.id, int(time.time() * 1000) - 1)
    stale = await refusal(client.join(created.match_id, "Ann", session=expired))
    assert (stale.code, stale.reason) == (grpc.StatusCode.UNAUTHENTICATED, "session_expired")
    forged = await refusal(client.join(created.match_id, "Ann", session=f"s1.{ann.id}.9999999999999.AAAA"))
    assert (forged.code, forged.reason) == (grpc.StatusCode.UNAUTHENTICATED, "bad_session")


async def test_a_timed_out_turn_is_told_and_a_correspondence_clock_runs_for_days(world, redis_client):
    client = GameClient(world.gateway, "happy_mochi")
    ann, ben = await sign_in(world, "Ann"), await sign_in(world, "Ben")
    async with watching(ann), watching(ben):
        # The first timeout ends the match: no bots play on in the tests' Redis after it.
        timed = {"turn_seconds": 1, "max_timeouts": 1, "on_timeouts": "SEAT_POLICY_ABANDON"}
        created = await client.create(2, table=timed)
        for player in (ann, ben):
            await client.join(created.match_id, "P", session=player.token)

        async def timed_out() -> bool:
            return any(n.told("timed_out", created.match_id) for n in (ann, ben))

        await wait_until(timed_out, "a timed_out notice", 15)
    entries = await activity_of(redis_client, "happy_mochi", created.match_id)
    timeouts = [e for e in entries if e["notice"] == "timed_out"]
    assert timeouts and len(json.loads(timeouts[0]["seats"])) == 1
    told = [n for p in (ann, ben) for n in p.told("timed_out", created.match_id)]
    assert told[0].match.seat == json.loads(timeouts[0]["seats"])[0]

    three_days, bank = 3 * 24 * 3600, 24 * 3600
    slow = await client.create(2, table={"turn_seconds": three_days, "bank_seconds": bank})
    for player in (ann, ben):
        await client.join(slow.match_id, "P", session=player.token)
    started_ms = time.time() * 1000

    async def deadline_listed() -> bool:
        mine = [m for p in (ann, ben) if (m := await p.my_match(slow.match_id)) is not None and m.your_turn]
        return bool(mine) and mine[0].your_deadline_unix_ms > 0

    await wait_until(deadline_listed, "the correspondence clock in ListMyMatches", 10)
    mine = [m for p in (ann, ben) if (m := await p.my_match(slow.match_id)) is not None and m.your_turn]
    expected = started_ms + (three_days + bank) * 1000
    assert abs(mine[0].your_deadline_unix_ms - expected) < 60_000


async def test_a_correspondence_match_outlives_the_idle_limit_an_untimed_one_does_not(redis_url):
    async with running_services(
        redis_url, games=["morisi"], abandon_after_s=2, scheduler_tick_ms=50
    ) as cluster:
        client = cluster.client("morisi")
        timed = await client.create(2, table={"turn_seconds": 3600})
        untimed = await client.create(2)
        for match in (timed, untimed):
            for n in range(2):
                await client.join(match.match_id, f"p{n}")

        async def untimed_abandoned() -> bool:
            return (await client.match(untimed.match_id)).status == common_pb2.ABANDONED

        await wait_until(untimed_abandoned, "the untimed match abandoned as idle", 15)
        assert (await client.match(timed.match_id)).status == common_pb2.IN_PROGRESS


async def test_list_my_matches_pages_through_every_match(world):
    client = GameClient(world.gateway, "happy_mochi")
    ann = await sign_in(world, "Ann")
    made = []
    for _ in range(5):
        created = await client.create(2)
        await client.join(created.match_id, "Ann", session=ann.token)
        made.append(created.match_id)

    async def all_listed() -> bool:
        return len(await ann.my_matches(page_size=100)) == 5

    await wait_until(all_listed, "five matches listed", 10)
    seen, token = [], ""
    while True:
        page = await ann.stub.ListMyMatches(
            players_pb2.ListMyMatchesRequest(page_size=2, page_token=token), metadata=ann.bearer()
        )
        assert len(page.matches) <= 2
        seen += [m.match.match_id for m in page.matches]
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted(made)
    updated = [m.updated_unix_ms for m in await ann.my_matches(page_size=100)]
    assert updated == sorted(updated, reverse=True)
    waiting = await ann.my_matches(status=common_pb2.WAITING_FOR_PLAYERS, page_size=100)
    assert len(waiting) == 5
    assert await ann.my_matches(status=common_pb2.IN_PROGRESS) == []
    bad = await refusal(
        ann.stub.ListMyMatches(players_pb2.ListMyMatchesRequest(page_token="x"), metadata=ann.bearer())
    )
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "page_token")


async def test_find_match_with_sessions_seats_the_players(world):
    ann, ben = await sign_in(world, "Ann"), await sign_in(world, "Ben")
    lobby = lobby_pb2_grpc.LobbyStub(world.gateway)

    async def find(player: Player) -> lobby_pb2.FindMatchResponse:
        request = lobby_pb2.FindMatchRequest(
            game="momiji", players=2, player_name="P", ticket_id=f"t-{player.id}", wait_seconds=20
        )
        return await lobby.FindMatch(request, metadata=[(SESSION_METADATA, player.token)])

    found_ann, found_ben = await asyncio.gather(find(ann), find(ben))
    match_id = found_ann.joined.match.match_id
    assert found_ben.joined.match.match_id == match_id
    for player, found in ((ann, found_ann), (ben, found_ben)):

        async def listed(p: Player = player) -> bool:
            return await p.my_match(match_id) is not None

        await wait_until(listed, "the matchmade match listed", 10)
        assert (await player.my_match(match_id)).seat == found.joined.seat
    expired = issue_session(TOKEN_SECRET, ann.id, int(time.time() * 1000) - 1)
    refused = await refusal(
        lobby.FindMatch(
            lobby_pb2.FindMatchRequest(game="momiji", players=2, player_name="P", wait_seconds=1),
            metadata=[(SESSION_METADATA, expired)],
        )
    )
    assert (refused.code, refused.reason) == (grpc.StatusCode.UNAUTHENTICATED, "session_expired")


async def test_leaving_a_waiting_match_and_deleting_the_player_take_it_off_the_index(world, redis_client):
    client = GameClient(world.gateway, "happy_mochi")
    ann, ben = await sign_in(world, "Ann"), await sign_in(world, "Ben")
    left = await client.create(2)
    joined = await client.join(left.match_id, "Ann", session=ann.token)
    await wait_until(lambda: _listed_as(ann, left.match_id, "WAITING_FOR_PLAYERS"), "listed", 10)
    await client.leave(left.match_id, joined.token)

    async def unlisted() -> bool:
        return await ann.my_match(left.match_id) is None

    await wait_until(unlisted, "the left match off Ann's index", 10)
    kept = await client.create(2)
    await client.join(kept.match_id, "Ben", session=ben.token)
    await wait_until(lambda: _listed_as(ben, kept.match_id, "WAITING_FOR_PLAYERS"), "listed", 10)
    await world.players.DeletePlayer(players_pb2.DeletePlayerRequest(), metadata=ben.bearer())
    assert not await redis_client.exists(keys.player_matches(ben.id), keys.player_match_facts(ben.id))
    # The session Ben still holds, though signed and unexpired, takes no seat any more.
    another = await client.create(2)
    refused = await refusal(client.join(another.match_id, "Ben", session=ben.token))
    assert (refused.code, refused.reason) == (grpc.StatusCode.UNAUTHENTICATED, "player_deleted")
    assert not (await client.match(another.match_id)).seats[0].taken
    find = lobby_pb2.FindMatchRequest(game="happy_mochi", players=2, player_name="Ben", ticket_id="ben-after")
    lobby = lobby_pb2_grpc.LobbyStub(world.gateway)
    queued = await refusal(lobby.FindMatch(find, metadata=[(SESSION_METADATA, ben.token)], timeout=10))
    assert (queued.code, queued.reason) == (grpc.StatusCode.UNAUTHENTICATED, "player_deleted")
    # The match still stored no longer names Ben nor holds his id.
    match = await client.match(kept.match_id)
    assert [s.player_name for s in match.seats if s.taken] == ["deleted player"]
    record = await MatchStore(redis_client, "happy_mochi").load(kept.match_id)
    assert ben.id not in json.dumps(record.lifecycle)
    await client.join(kept.match_id, "Ann", session=ann.token)  # a commit of Ben's match
    await wait_until(lambda: _listed_as(ann, kept.match_id, "IN_PROGRESS"), "Ann's match listed", 10)
    # The deleted player is not indexed again, nor named in the activity stream.
    assert not await redis_client.exists(keys.player_matches(ben.id), keys.player_match_facts(ben.id))
    entries = await activity_of(redis_client, "happy_mochi", kept.match_id)
    assert entries and all(ben.id not in e["players"] for e in entries)


async def test_every_stream_of_a_player_shares_one_subscription(world, redis_client):
    ann = await sign_in(world, "Ann")
    phone, tablet = Player(ann.session, ann.stub), Player(ann.session, ann.stub)

    async def subscriptions() -> int:
        counted: int = (await redis_client.pubsub_numsub(keys.player_turns(ann.id)))[0][1]
        return counted

    async with watching(phone), watching(tablet):
        assert await subscriptions() == 1
        client = GameClient(world.gateway, "happy_mochi")
        created = await client.create(2)
        await client.join(created.match_id, "Ann", session=ann.token)
        await client.join(created.match_id, "Anonymous")
        for device in (phone, tablet):
            await wait_until(
                lambda d=device: _notice(d, "match_started", created.match_id), "told on each", 10
            )

    async def released() -> bool:
        return await subscriptions() == 0

    await wait_until(released, "the subscription given back", 10)


async def test_lifecycle_commits_are_told_a_leave_that_abandons_ends_the_match_for_everyone(
    world, redis_client
):
    client = GameClient(world.gateway, "mori")
    ann, ben = await sign_in(world, "Ann"), await sign_in(world, "Ben")
    async with watching(ann), watching(ben):
        created = await client.create(3, table={"on_leave": "SEAT_POLICY_ABANDON", "bot_seats": [2]})
        joined = await client.join(created.match_id, "Ann", session=ann.token)
        await client.join(created.match_id, "Ben", session=ben.token)
        await wait_until(lambda: _notice(ben, "match_started", created.match_id), "started", 10)
        await client.leave(created.match_id, joined.token)
        for player in (ann, ben):
            await wait_until(lambda p=player: _notice(p, "match_ended", created.match_id), "ended told", 10)
            ended = player.told("match_ended", created.match_id)[0]
            assert ended.match.match.status == common_pb2.ABANDONED and not ended.match.your_turn
    entries = await activity_of(redis_client, "mori", created.match_id)
    assert [e["status"] for e in entries if e["notice"] == "match_ended"] == ["ABANDONED"]
    assert (await ben.my_match(created.match_id)).match.status == common_pb2.ABANDONED


async def test_a_player_holds_seats_in_at_most_the_capped_number_of_live_matches(world, redis_url):
    ann = await sign_in(world, "Ann")
    async with running_services(redis_url, games=["happy_mochi"], max_matches_per_player=2) as capped:
        client = capped.client("happy_mochi")
        # The first ends ABANDONED when its other player leaves: its place is given back.
        first = await client.create(2, table={"on_leave": common_pb2.SEAT_POLICY_ABANDON})
        second = await client.create(2)
        for created in (first, second):
            await client.join(created.match_id, "Ann", session=ann.token)

        async def listed(count: int) -> bool:
            live = [m for m in await ann.my_matches(page_size=100) if m.match.status in LIVE]
            return len(live) == count

        await wait_until(lambda: listed(2), "both matches live in Ann's index", 10)
        third = await client.create(2)
        refused = await refusal(client.join(third.match_id, "Ann", session=ann.token))
        assert (refused.code, refused.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "player_matches")
        assert not (await client.match(third.match_id)).seats[0].taken, "the refused join took no seat"
        await client.join(third.match_id, "guest")  # an anonymous seat is no player's match

        ben = await client.join(first.match_id, "Ben")
        await client.leave(first.match_id, ben.token)
        assert (await client.match(first.match_id)).status == common_pb2.ABANDONED
        await wait_until(lambda: listed(1), "the abandoned match off Ann's live matches", 10)
        fourth = await client.create(2)
        joined = await client.join(fourth.match_id, "Ann", session=ann.token)
        assert joined.token


LIVE = (common_pb2.WAITING_FOR_PLAYERS, common_pb2.IN_PROGRESS)
