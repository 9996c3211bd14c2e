"""Sign-in on the players service, a real process behind a real gateway: guest devices,
sessions that expire and refresh (refresh tokens used once), OpenID Connect ID tokens
verified against keys served on loopback, profiles, per-player limits, delete."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time

import grpc
import pytest
from mogames.players.v1 import players_pb2, players_pb2_grpc

from services.runtime.auth import issue_session
from tests.conftest import TOKEN_SECRET, running_services
from tests.helpers import refusal, wait_serving
from tests.oidc_provider import AUDIENCE, ISSUER, Provider, serving_jwks
from tests.players_fixtures import running_players

SERVICE = "mogames.players.v1.Players"


@pytest.fixture(scope="module")
def provider():
    return Provider()


@pytest.fixture(scope="module")
async def players(redis_url, tmp_path_factory, provider):
    log = tmp_path_factory.mktemp("players") / "players.log"
    with serving_jwks(provider) as jwks_url:
        env = {
            "MOGAMES_OIDC_ISSUER": ISSUER,
            "MOGAMES_OIDC_AUDIENCE": AUDIENCE,
            "MOGAMES_OIDC_JWKS_URL": jwks_url,
            "MOGAMES_SIGN_IN_LIMIT": "4",
        }
        with running_players(redis_url, log, env) as address:
            async with running_services(redis_url, games=["mori"], players_backends=(address,)) as cluster:
                await wait_serving(cluster.gateway, SERVICE)
                yield players_pb2_grpc.PlayersStub(cluster.gateway)


def _bearer(session: players_pb2.Session) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {session.session_token}")]


async def _guest(players, device_id: str | None = None, secret: str = "s" * 20, name: str = "Ada"):
    request = players_pb2.SignInGuestRequest(
        device_id=device_id or f"device-{secrets.token_hex(6)}", device_secret=secret, display_name=name
    )
    return await players.SignInGuest(request)


async def test_a_guest_device_signs_in_to_the_same_player_and_only_with_its_secret(players):
    first = await _guest(players, "device-one-0001", name="Ada", secret="a-secret-of-the-device")
    assert first.created and first.profile.display_name == "Ada"
    now_ms = time.time() * 1000
    assert now_ms < first.session.session_expires_unix_ms <= now_ms + 3600_000 + 5000
    assert first.session.refresh_expires_unix_ms > first.session.session_expires_unix_ms
    again = await _guest(players, "device-one-0001", secret="a-secret-of-the-device")
    assert not again.created and again.session.player_id == first.session.player_id
    assert again.session.refresh_token != first.session.refresh_token
    wrong = await refusal(_guest(players, "device-one-0001", secret="not-the-secret-at-all"))
    assert (wrong.code, wrong.reason) == (grpc.StatusCode.UNAUTHENTICATED, "bad_device_secret")
    short = await refusal(_guest(players, "short"))
    assert (short.code, short.field) == (grpc.StatusCode.INVALID_ARGUMENT, "device_id")
    profile = await players.GetProfile(players_pb2.GetProfileRequest(), metadata=_bearer(again.session))
    assert profile.profile.player_id == first.session.player_id


async def test_a_refresh_token_works_once_and_an_expired_session_is_refused(players):
    signed = await _guest(players)
    refreshed = await players.RefreshSession(
        players_pb2.RefreshSessionRequest(refresh_token=signed.session.refresh_token)
    )
    assert refreshed.session.player_id == signed.session.player_id
    assert refreshed.session.session_token != signed.session.session_token
    reused = await refusal(
        players.RefreshSession(players_pb2.RefreshSessionRequest(refresh_token=signed.session.refresh_token))
    )
    assert (reused.code, reused.reason) == (grpc.StatusCode.UNAUTHENTICATED, "bad_refresh_token")
    # A session of this player that expired a moment ago: signed with the server's secret,
    # refused for its age alone.
    expired = issue_session(TOKEN_SECRET, signed.session.player_id, int(time.time() * 1000) - 1)
    refused = await refusal(
        players.GetProfile(players_pb2.GetProfileRequest(), metadata=[("authorization", f"Bearer {expired}")])
    )
    assert (refused.code, refused.reason) == (grpc.StatusCode.UNAUTHENTICATED, "session_expired")
    tampered = signed.session.session_token[:-2] + (
        "AA" if not signed.session.session_token.endswith("AA") else "BB"
    )
    bad = await refusal(
        players.GetProfile(
            players_pb2.GetProfileRequest(), metadata=[("authorization", f"Bearer {tampered}")]
        )
    )
    assert (bad.code, bad.reason) == (grpc.StatusCode.UNAUTHENTICATED, "bad_session")
    fresh = await players.GetProfile(players_pb2.GetProfileRequest(), metadata=_bearer(refreshed.session))
    assert fresh.profile.player_id == signed.session.player_id


async def test_a_session_expires_on_its_own(redis_url, tmp_path):
    with running_players(redis_url, tmp_path / "short.log", {"MOGAMES_SESSION_TTL_S": "1"}) as address:
        async with grpc.aio.insecure_channel(address) as channel:
            await wait_serving(channel, SERVICE)
            stub = players_pb2_grpc.PlayersStub(channel)
            signed = await _guest(stub)
            assert (
                await stub.GetProfile(players_pb2.GetProfileRequest(), metadata=_bearer(signed.session))
            ).profile
            await asyncio.sleep(max(0.0, signed.session.session_expires_unix_ms / 1000 - time.time()) + 0.05)
            late = await refusal(
                stub.GetProfile(players_pb2.GetProfileRequest(), metadata=_bearer(signed.session))
            )
            assert (late.code, late.reason) == (grpc.StatusCode.UNAUTHENTICATED, "session_expired")
            refreshed = await stub.RefreshSession(
                players_pb2.RefreshSessionRequest(refresh_token=signed.session.refresh_token)
            )
            profile = await stub.GetProfile(
                players_pb2.GetProfileRequest(), metadata=_bearer(refreshed.session)
            )
            assert profile.profile.player_id == signed.session.player_id


async def test_an_id_token_signs_in_the_same_player_each_time(players, provider):
    subject = f"user-{secrets.token_hex(4)}"
    first = await players.SignInWithProvider(
        players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject), display_name="Bo")
    )
    assert first.created and list(first.profile.linked_issuers) == [ISSUER]
    again = await players.SignInWithProvider(
        players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject))
    )
    assert not again.created and again.session.player_id == first.session.player_id


@pytest.mark.parametrize(
    ("token_of", "reason"),
    [
        (lambda p: p.id_token("u-1", iss="https://other-issuer.example"), "wrong_issuer"),
        (lambda p: p.id_token("u-1", aud="another-app"), "wrong_audience"),
        (lambda p: p.id_token("u-1", key=p.forged_key), "bad_signature"),
        (lambda p: p.id_token("u-1", expires_in_s=-120), "id_token_expired"),
        (lambda p: "not.a.jwt", "malformed_id_token"),
    ],
)
async def test_an_id_token_that_does_not_verify_is_refused_with_its_reason(
    players, provider, token_of, reason
):
    refused = await refusal(
        players.SignInWithProvider(players_pb2.SignInWithProviderRequest(id_token=token_of(provider)))
    )
    assert refused.code == grpc.StatusCode.UNAUTHENTICATED
    assert refused.reason == reason


async def test_signing_in_with_a_provider_during_a_session_links_it_to_that_player(players, provider):
    guest = await _guest(players)
    subject = f"user-{secrets.token_hex(4)}"
    linked = await players.SignInWithProvider(
        players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject)),
        metadata=_bearer(guest.session),
    )
    assert not linked.created and linked.session.player_id == guest.session.player_id
    assert list(linked.profile.linked_issuers) == [ISSUER]
    # On another device, with the identity alone: the same player.
    elsewhere = await players.SignInWithProvider(
        players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject))
    )
    assert elsewhere.session.player_id == guest.session.player_id
    other = await _guest(players)
    taken = await refusal(
        players.SignInWithProvider(
            players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject)),
            metadata=_bearer(other.session),
        )
    )
    assert (taken.code, taken.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "identity_linked_elsewhere")


async def test_a_profile_changes_and_a_deleted_player_is_gone(players, provider):
    device = f"device-{secrets.token_hex(6)}"
    guest = await _guest(players, device)
    subject = f"user-{secrets.token_hex(4)}"
    await players.SignInWithProvider(
        players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject)),
        metadata=_bearer(guest.session),
    )
    updated = await players.UpdateProfile(
        players_pb2.UpdateProfileRequest(display_name="Cleo", locale="pl"), metadata=_bearer(guest.session)
    )
    assert (updated.profile.display_name, updated.profile.locale) == ("Cleo", "pl")
    bad = await refusal(
        players.UpdateProfile(
            players_pb2.UpdateProfileRequest(locale="not a tag!"), metadata=_bearer(guest.session)
        )
    )
    assert (bad.code, bad.field) == (grpc.StatusCode.INVALID_ARGUMENT, "locale")
    await players.DeletePlayer(players_pb2.DeletePlayerRequest(), metadata=_bearer(guest.session))
    gone = await refusal(players.GetProfile(players_pb2.GetProfileRequest(), metadata=_bearer(guest.session)))
    assert (gone.code, gone.reason) == (grpc.StatusCode.UNAUTHENTICATED, "player_deleted")
    stale = await refusal(
        players.RefreshSession(players_pb2.RefreshSessionRequest(refresh_token=guest.session.refresh_token))
    )
    assert stale.reason == "bad_refresh_token"
    # The device and the identity no longer lead to it: each makes a new player.
    anew = await _guest(players, device)
    assert anew.created and anew.session.player_id != guest.session.player_id
    by_identity = await players.SignInWithProvider(
        players_pb2.SignInWithProviderRequest(id_token=provider.id_token(subject))
    )
    assert by_identity.created and by_identity.session.player_id != guest.session.player_id


async def test_a_player_signs_in_a_bounded_number_of_times_per_window(players):
    device = f"device-{secrets.token_hex(6)}"
    for _ in range(4):  # MOGAMES_SIGN_IN_LIMIT
        await _guest(players, device)
    over = await refusal(_guest(players, device))
    assert (over.code, over.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "sign_in_limit")


async def test_the_provider_s_keys_may_come_from_a_file(redis_url, tmp_path, provider):
    jwks = tmp_path / "jwks.json"
    jwks.write_text(provider.jwks())
    env = {
        "MOGAMES_OIDC_ISSUER": ISSUER,
        "MOGAMES_OIDC_AUDIENCE": AUDIENCE,
        "MOGAMES_OIDC_JWKS_FILE": str(jwks),
    }
    with running_players(redis_url, tmp_path / "players.log", env) as address:
        async with grpc.aio.insecure_channel(address) as channel:
            await wait_serving(channel, SERVICE)
            stub = players_pb2_grpc.PlayersStub(channel)
            signed = await stub.SignInWithProvider(
                players_pb2.SignInWithProviderRequest(id_token=provider.id_token("file-user"))
            )
            assert signed.created
            forged = await refusal(
                stub.SignInWithProvider(
                    players_pb2.SignInWithProviderRequest(
                        id_token=provider.id_token("x", key=provider.forged_key)
                    )
                )
            )
            assert forged.reason == "bad_signature"


def test_a_malformed_jwks_file_stops_the_start(tmp_path):
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": "not a list"}')
    env = {
        "MOGAMES_OIDC_ISSUER": ISSUER,
        "MOGAMES_OIDC_AUDIENCE": AUDIENCE,
        "MOGAMES_OIDC_JWKS_FILE": str(jwks),
    }
    result = subprocess.run(
        [sys.executable, "-m", "services.players"],
        env={**os.environ, "MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "MOGAMES_OIDC_JWKS_FILE: not a usable JWKS" in result.stderr
