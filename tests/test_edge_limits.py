"""Per-client budgets shared by replicas through Redis, and bounded request fields."""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import pytest
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from gateway.server import build as build_gateway
from services.runtime.errors import InvalidArgument
from services.runtime.limits import check_fields
from services.runtime.server import build as build_service
from services.runtime.settings import GatewaySettings, InputLimits
from tests.conftest import service_settings
from tests.helpers import refusal, retry_delay_s

CLIENT_KEY = "x-test-client"
# Long windows: a test's burst never straddles two of them.
WINDOW_S = 3600


@asynccontextmanager
async def limited_system(redis_url: str, **budgets: int) -> AsyncIterator[grpc.aio.Channel]:
    """Two Happy Mochi replicas with ``budgets`` behind a gateway; clients named by CLIENT_KEY
    (the test's calls come from loopback, a trusted proxy here)."""
    limits = InputLimits(client_id_metadata=CLIENT_KEY, trusted_proxies=(ipaddress.ip_network("127.0.0.1"),))
    settings = dataclasses.replace(
        service_settings("happy_mochi", redis_url), limits=limits, rate_window_s=WINDOW_S, **budgets
    )
    replicas = [await build_service(settings) for _ in range(2)]
    for replica in replicas:
        await replica.server.start()
    gateway, _checker, pools, port = await build_gateway(
        GatewaySettings(
            listen="127.0.0.1:0",
            backends={"happy_mochi": tuple(f"127.0.0.1:{r.port}" for r in replicas)},
            shutdown_grace_s=1,
            log_level="warning",
            limits=limits,
        )
    )
    await gateway.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel
    finally:
        await channel.close()
        await gateway.stop(None)
        for pool in pools:
            await pool.close()
        for replica in replicas:
            await replica.stop(None)


def _as(client_name: str) -> tuple[tuple[str, str]]:
    return ((CLIENT_KEY, client_name),)


async def test_one_client_flooding_create_match_is_cut_off_at_its_limit(redis_url):
    async with limited_system(redis_url, create_per_window=50) as channel:
        client = GameClient(channel, "happy_mochi")
        flooder = f"flood-{uuid.uuid4().hex}"

        async def create() -> grpc.StatusCode | float:
            try:
                await client.stub.CreateMatch(
                    client.pb2.CreateMatchRequest(players=2), metadata=_as(flooder), timeout=10
                )
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
                return retry_delay_s(error)
            return grpc.StatusCode.OK

        outcomes = []
        for _ in range(4):  # 200 calls from one client, 50 at a time, over both replicas
            outcomes += await asyncio.gather(*(create() for _ in range(50)))
        assert outcomes.count(grpc.StatusCode.OK) == 50
        delays = [o for o in outcomes if isinstance(o, float)]
        assert len(delays) == 150 and all(0 < d <= WINDOW_S for d in delays)
        # Another client still gets through.
        other = await client.stub.CreateMatch(
            client.pb2.CreateMatchRequest(players=2), metadata=_as(f"other-{uuid.uuid4().hex}"), timeout=10
        )
        assert other.match_id


async def test_waiting_matches_per_client_are_capped_until_one_fills(redis_url):
    async with limited_system(redis_url, max_waiting_per_client=3) as channel:
        client = GameClient(channel, "happy_mochi")
        creator = f"creator-{uuid.uuid4().hex}"

        def create() -> object:
            return client.stub.CreateMatch(
                client.pb2.CreateMatchRequest(players=2), metadata=_as(creator), timeout=10
            )

        waiting = [await create() for _ in range(3)]
        refused = await refusal(create())
        assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.reason == "too_many_waiting_matches"
        for name in ("a", "b"):  # fill one of them: it no longer waits
            await client.join(waiting[0].match_id, name)
        assert (await create()).match_id


