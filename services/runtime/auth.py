"""Seat tokens: HMAC-signed, bound to one match and one seat, unguessable without the secret.

A token also carries its seat's token generation and its expiry. The generation is
checked against the match record (``tables.check_current``): bumping it in the same
commit that seats a rejoined player or a bot revokes every older token of that seat,
atomically with the match. The expiry is checked here, on this process's clock: it is
days away, so seconds of clock skew between replicas do not matter.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from services.runtime.errors import PermissionDenied, Unauthenticated
from services.runtime.redis_client import text

_VERSION = "v2"
_PARTS = 6


@dataclass(frozen=True)
class SeatGrant:
    """What a valid token grants: a seat, under one token generation, until a time."""

    seat: int
    generation: int
    expires_ms: int


def new_match_id() -> str:
    return secrets.token_urlsafe(16)


def _signature(secret: bytes, body: str) -> str:
    mac = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def issue_token(secret: bytes, match_id: str, seat: int, generation: int, expires_ms: int) -> str:
    body = f"{_VERSION}.{match_id}.{seat}.{generation}.{expires_ms}"
    return f"{body}.{_signature(secret, body)}"


def match_of_token(token: str) -> str:
    """The match id a token names (unchecked: for routing only), or "" if it names none."""
    parts = token.split(".")
    return parts[1] if len(parts) == _PARTS else ""


@functools.lru_cache(maxsize=16_384)
def _signed(secret: bytes, body: str, signature: str) -> bool:
    """Whether ``signature`` signs ``body``: kept per token, since a seat sends the same one
    with every move (a new guess is a new token, still compared in constant time)."""
    return hmac.compare_digest(signature, _signature(secret, body))


def grant_from_token(secret: bytes, token: str, match_id: str, now_ms: int) -> SeatGrant:
    """What a valid, unexpired token grants in ``match_id``; raises for a bad, foreign or
    expired token. Revocation needs the match record: ``tables.check_current``."""
    parts = token.split(".")
    if len(parts) != _PARTS or parts[0] != _VERSION or not all(p.isdigit() for p in parts[2:5]):
        raise Unauthenticated("authorization: malformed seat token")
    body, signature = token.rpartition(".")[::2]
    if not _signed(secret, body, signature):
        raise Unauthenticated("authorization: seat token signature is invalid")
    _, token_match, seat, generation, expires_ms = parts[:5]
    if token_match != match_id:
        raise PermissionDenied(f"authorization: the token is for another match, not {match_id!r}")
    if int(expires_ms) <= now_ms:
        raise Unauthenticated(
            "token_expired: the seat token has expired; RejoinMatch with the seat's rejoin key"
            " issues a fresh one",
            reason="token_expired",
        )
    return SeatGrant(int(seat), int(generation), int(expires_ms))


def seat_from_token(secret: bytes, token: str, match_id: str, now_ms: int) -> int:
    return grant_from_token(secret, token, match_id, now_ms).seat


def bearer_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str | None:
    """The token of an ``authorization: Bearer <token>`` header, or None when absent."""
    for key, value in metadata or ():
        if key == "authorization":
            scheme, _, token = text(value).partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated("authorization: expected 'Bearer <token>'")
            return token.strip()
    return None


# Player sessions (services/players): signed with the same secret as seat tokens, so every
# game service verifies one without asking anybody. A different first part keeps a session
# from ever passing for a seat token, and the other way round.
_SESSION_VERSION = "s1"
_SESSION_PARTS = 4
# The metadata key of a session on game calls (the seat is then bound to the player).
SESSION_METADATA = "mogames-session"


def new_player_id() -> str:
    return secrets.token_urlsafe(16)


def issue_session(secret: bytes, player_id: str, expires_ms: int) -> str:
    body = f"{_SESSION_VERSION}.{player_id}.{expires_ms}"
    return f"{body}.{_signature(secret, body)}"


def player_of_session(secret: bytes, token: str, now_ms: int) -> str:
    """The player id of a valid, unexpired session token; raises Unauthenticated otherwise."""
    parts = token.split(".")
    if len(parts) != _SESSION_PARTS or parts[0] != _SESSION_VERSION or not parts[2].isdigit() or not parts[1]:
        raise Unauthenticated("session: malformed session token", reason="bad_session")
    body, signature = token.rpartition(".")[::2]
    if not _signed(secret, body, signature):
        raise Unauthenticated("session: session token signature is invalid", reason="bad_session")
    if int(parts[2]) <= now_ms:
        raise Unauthenticated(
            "session_expired: the session has expired; RefreshSession with its refresh token",
            reason="session_expired",
        )
    return parts[1]


def session_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str | None:
    """The ``mogames-session`` metadata's token, or None when absent."""
    for key, value in metadata or ():
        if key == SESSION_METADATA:
            token = text(value).strip()
            if token.lower().startswith("bearer "):
                token = token[7:].strip()
            if not token:
                raise Unauthenticated(f"{SESSION_METADATA}: empty session token", reason="bad_session")
            return token
    return None
