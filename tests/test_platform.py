"""The common RPCs through the gateway: lifecycle, public facts, error codes, hidden information."""

from __future__ import annotations

import json

import grpc
from mogames.common.v1 import common_pb2
from mogames.happymochi.v1 import happymochi_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from services.runtime import keys
from tests.helpers import active_seat_move, events_before, refusal, start_match
from tests.test_concurrency import stored_events

GAME = "happy_mochi"


async def test_match_starts_when_last_seat_is_taken(cluster):
    client = cluster.client(GAME)
    match = await client.create(3, seed=5)
    assert match.status == common_pb2.WAITING_FOR_PLAYERS
    assert len(match.match_id) >= 20 and match.version == 0
    first = await client.join(match.match_id, "ann")
    second = await client.join(match.match_id, "bob")
    assert (first.seat, second.seat) == (0, 1)
    assert (await client.match(match.match_id)).status == common_pb2.WAITING_FOR_PLAYERS
    third = await client.join(match.match_id, "cid")
    assert third.match.status == common_pb2.IN_PROGRESS
    facts = await client.match(match.match_id)
    assert [s.player_name for s in facts.seats] == ["ann", "bob", "cid"]
    assert list(facts.active_seats) == [0]
    assert len({first.token, second.token, third.token}) == 3
    assert (await refusal(client.join(match.match_id, "dan"))).code == grpc.StatusCode.FAILED_PRECONDITION


async def test_each_accepted_move_raises_version_by_one(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=11)
    for expected in range(1, 6):
        seat, move, version = await active_seat_move(client, started)
        response = await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
        assert response.version == expected == version + 1
        assert all(e.version == expected for e in response.events)
    assert (await client.match(started.match_id)).version == 5


async def test_view_shows_own_hand_and_never_another_seats(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 3, seed=21)
    views = {seat: await client.view(started.match_id, token) for seat, token in started.tokens.items()}
    for seat, view in views.items():
        assert view.seat == seat
        assert len(view.hand) == view.hand_sizes[seat] > 0
        mine = {c.id for c in view.hand}
        for other, other_view in views.items():
            if other != seat:
                assert mine.isdisjoint({c.id for c in other_view.hand})
        text = str(view)
        assert "seed" not in text


async def test_events_with_secrets_reach_only_their_owner(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=3)
    seat, _move, _version = await active_seat_move(client, started)
    legal = await client.legal_moves(started.match_id, started.tokens[seat])
    deck_draws = [m for m in legal.moves if m.WhichOneof("kind") == "draw"]
    drawn_at = (await client.submit(started.match_id, started.tokens[seat], deck_draws[0])).version
    # One more move, so that every event of the draw precedes an event of a later version.
    place = (await client.legal_moves(started.match_id, started.tokens[seat])).moves[0]
    stop = (await client.submit(started.match_id, started.tokens[seat], place)).version
    other = 1 - seat
    # From the draw's first event on (after_seq 0 is before the first event of a version).
    by_other = await events_before(client.watch(started.match_id, started.tokens[other], drawn_at), stop)
    by_self = await events_before(client.watch(started.match_id, started.tokens[seat], drawn_at), stop)
    assert {e.version for e in by_self} == {e.version for e in by_other} == {drawn_at}
    # The drawer learns the card's identity; the other seat never does.
    private_text = "".join(str(e) for e in by_self)
    public_text = "".join(str(e) for e in by_other)
    hand = (await client.view(started.match_id, started.tokens[seat])).hand
    drawn = [c for c in hand if f"id: {c.id}\n" in private_text]
    assert len(drawn) == 1
    assert f"id: {drawn[0].id}\n" not in public_text
    assert len(by_self) > len(by_other)