async def test_matches_started_by_bots_do_not_count_as_waiting(redis_url):
    async with limited_system(redis_url, max_waiting_per_client=10) as channel:
        client = GameClient(channel, "happy_mochi")
        creator = _as(f"creator-{uuid.uuid4().hex}")

        async def create(**table: object) -> common_pb2.Match:
            request = client.pb2.CreateMatchRequest(players=2, table=common_pb2.TableOptions(**table))
            match: common_pb2.Match = await client.stub.CreateMatch(request, metadata=creator, timeout=10)
            return match

        # Ten started by AddBot after the creator's own join, and ten made of bots only.
        for _ in range(10):
            match = await create()
            await client.stub.JoinMatch(
                common_pb2.JoinMatchRequest(match_id=match.match_id, player_name="host"),
                metadata=creator,
                timeout=10,
            )
            added = await client.stub.AddBot(
                common_pb2.AddBotRequest(match_id=match.match_id), metadata=creator, timeout=10
            )
            assert added.status == common_pb2.IN_PROGRESS
        for _ in range(10):
            assert (await create(bot_seats=[0, 1])).status == common_pb2.IN_PROGRESS
        # None of them waits: ten that do fit, the eleventh does not.
        waiting = [await create() for _ in range(10)]
        assert all(m.status == common_pb2.WAITING_FOR_PLAYERS for m in waiting)
        refused = await refusal(create())
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "too_many_waiting_matches",
        )


async def test_join_match_has_a_budget_too(redis_url):
    async with limited_system(redis_url, join_per_window=3) as channel:
        client = GameClient(channel, "happy_mochi")
        joiner = f"joiner-{uuid.uuid4().hex}"
        matches = [await client.create(2) for _ in range(4)]
        for match in matches[:3]:
            await client.stub.JoinMatch(
                common_pb2.JoinMatchRequest(match_id=match.match_id, player_name="j"),
                metadata=_as(joiner),
                timeout=10,
            )
        refused = await refusal(
            client.stub.JoinMatch(
                common_pb2.JoinMatchRequest(match_id=matches[3].match_id, player_name="j"),
                metadata=_as(joiner),
                timeout=10,
            )
        )
        assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED and refused.reason == "rate_limited"


async def test_oversize_fields_are_refused_naming_the_field(cluster):
    client = cluster.client("morisi")
    request = client.pb2.CreateMatchRequest(players=2)
    request.options.layout = "custom"
    for q in range(500):
        request.options.custom_tiles.add(q=q, r=0)
    refused = await refusal(client.stub.CreateMatch(request, timeout=10))
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.field == "options.custom_tiles" and "at most 200" in refused.details

    long_name = "n" * 10_000
    refused = await refusal(
        cluster.client("happy_mochi").stub.JoinMatch(
            common_pb2.JoinMatchRequest(match_id="m", player_name=long_name), timeout=10
        )
    )
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.field == "player_name"
    assert len(refused.details) < 400  # the echo of the input is cut


async def test_undecodable_bodies_are_invalid_argument_through_gateway_and_direct(cluster):
    path = "/mogames.happymochi.v1.HappyMochi/GetMatch"
    for channel in (cluster.gateway, cluster.replicas["happy_mochi"][0]):
        for body in (b"\xff\xff\xff", b"\x0a\x05ab", b"\x0a\x02\xff\xfe"):
            refused = await refusal(channel.unary_unary(path)(body, timeout=10))
            assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, (body, refused)
            assert refused.reason == "undecodable_request"
            assert "mogames.common.v1.GetMatchRequest" in refused.details


def test_field_bounds_hold_at_their_edge_for_messages_of_any_size():
    """check_fields skips messages no larger than the tightest bound: the first string or
    repeated entry past a bound still makes the message larger than that, and is refused."""
    limits = InputLimits(max_string=64, max_repeated=16, max_layout_tiles=16)
    check_fields(common_pb2.JoinMatchRequest(player_name="n" * 64), limits)
    with pytest.raises(InvalidArgument, match="player_name: at most 64 characters"):
        check_fields(common_pb2.JoinMatchRequest(player_name="n" * 65), limits)
    # Packed zeros: one byte an entry, the smallest a repeated field gets on the wire.
    check_fields(common_pb2.TableOptions(bot_seats=[0] * 16), limits)
    with pytest.raises(InvalidArgument, match="bot_seats: at most 16 entries"):
        check_fields(common_pb2.TableOptions(bot_seats=[0] * 17), limits)
