"""Who a client is, for its budgets: its own address, unless the peer that called is a
trusted proxy (MOGAMES_TRUSTED_PROXIES), whose header names the client. A client that
forges the header keeps its own budget. Real gateway and replica on loopback, each test
on its own Redis (the loopback address is a budget of its own)."""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import pytest

from clients.game_client import GameClient
from deploy.redis_server import running_redis
from gateway.server import build as build_gateway
from services.runtime.limits import FORWARDED_CLIENT
from services.runtime.server import build as build_service
from services.runtime.settings import GatewaySettings, InputLimits, SettingsError
from tests.conftest import service_settings
from tests.helpers import refusal

GAME = "happy_mochi"
CREATE_LIMIT = 3
PROXY_HEADER = "x-forwarded-for"
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


@asynccontextmanager
async def gateway_in_front(gateway_limits: InputLimits, service_limits: InputLimits) -> AsyncIterator[dict]:
    """A replica allowing CREATE_LIMIT CreateMatch per client and hour, behind a gateway."""
    with running_redis() as redis_url:
        settings = dataclasses.replace(
            service_settings(GAME, redis_url),
            limits=service_limits,
            create_per_window=CREATE_LIMIT,
            rate_window_s=3600,
        )
        replica = await build_service(settings)
        await replica.server.start()
        gateway, _checker, pools, port = await build_gateway(
            GatewaySettings(
                listen="127.0.0.1:0",
                backends={GAME: (f"127.0.0.1:{replica.port}",)},
                shutdown_grace_s=1,
                log_level="warning",
                redis_url=redis_url,
                limits=gateway_limits,
            )
        )
        await gateway.start()
        channels = {
            "gateway": grpc.aio.insecure_channel(f"127.0.0.1:{port}"),
            "replica": grpc.aio.insecure_channel(f"127.0.0.1:{replica.port}"),
        }
        try:
            yield {name: GameClient(channel, GAME) for name, channel in channels.items()}
        finally:
            for channel in channels.values():
                await channel.close()
            await gateway.stop(None)
            for pool in pools:
                await pool.close()
            await replica.stop(None)


async def create(client: GameClient, **headers: str) -> grpc.StatusCode:
    metadata = tuple((name.replace("_", "-"), value) for name, value in headers.items())
    call = client.stub.CreateMatch(client.pb2.CreateMatchRequest(players=2), metadata=metadata, timeout=10)
    try:
        await call
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
        return error.code()
    return grpc.StatusCode.OK


async def test_without_trusted_proxies_a_forged_client_header_keeps_the_callers_budget():
    limits = InputLimits(client_id_metadata=PROXY_HEADER)
    async with gateway_in_front(limits, limits) as clients:
        outcomes = [
            await create(clients["gateway"], mogames_client=f"forged-{n}", x_forwarded_for=f"198.51.100.{n}")
            for n in range(CREATE_LIMIT + 2)
        ]
        # Every call counted against 127.0.0.1, whatever name it gave itself.
        assert outcomes == [grpc.StatusCode.OK] * CREATE_LIMIT + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
        refused = await refusal(
            clients["gateway"].stub.CreateMatch(
                clients["gateway"].pb2.CreateMatchRequest(players=2),
                metadata=((FORWARDED_CLIENT, "someone-else"),),
                timeout=10,
            )
        )
        assert refused.reason == "rate_limited"


async def test_a_trusted_proxy_names_each_client_and_each_keeps_its_own_budget():
    limits = InputLimits(client_id_metadata=PROXY_HEADER, trusted_proxies=LOOPBACK)
    async with gateway_in_front(limits, limits) as clients:
        gateway = clients["gateway"]
        # Five clients named by the proxy (here the test, on loopback): each its own budget.
        for n in range(CREATE_LIMIT + 2):
            assert await create(gateway, x_forwarded_for=f"203.0.113.{n}") == grpc.StatusCode.OK
        # One client, named by the first address of a proxy chain, is cut off at its limit.
        chain = [await create(gateway, x_forwarded_for=f"192.0.2.7, 10.0.0.{n}") for n in range(CREATE_LIMIT)]
        assert chain == [grpc.StatusCode.OK] * CREATE_LIMIT
        assert await create(gateway, x_forwarded_for="192.0.2.7") == grpc.StatusCode.RESOURCE_EXHAUSTED
        # mogames-client from a trusted proxy counts too (nginx in front of the gateway).
        assert await create(gateway, mogames_client="192.0.2.8") == grpc.StatusCode.OK


async def test_a_service_told_its_gateways_ignores_anyone_elses_word():
    gateway_limits = InputLimits(trusted_proxies=LOOPBACK)
    service_limits = InputLimits(trusted_proxies=(ipaddress.ip_network("10.9.0.0/16"),))
    async with gateway_in_front(gateway_limits, service_limits) as clients:
        # Straight to the replica from loopback, not one of its gateways: named by address.
        outcomes = [
            await create(clients["replica"], mogames_client=f"forged-{n}") for n in range(CREATE_LIMIT + 1)
        ]
        assert outcomes == [grpc.StatusCode.OK] * CREATE_LIMIT + [grpc.StatusCode.RESOURCE_EXHAUSTED]


def test_trusted_proxies_parse_addresses_and_networks_and_refuse_anything_else(monkeypatch):
    monkeypatch.setenv("MOGAMES_BACKENDS_HAPPY_MOCHI", "127.0.0.1:50061")
    monkeypatch.setenv("MOGAMES_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.5,::1")
    proxies = GatewaySettings.from_env().limits.trusted_proxies
    assert [str(p) for p in proxies] == ["10.0.0.0/8", "192.168.1.5/32", "::1/128"]
    monkeypatch.delenv("MOGAMES_TRUSTED_PROXIES")
    assert GatewaySettings.from_env().limits.trusted_proxies == ()  # default: nobody
    monkeypatch.setenv("MOGAMES_TRUSTED_PROXIES", "10.0.0.0/8,proxy.example.com")
    with pytest.raises(SettingsError, match=r"MOGAMES_TRUSTED_PROXIES.*'proxy\.example\.com'"):
        GatewaySettings.from_env()