async def test_error_codes(cluster):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=9)
    other = await start_match(client, 2, seed=9)
    seat, move, version = await active_seat_move(client, started)
    token = started.tokens[seat]
    idle = started.tokens[1 - seat]

    unknown = await refusal(client.match("no-such-match"))
    assert unknown.code == grpc.StatusCode.NOT_FOUND and "no-such-match" in unknown.details

    no_token = common_pb2.ListLegalMovesRequest(match_id=started.match_id)
    missing = await refusal(client.stub.ListLegalMoves(no_token))
    assert missing.code == grpc.StatusCode.UNAUTHENTICATED and "authorization" in missing.details
    forged = await refusal(client.view(started.match_id, token[:-3] + "abc"))
    assert forged.code == grpc.StatusCode.UNAUTHENTICATED
    foreign = await refusal(client.view(started.match_id, other.tokens[0]))
    assert foreign.code == grpc.StatusCode.PERMISSION_DENIED

    empty_move = await refusal(client.submit(started.match_id, token, happymochi_pb2.Move()))
    assert (empty_move.code, empty_move.field) == (grpc.StatusCode.INVALID_ARGUMENT, "move")
    bad_players = await refusal(client.create(9))
    assert bad_players.code == grpc.StatusCode.INVALID_ARGUMENT and "players" in bad_players.details
    bad_name = await refusal(client.join(started.match_id, ""))
    assert (bad_name.code, bad_name.field) == (grpc.StatusCode.INVALID_ARGUMENT, "player_name")

    not_turn = await refusal(client.submit(started.match_id, idle, move))
    assert (not_turn.code, not_turn.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "not_your_turn")
    stale = await refusal(client.submit(started.match_id, token, move, expected_version=version + 7))
    assert (stale.code, stale.field) == (grpc.StatusCode.ABORTED, "expected_version")
    # Stale is told before illegal: the idle seat's move with an old version is ABORTED.
    stale_and_idle = await refusal(client.submit(started.match_id, idle, move, expected_version=version + 1))
    assert (stale_and_idle.code, stale_and_idle.field) == (grpc.StatusCode.ABORTED, "expected_version")
    illegal = happymochi_pb2.Move(play_duo=happymochi_pb2.PlayDuo(position=40))
    broken = await refusal(client.submit(started.match_id, token, illegal))
    assert broken.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION)
    assert broken.reason or broken.field

    # None of the refusals changed anything.
    assert (await client.match(started.match_id)).version == version
    response = await client.submit(started.match_id, token, move, expected_version=version)
    assert response.version == version + 1


async def test_moves_refused_before_start_and_after_end(cluster):
    client = cluster.client(GAME)
    match = await client.create(2, seed=1)
    joined = await client.join(match.match_id, "solo")
    waiting = await refusal(client.submit(match.match_id, joined.token, happymochi_pb2.Move(pass_turn={})))
    assert (waiting.code, waiting.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "match_not_started")
    assert list((await client.legal_moves(match.match_id, joined.token)).moves) == []


async def test_finished_match_expires_and_refuses_moves(cluster, redis_client):
    from clients.bot import play_match

    client = cluster.client(GAME)
    played = await play_match(client, 2, seed=9)  # a short one
    facts = await client.match(played.match_id)
    assert facts.status == common_pb2.FINISHED and list(facts.winners)
    ttl = await redis_client.ttl(keys.match(played.match_id))
    assert 0 < ttl <= 600  # the finished TTL of the test settings
    for key in (keys.tail(played.match_id), keys.archive(played.match_id), keys.requests(played.match_id)):
        assert 0 < await redis_client.ttl(key) <= 600


async def test_every_accepted_move_reaches_the_game_stream(cluster, redis_client):
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=31)
    seat, move, version = await active_seat_move(client, started)
    await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    entries = await redis_client.xrevrange(keys.game_moves(GAME), count=200)
    mine = [f for _id, f in entries if f[b"match_id"].decode() == started.match_id]
    assert [int(f[b"version"]) for f in mine] == [version + 1]
    # Only what a spectator may see: the version's public events, never the move itself.
    stored = [e for e in await stored_events(redis_client, started.match_id) if e.version == version + 1]
    assert b"move" not in mine[0]
    assert json.loads(mine[0][b"events"]) == [e.body for e in stored if e.to is None]


async def test_lobby_lists_every_game(cluster):
    lobby = lobby_pb2_grpc.LobbyStub(cluster.gateway)
    games = {g.name: g for g in (await lobby.ListGames(lobby_pb2.ListGamesRequest())).games}
    assert games[GAME].service == "mogames.happymochi.v1.HappyMochi"
    assert (games[GAME].min_players, games[GAME].max_players) == (2, 6)


async def test_consumer_groups_share_the_game_feed_without_overlap(cluster, redis_client):
    from clients.move_feed import consume, ensure_group

    game = "mori"
    client = cluster.client(game)
    started = await start_match(client, 3, seed=64)
    group = f"test-{started.match_id}"
    await ensure_group(redis_client, game, group, start="$")
    for _ in range(6):
        seat, move, version = await active_seat_move(client, started)
        await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    first = []
    async for entry in consume(redis_client, game, group, "a", block_ms=100, batch=1):
        first.append(entry)
        if len(first) == 2:
            break
    rest = [e async for e in consume(redis_client, game, group, "b", block_ms=100)]
    mine = [(e.match_id, e.version) for e in first + rest if e.match_id == started.match_id]
    assert sorted(mine) == [(started.match_id, v) for v in range(1, 7)]
    assert len({e.entry_id for e in first + rest}) == len(first) + len(rest)
    pending = await redis_client.xpending(keys.game_moves(game), group)
    assert pending["pending"] == 1  # the entry "a" stopped at, not yet acknowledged
