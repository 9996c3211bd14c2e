"""The workers on real matches: signed-in players play whole matches through a real
gateway, the game services write the activity stream, and the notifier (a real process)
calls a real receiver with every notice while the ratings worker rates every result."""

from __future__ import annotations

import json

from mogames.players.v1 import players_pb2, players_pb2_grpc
from openskill.models import PlackettLuce

from clients.game_client import GameClient
from deploy.redis_server import free_port
from services.runtime import keys
from services.runtime.store import MatchStore
from services.workers.ladders import Ladders
from tests.activity_entries import start_worker
from tests.conftest import running_services
from tests.helpers import wait_serving, wait_until
from tests.players_fixtures import running_players
from tests.test_notifier import check_signed, metrics_of, notifier_env
from tests.test_players_matches import World, play_humans, sign_in
from tests.webhook_receiver import Receiver

# Three seats, one a bot (never notified, never rated), 120 moves a match: short.
GAME = "mori"
MATCHES = 2


async def test_real_matches_notify_every_bound_seat_and_rate_every_result(worker_redis, workers, tmp_path):
    url, client = worker_redis
    receiver = Receiver()
    receiver.start()
    try:
        workers.append(start_worker("notifier", url, tmp_path / "notifier.log", **notifier_env(receiver)))
        metrics_port = free_port()
        metrics_env = {"MOGAMES_METRICS_LISTEN": f"127.0.0.1:{metrics_port}"}
        workers.append(start_worker("ratings", url, tmp_path / "ratings.log", **metrics_env))
        with running_players(url, tmp_path / "players.log") as address:
            async with running_services(
                url, games=[GAME], players_backends=(address,), bot_think_ms=0, scheduler_tick_ms=20
            ) as cluster:
                await wait_serving(cluster.gateway, "mogames.players.v1.Players")
                world = World(cluster.gateway, players_pb2_grpc.PlayersStub(cluster.gateway))
                games = GameClient(cluster.gateway, GAME)
                ann, ben = await sign_in(world, "Ann"), await sign_in(world, "Ben")
                for number in range(MATCHES):
                    created = await games.create(3, seed=number + 1, table={"bot_seats": [2]})
                    seats = {}
                    for player in (ann, ben) if number % 2 == 0 else (ben, ann):
                        joined = await games.join(created.match_id, "P", session=player.token)
                        seats[joined.seat] = joined.token

                    async def never() -> bool:
                        return False

                    await play_humans(games, created.match_id, seats, never, moves=5000)
                ladders = Ladders(client)

                async def rated() -> bool:
                    return (await ladders.rating(GAME, ann.id)).matches == MATCHES

                await wait_until(rated, "every match rated", 30)
                board = await world.players.GetLeaderboard(players_pb2.GetLeaderboardRequest(ladder=GAME))
                assert {(r.player_id, r.display_name, r.matches) for r in board.top} == {
                    (ann.id, "Ann", MATCHES),
                    (ben.id, "Ben", MATCHES),
                }
        entries = [
            {k.decode(): v.decode() for k, v in fields.items()}
            for _, fields in await client.xrange(keys.activity(GAME))
        ]
        ended = [e for e in entries if e["notice"] == "match_ended"]
        assert len(ended) == MATCHES and all(e["status"] == "FINISHED" for e in ended)
        expected = {
            f"{e['match_id']}:{e['version']}:{e['notice']}:{json.loads(e['players'])[seat]}"
            for e in entries
            for seat in json.loads(e["seats"])
            if json.loads(e["players"])[seat]
        }

        for player in (ann, ben):
            for notice in ("match_started", "your_turn", "match_ended"):
                assert any(k.endswith(f":{notice}:{player.id}") for k in expected), (notice, player.id)

        async def all_delivered() -> bool:
            return {json.loads(c.body)["id"] for c in receiver.received()} >= expected

        await wait_until(all_delivered, "every notice of the real matches", 60)
        assert {check_signed(c)["id"] for c in receiver.received()} == expected
    finally:
        receiver.stop()

    # The ratings: the same results straight through the library, in commit order.
    model = PlackettLuce()
    replay = {ann.id: model.rating(), ben.id: model.rating()}
    for entry in ended:
        players, scores, winners = (json.loads(entry[f]) for f in ("players", "scores", "winners"))
        places = [0 if seat in winners else 1 for seat in range(3)]
        keys_ = [(places[s], -scores[s]) for s in range(2)]  # the two players' places between them
        ranks = [1 + sum(o < k for o in keys_) for k in keys_]
        assert players[2] == ""  # the bot's seat
        new = model.rate([[replay[players[0]]], [replay[players[1]]]], ranks=[float(r) for r in ranks[:2]])
        replay[players[0]], replay[players[1]] = new[0][0], new[1][0]
    for player in (ann, ben):
        rating = await ladders.rating(GAME, player.id)
        assert (rating.skill.mu, rating.skill.sigma, rating.matches) == (
            replay[player.id].mu,
            replay[player.id].sigma,
            MATCHES,
        )
    figures = await metrics_of(metrics_port)
    assert figures[("mogames_rating_updates_total", f'ladder="{GAME}"')] == MATCHES
    board = [r.player_id for r in await ladders.top(GAME, 10)]
    assert sorted(board, key=lambda p: -(replay[p].mu - 3 * replay[p].sigma)) == board


