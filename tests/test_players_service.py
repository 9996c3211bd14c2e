"""The players service process behind the gateway: health, routing, settings that fail fast,
and the RPCs another module serves (ratings, notification settings) answering for themselves."""

from __future__ import annotations

import os
import subprocess
import sys

import grpc
import httpx
import pytest
from mogames.players.v1 import players_pb2, players_pb2_grpc

from gateway.server import build as build_gateway
from gateway.web import start_web
from services.runtime.settings import GatewaySettings
from tests.conftest import TOKEN_SECRET, running_services
from tests.helpers import refusal, wait_serving
from tests.players_fixtures import running_players

SERVICE = "mogames.players.v1.Players"


@pytest.fixture(scope="module")
async def players_gateway(redis_url, tmp_path_factory):
    log = tmp_path_factory.mktemp("players") / "players.log"
    with running_players(redis_url, log) as address:
        async with running_services(redis_url, games=["mori"], players_backends=(address,)) as cluster:
            await wait_serving(cluster.gateway, SERVICE)
            yield cluster.gateway


async def test_the_gateway_routes_the_players_service_and_reports_its_health(players_gateway):
    stub = players_pb2_grpc.PlayersStub(players_gateway)
    # The players service itself answered: a bad session is refused by it, whichever module
    # serves the call.
    for call in (
        stub.GetRating(players_pb2.GetRatingRequest(), metadata=[("authorization", "Bearer s1.x.1.y")]),
        stub.UpdateNotificationSettings(players_pb2.UpdateNotificationSettingsRequest()),
    ):
        refused = await refusal(call)
        assert refused.code == grpc.StatusCode.UNAUTHENTICATED
        assert refused.reason in ("bad_session", "no_session")


def _env_without_oidc(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOGAMES_OIDC_")}
    return {**env, "MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(), **extra}


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"MOGAMES_OIDC_ISSUER": "https://issuer.example"}, "MOGAMES_OIDC_AUDIENCE"),
        (
            {"MOGAMES_OIDC_ISSUER": "issuer.example", "MOGAMES_OIDC_AUDIENCE": "app"},
            "MOGAMES_OIDC_ISSUER must be a URL",
        ),
        (
            {"MOGAMES_OIDC_ISSUER": "https://issuer.example", "MOGAMES_OIDC_AUDIENCE": "app"},
            "MOGAMES_OIDC_JWKS_URL or MOGAMES_OIDC_JWKS_FILE",
        ),
        (
            {
                "MOGAMES_OIDC_ISSUER": "https://issuer.example",
                "MOGAMES_OIDC_AUDIENCE": "app",
                "MOGAMES_OIDC_JWKS_FILE": "/nonexistent/jwks.json",
            },
            "MOGAMES_OIDC_JWKS_FILE: cannot read",
        ),
    ],
)
def test_a_malformed_provider_setting_stops_the_process_naming_it(extra, named):
    result = subprocess.run(
        [sys.executable, "-m", "services.players"],
        env=_env_without_oidc(**extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert named in result.stderr


async def test_the_web_port_serves_the_players_service_to_browsers(redis_url, tmp_path):
    with running_players(redis_url, tmp_path / "players.log") as address:
        settings = GatewaySettings(
            listen="127.0.0.1:0",
            backends={"mori": ("127.0.0.1:1",)},
            shutdown_grace_s=1,
            log_level="warning",
            redis_url=redis_url,
            web_listen="127.0.0.1:0",
            web_origins=("https://app.example",),
            players_backends=(address,),
        )
        gateway, _checker, pools, port = await build_gateway(settings)
        await gateway.start()
        web = await start_web(settings, pools, port)
        assert web is not None
        try:
            base = f"http://127.0.0.1:{web.port}/{SERVICE}"
            async with httpx.AsyncClient(timeout=20) as http:
                signed = await http.post(
                    f"{base}/SignInGuest",
                    json={"deviceId": "browser-device-1", "deviceSecret": "b" * 20, "displayName": "Web"},
                )
                assert signed.status_code == 200, signed.text
                session = signed.json()["session"]
                profile = await http.post(
                    f"{base}/GetProfile",
                    json={},
                    headers={"authorization": f"Bearer {session['sessionToken']}"},
                )
                assert profile.json()["profile"]["displayName"] == "Web"
                # A page on another origin may send the session header on game calls.
                preflight = await http.options(
                    f"http://127.0.0.1:{web.port}/mogames.mori.v1.Mori/JoinMatch",
                    headers={
                        "origin": "https://app.example",
                        "access-control-request-method": "POST",
                        "access-control-request-headers": "mogames-session,content-type",
                    },
                )
                assert "mogames-session" in preflight.headers["access-control-allow-headers"].lower()
        finally:
            await web.stop()
            await gateway.stop(None)
            for pool in pools:
                await pool.close()
