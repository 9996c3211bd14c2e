"""Players on a Redis Cluster: a player's keys share a slot, the activity stream and the
matches live in others; sign-in, a bound seat, its notices and index work across them."""

from __future__ import annotations

from mogames.players.v1 import players_pb2, players_pb2_grpc

from tests.conftest import running_services
from tests.helpers import wait_serving, wait_until
from tests.players_fixtures import running_players
from tests.test_players_matches import KIND, Player

SERVICE = "mogames.players.v1.Players"


async def test_a_bound_seat_is_listed_and_told_on_a_cluster(redis_cluster, tmp_path):
    with running_players(redis_cluster.url, tmp_path / "players.log") as address:
        async with running_services(
            redis_cluster.url, games=["happy_mochi"], players_backends=(address,)
        ) as cluster:
            await wait_serving(cluster.gateway, SERVICE)
            stub = players_pb2_grpc.PlayersStub(cluster.gateway)
            signed = await stub.SignInGuest(
                players_pb2.SignInGuestRequest(device_id="cluster-device-1", device_secret="c" * 20)
            )
            ann = Player(signed.session, stub)
            watch = stub.WatchMyTurns(players_pb2.WatchMyTurnsRequest(), metadata=ann.bearer())
            assert (await watch.read()).WhichOneof("event") == "heartbeat"
            client = cluster.client("happy_mochi")
            created = await client.create(2)
            await client.join(created.match_id, "Ann", session=ann.token)
            await client.join(created.match_id, "Anonymous")
            reply = await watch.read()
            while reply.WhichOneof("event") != "notice":
                reply = await watch.read()
            assert KIND[reply.notice.kind] == "match_started"
            assert reply.notice.match.match.match_id == created.match_id
            watch.cancel()

            async def listed() -> bool:
                return await ann.my_match(created.match_id) is not None

            await wait_until(listed, "the match in Ann's index", 10)