async def test_a_one_round_more_match_rates_the_pair_as_a_team_against_the_solo(
    worker_redis, workers, tmp_path
):
    url, client = worker_redis
    workers.append(start_worker("ratings", url, tmp_path / "ratings.log"))
    with running_players(url, tmp_path / "players.log") as address:
        async with running_services(url, games=["more"], players_backends=(address,)) as cluster:
            await wait_serving(cluster.gateway, "mogames.players.v1.Players")
            world = World(cluster.gateway, players_pb2_grpc.PlayersStub(cluster.gateway))
            games = GameClient(cluster.gateway, "more")
            signed = [await sign_in(world, name) for name in ("Ann", "Ben", "Cid")]
            created = await games.create(3, seed=4, options={"max_rounds": 1})
            seats = {}
            by_seat = {}
            for player in signed:
                joined = await games.join(created.match_id, player.id[:8], session=player.token)
                seats[joined.seat], by_seat[joined.seat] = joined.token, player.id

            async def never() -> bool:
                return False

            await play_humans(games, created.match_id, seats, never, moves=5000)
    history = await MatchStore(client, "more").history(created.match_id)
    rounds = [e.body["round_ended"]["result"] for e in history if "round_ended" in e.body]
    assert len(rounds) == 1
    solo = int(rounds[0]["solo"])
    pair = [seat for seat in range(3) if seat != solo]
    ended = [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _, fields in await client.xrange(keys.activity("more"))
        if fields[b"notice"] == b"match_ended"
    ]
    assert len(ended) == 1
    scores, winners = json.loads(ended[0]["scores"]), json.loads(ended[0]["winners"])
    place = [(0 if seat in winners else 1, -scores[seat]) for seat in range(3)]
    sides = [[solo], pair]
    side_keys = [min(place[s] for s in side) for side in sides]
    model = PlackettLuce()
    ranks = [float(1 + sum(o < k for o in side_keys)) for k in side_keys]
    rated = model.rate([[model.rating()], [model.rating(), model.rating()]], ranks=ranks)
    expected = {by_seat[solo]: rated[0][0], by_seat[pair[0]]: rated[1][0], by_seat[pair[1]]: rated[1][1]}
    ladders = Ladders(client)

    async def rated_all() -> bool:
        counted = [(await ladders.rating("more", p)).matches for p in by_seat.values()]
        return counted == [1, 1, 1]

    await wait_until(rated_all, "the More match rated", 30)
    for player, skill in expected.items():
        rating = await ladders.rating("more", player)
        assert (rating.skill.mu, rating.skill.sigma) == (skill.mu, skill.sigma)
    # The Pair's partners moved together: one side of the match.
    first, second = [await ladders.rating("more", by_seat[s]) for s in pair]
    assert first.skill == second.skill
