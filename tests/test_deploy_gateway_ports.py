"""The gateway process as deployed, TLS on its public port: its plaintext health-only port
(for the kubelet's native gRPC probes) answers health and nothing else, and its web port
serves HTTPS with the same certificate and still reaches what the gateway answers itself
(lobby, health) as well as the games."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2_grpc
from mogames.common.v1 import common_pb2
from mogames.happymochi.v1 import happymochi_pb2
from mogames.lobby.v1 import lobby_pb2

from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from services.catalog import rules_module
from services.runtime.settings import GatewaySettings, SettingsError
from tests.conftest import Cluster
from tests.helpers import health_status, wait_until
from tests.test_gateway_tls import _self_signed
from tests.web.wire import WebClient

HAPPY_MOCHI = rules_module("happy_mochi").GAME.full_service
LOBBY = lobby_pb2.DESCRIPTOR.services_by_name["Lobby"].full_name
SERVING = health_pb2.HealthCheckResponse.SERVING


@dataclass
class Gateway:
    tls: str
    health: str
    web: str
    certificate: bytes  # the PEM clients trust
    certificate_file: str


@pytest.fixture(scope="module")
def tls_gateway(
    cluster: Cluster, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    cert, key = _self_signed(tmp_path_factory.mktemp("tls"))
    tls, health, web = (free_port() for _ in range(3))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MOGAMES_")}
    env = {
        **clean,
        "MOGAMES_BACKENDS_HAPPY_MOCHI": ",".join(cluster.replicas_addresses["happy_mochi"]),
        "MOGAMES_REDIS_URL": redis_url,
        "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{tls}",
        "MOGAMES_TLS_CERT": str(cert),
        "MOGAMES_TLS_KEY": str(key),
        "MOGAMES_HEALTH_LISTEN": f"127.0.0.1:{health}",
        "MOGAMES_WEB_LISTEN": f"127.0.0.1:{web}",
        "MOGAMES_LOG_LEVEL": "warning",
        "MOGAMES_SHUTDOWN_GRACE_S": "1",
    }
    process = subprocess.Popen([sys.executable, "-m", "gateway"], env=env)
    try:
        for port in (tls, health, web):
            wait_for_port(port, timeout_s=60)
        yield Gateway(
            f"localhost:{tls}", f"127.0.0.1:{health}", f"localhost:{web}", cert.read_bytes(), str(cert)
        )
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0


async def test_the_health_port_answers_health_in_plaintext_and_nothing_else(tls_gateway):
    async with grpc.aio.insecure_channel(tls_gateway.health) as channel:
        assert await health_status(channel, LOBBY) == SERVING  # the probes' service
        for service in ("", HAPPY_MOCHI):  # the backends' health, mirrored every 2 s
            await wait_until(
                lambda s=service: _is_serving(channel, s),
                f"{service or 'overall'} SERVING on the health port",
            )
        refused = [
            GameClient(channel, "happy_mochi").create(2),
            channel.unary_unary(
                f"/{LOBBY}/ListGames",
                request_serializer=lobby_pb2.ListGamesRequest.SerializeToString,
                response_deserializer=lobby_pb2.ListGamesResponse.FromString,
            )(lobby_pb2.ListGamesRequest(), timeout=10),
            _first_reflection_answer(channel),
        ]
        for call in refused:
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await call
            assert error.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def _is_serving(channel: grpc.aio.Channel, service: str) -> bool:
    return await health_status(channel, service) == SERVING


async def _first_reflection_answer(channel: grpc.aio.Channel) -> object:
    # Nothing written: the refusal comes on the call's headers, and a request still being
    # written when it arrives can fail in gRPC's core (INTERNAL) instead of showing it.
    stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(timeout=10)
    return await stream.read()


async def test_the_public_port_still_speaks_tls_only_and_serves_the_games(tls_gateway):
    credentials = grpc.ssl_channel_credentials(root_certificates=tls_gateway.certificate)
    async with grpc.aio.secure_channel(tls_gateway.tls, credentials) as channel:
        match = await GameClient(channel, "happy_mochi").create(2)
        assert match.match_id


async def test_the_web_port_serves_https_and_reaches_the_lobby_health_and_games_with_tls_on(tls_gateway):
    trusted = ssl.create_default_context(cafile=tls_gateway.certificate_file)
    async with httpx.AsyncClient(timeout=20, verify=trusted, http2=True) as http:
        web = WebClient(http, f"https://{tls_gateway.web}", "connect-json")
        games = await web.unary(
            f"/{LOBBY}/ListGames", lobby_pb2.ListGamesRequest(), lobby_pb2.ListGamesResponse
        )
        assert HAPPY_MOCHI in [g.service for g in games.games]
        health = await web.unary(
            "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest(), health_pb2.HealthCheckResponse
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        match = await web.unary(
            f"/{HAPPY_MOCHI}/CreateMatch", happymochi_pb2.CreateMatchRequest(players=2), common_pb2.Match
        )
        assert match.status == common_pb2.WAITING_FOR_PLAYERS
    async with httpx.AsyncClient(timeout=20) as plaintext:
        with pytest.raises(httpx.TransportError):
            await plaintext.post(f"http://{tls_gateway.web}/{LOBBY}/ListGames", json={})


def test_a_bad_health_address_stops_the_gateway_and_none_means_no_health_port(monkeypatch):
    for name in [k for k in os.environ if k.startswith("MOGAMES_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MOGAMES_BACKENDS_HAPPY_MOCHI", "127.0.0.1:50061")
    assert GatewaySettings.from_env().health_listen == ""
    monkeypatch.setenv("MOGAMES_HEALTH_LISTEN", "50052")
    with pytest.raises(SettingsError, match="MOGAMES_HEALTH_LISTEN must be host:port"):
        GatewaySettings.from_env()


def test_a_plaintext_web_port_off_loopback_stops_the_gateway(monkeypatch, tmp_path):
    for name in [k for k in os.environ if k.startswith("MOGAMES_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MOGAMES_BACKENDS_HAPPY_MOCHI", "127.0.0.1:50061")
    monkeypatch.setenv("MOGAMES_WEB_LISTEN", "0.0.0.0:8080")
    with pytest.raises(SettingsError, match="is not a loopback address") as refused:
        GatewaySettings.from_env()
    assert "MOGAMES_WEB_LISTEN=0.0.0.0:8080" in str(refused.value)
    cert, key = _self_signed(tmp_path)
    monkeypatch.setenv("MOGAMES_TLS_CERT", str(cert))
    monkeypatch.setenv("MOGAMES_TLS_KEY", str(key))
    assert GatewaySettings.from_env().web_listen == "0.0.0.0:8080"  # served over HTTPS
