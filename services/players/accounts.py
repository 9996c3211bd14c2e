"""Players and their sessions: guest and provider sign-in, refresh, profile, delete.

What is kept of a player (``keys.player_profile``): a display name, a locale, when it was
made, and the keys that sign in to it: guest devices (a digest of the device id, the
secret's HMAC) and provider identities (a digest of issuer and subject; the issuer is
listed). Sessions are signed tokens (``services.runtime.auth.issue_session``) that every
service verifies alone; refresh tokens are random, stored by digest, and used once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from services.catalog import GAME_PACKAGES
from services.players.oidc import OidcVerifier
from services.runtime import auth, keys
from services.runtime.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, Unauthenticated
from services.runtime.player_erasure import erase_player
from services.runtime.redis_client import RedisClient, text
from services.runtime.settings import PlayersSettings
from services.runtime.store import MatchStore

MIN_DEVICE_ID, MAX_DEVICE_ID = 8, 128
MIN_DEVICE_SECRET, MAX_DEVICE_SECRET = 16, 256
MAX_DISPLAY_NAME = 64
MAX_ID_TOKEN = 8192
_LOCALE = re.compile(r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$")

# KEYS: the device. ARGV: player id, the secret's digest. The device's player and secret
# digest: the stored ones, or these when the device is new (then stored).
_CLAIM_DEVICE = """
local stored = redis.call('HMGET', KEYS[1], 'player', 'secret')
if stored[1] then return stored end
redis.call('HSET', KEYS[1], 'player', ARGV[1], 'secret', ARGV[2])
return {ARGV[1], ARGV[2]}
"""


@dataclass(frozen=True)
class Session:
    player_id: str
    session_token: str
    session_expires_ms: int
    refresh_token: str
    refresh_expires_ms: int


@dataclass(frozen=True)
class Profile:
    player_id: str
    display_name: str
    locale: str
    linked_issuers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SignedIn:
    session: Session
    profile: Profile
    created: bool


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _now_ms() -> int:
    return int(time.time() * 1000)


def check_profile_fields(display_name: str, locale: str) -> None:
    if len(display_name.strip()) > MAX_DISPLAY_NAME:
        raise InvalidArgument(f"display_name: at most {MAX_DISPLAY_NAME} characters", field="display_name")
    if locale and not _LOCALE.match(locale):
        raise InvalidArgument("locale: a BCP 47 tag such as 'en' or 'pt-BR'", field="locale")


class Accounts:
    def __init__(self, redis: RedisClient, settings: PlayersSettings, oidc: OidcVerifier | None) -> None:
        self.redis = redis
        self.settings = settings
        self.oidc = oidc
        self._claim_device = redis.register_script(_CLAIM_DEVICE)

    # -- sessions ----------------------------------------------------------------------

    async def _session(self, player_id: str) -> Session:
        now = _now_ms()
        expires = now + self.settings.session_ttl_s * 1000
        refresh = secrets.token_urlsafe(32)
        refresh_expires = now + self.settings.refresh_ttl_s * 1000
        await self.redis.set(keys.refresh_token(_digest(refresh)), player_id, ex=self.settings.refresh_ttl_s)
        token = auth.issue_session(self.settings.token_secret, player_id, expires)
        return Session(player_id, token, expires, refresh, refresh_expires)

    async def refresh(self, refresh_token: str, client: str) -> Session:
        if not refresh_token:
            raise InvalidArgument(
                "refresh_token: required (from the last sign-in or refresh)", field="refresh_token"
            )
        await self._count("client", client, self.settings.sign_ins_per_client)
        player = await self.redis.getdel(keys.refresh_token(_digest(refresh_token)))
        if player is None or not await self.redis.exists(keys.player_profile(text(player))):
            raise Unauthenticated(
                "refresh_token: unknown, used already or expired; sign in again", reason="bad_refresh_token"
            )
        player_id = text(player)
        await self._count("player", player_id, self.settings.sign_ins_per_window)
        return await self._session(player_id)

    async def _count(self, kind: str, who: str, limit: int) -> None:
        """A sign-in (or refresh) against ``who``'s budget in this window; refused over it."""
        if not limit or not who:
            return
        window_s = self.settings.sign_in_window_s
        now = time.time()
        key = keys.rate_window("SignIn", f"{kind}:{who}", int(now // window_s))
        count = await self.redis.incr(key)
        if count == 1:
            await self.redis.expire(key, window_s + 1)
        if count > limit:
            retry_s = window_s - now % window_s
            raise ResourceExhausted(
                f"sign_in_limit: at most {limit} sign-ins per {kind} every {window_s} s;"
                f" retry in {retry_s:.0f} s",
                retry_after_s=retry_s,
                reason="sign_in_limit",
            )

    # -- players -----------------------------------------------------------------------

    async def _create(self, display_name: str, locale: str) -> str:
        player_id = auth.new_player_id()
        await self.redis.hset(
            keys.player_profile(player_id),
            mapping={
                "display_name": display_name.strip(),
                "locale": locale,
                "created_ms": _now_ms(),
                "devices": "[]",
                "identities": "[]",
                "issuers": "[]",
            },
        )
        return player_id

    async def profile(self, player_id: str) -> Profile:
        stored = await self.redis.hgetall(keys.player_profile(player_id))
        if not stored:
            raise Unauthenticated("session: this player was deleted; sign in again", reason="player_deleted")
        fields = {text(k): text(v) for k, v in stored.items()}
        return Profile(
            player_id,
            fields.get("display_name", ""),
            fields.get("locale", ""),
            json.loads(fields.get("issuers", "[]")),
        )

    async def _add_to_list(self, player_id: str, name: str, value: str) -> None:
        profile = keys.player_profile(player_id)
        listed = json.loads(text(await self.redis.hget(profile, name) or b"[]"))
        if value not in listed:
            await self.redis.hset(profile, name, json.dumps([*listed, value]))

    async def sign_in_guest(
        self, device_id: str, device_secret: str, display_name: str, locale: str, client: str
    ) -> SignedIn:
        if not MIN_DEVICE_ID <= len(device_id) <= MAX_DEVICE_ID:
            raise InvalidArgument(
                f"device_id: {MIN_DEVICE_ID} to {MAX_DEVICE_ID} characters", field="device_id"
            )
        if not MIN_DEVICE_SECRET <= len(device_secret) <= MAX_DEVICE_SECRET:
            raise InvalidArgument(
                f"device_secret: {MIN_DEVICE_SECRET} to {MAX_DEVICE_SECRET} characters", field="device_secret"
            )
        check_profile_fields(display_name, locale)
        await self._count("client", client, self.settings.sign_ins_per_client)
        device_key = keys.device(_digest("device", device_id))
        secret_digest = hmac.new(
            self.settings.token_secret, f"device.{device_secret}".encode(), "sha256"
        ).hexdigest()
        created = False
        stored = await self.redis.hmget(device_key, ["player", "secret"])
        if stored[0] is None:
            # A new device: its player first, so the device never names a player that is not there.
            new_player = await self._create(display_name, locale)
            stored = await self._claim_device(keys=[device_key], args=[new_player, secret_digest])
            created = text(stored[0]) == new_player
            if created:
                await self._add_to_list(new_player, "devices", device_key)
            else:  # another first sign-in of this device won
                await self.redis.delete(keys.player_profile(new_player))
        player_id, stored_secret = text(stored[0]), text(stored[1] or b"")
        if not hmac.compare_digest(stored_secret, secret_digest):
            raise Unauthenticated("device_secret: does not match this device's", reason="bad_device_secret")
        await self._count("player", player_id, self.settings.sign_ins_per_window)
        profile = await self.profile(player_id)
        return SignedIn(await self._session(player_id), profile, created)

    async def sign_in_with_provider(
        self, id_token: str, display_name: str, locale: str, current_player: str, client: str
    ) -> SignedIn:
        if self.oidc is None:
            raise FailedPrecondition(
                "id_token: no identity provider is configured on this server (MOGAMES_OIDC_ISSUER)",
                reason="provider_sign_in_off",
            )
        if len(id_token) > MAX_ID_TOKEN:
            raise InvalidArgument(f"id_token: at most {MAX_ID_TOKEN} characters", field="id_token")
        check_profile_fields(display_name, locale)
        await self._count("client", client, self.settings.sign_ins_per_client)
        identity = await self.oidc.verify(id_token)
        identity_key = keys.identity(_digest("oidc", identity.issuer, identity.subject))
        linked = await self.redis.get(identity_key)
        created = False
        if current_player:
            await self.profile(current_player)  # still there
            if linked is not None and text(linked) != current_player:
                raise FailedPrecondition(
                    "id_token: this identity signs in to another player already",
                    reason="identity_linked_elsewhere",
                )
            player_id = current_player
        elif linked is not None and await self.redis.exists(keys.player_profile(text(linked))):
            player_id = text(linked)
        else:
            player_id = await self._create(display_name, locale)
            created = True
        if linked is None or text(linked) != player_id:
            won = await self.redis.set(identity_key, player_id, nx=linked is None, xx=linked is not None)
            if not won:  # another first sign-in with this identity won
                if created:
                    await self.redis.delete(keys.player_profile(player_id))
                raise FailedPrecondition(
                    "id_token: signed in meanwhile by another call; retry", reason="sign_in_race"
                )
        await self._add_to_list(player_id, "identities", identity_key)
        await self._add_to_list(player_id, "issuers", identity.issuer)
        await self._count("player", player_id, self.settings.sign_ins_per_window)
        return SignedIn(await self._session(player_id), await self.profile(player_id), created)

    async def update_profile(self, player_id: str, display_name: str, locale: str) -> Profile:
        check_profile_fields(display_name, locale)
        await self.profile(player_id)
        changes: dict[Any, Any] = {
            k: v for k, v in (("display_name", display_name.strip()), ("locale", locale)) if v
        }
        if changes:
            await self.redis.hset(keys.player_profile(player_id), mapping=changes)
        return await self.profile(player_id)

    async def delete(self, player_id: str) -> None:
        """The player's profile, sign-in keys and match index, and their seats in the matches
        still stored made anonymous; their refresh tokens stop working (their player is gone)
        and expire on their own, and the sessions still held are refused a seat until then."""
        await self.redis.set(keys.player_deleted(player_id), 1, ex=self.settings.session_ttl_s + 60)
        members = await self.redis.zrange(keys.player_matches(player_id), 0, -1)
        for member in members:
            game, _, match_id = text(member).partition("/")
            if game in GAME_PACKAGES:
                await erase_player(MatchStore(self.redis, game), match_id, player_id)
        stored = await self.redis.hmget(keys.player_profile(player_id), ["devices", "identities"])
        for listed in stored:
            for key in json.loads(text(listed or b"[]")):
                owner = (
                    await self.redis.hget(key, "player")
                    if key.startswith(keys.device(""))
                    else await self.redis.get(key)
                )
                if owner is not None and text(owner) == player_id:
                    await self.redis.delete(key)
        await self.redis.delete(
            keys.player_profile(player_id), keys.player_matches(player_id), keys.player_match_facts(player_id)
        )
