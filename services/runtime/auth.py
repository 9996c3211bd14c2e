"""Seat tokens: HMAC-signed, bound to one match and one seat, unguessable without the secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from services.runtime.errors import PermissionDenied, Unauthenticated

_VERSION = "v1"


def new_match_id() -> str:
    return secrets.token_urlsafe(16)


def _signature(secret: bytes, match_id: str, seat: int) -> str:
    mac = hmac.new(secret, f"{_VERSION}.{match_id}.{seat}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def issue_token(secret: bytes, match_id: str, seat: int) -> str:
    return f"{_VERSION}.{match_id}.{seat}.{_signature(secret, match_id, seat)}"


def seat_from_token(secret: bytes, token: str, match_id: str) -> int:
    """The seat a valid token grants in ``match_id``; raises for a bad or foreign token."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != _VERSION or not parts[2].isdigit():
        raise Unauthenticated("authorization: malformed seat token")
    _, token_match, seat_text, signature = parts
    seat = int(seat_text)
    if not hmac.compare_digest(signature, _signature(secret, token_match, seat)):
        raise Unauthenticated("authorization: seat token signature is invalid")
    if token_match != match_id:
        raise PermissionDenied(f"authorization: the token is for another match, not {match_id!r}")
    return seat


def bearer_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str | None:
    """The token of an ``authorization: Bearer <token>`` header, or None when absent."""
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated("authorization: expected 'Bearer <token>'")
            return token.strip()
    return None
