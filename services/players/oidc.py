"""OpenID Connect ID tokens, verified with PyJWT against the provider's published keys.

The keys come from the provider's JWKS URL (fetched when first needed, kept for a while,
fetched again for a key id not seen yet) or from a JWKS file read at start-up (a malformed
one stops the process). Only asymmetric algorithms are accepted: a token signed with a
shared secret, or not signed, is refused whatever it claims.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from services.runtime.errors import Unauthenticated, Unavailable
from services.runtime.settings import OidcProvider, SettingsError

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
# Clock skew tolerated between the provider and this server.
LEEWAY_S = 30
# How long fetched keys are kept before the URL is read again.
KEYS_LIFESPAN_S = 300
FETCH_TIMEOUT_S = 5


@dataclass(frozen=True)
class Identity:
    issuer: str
    subject: str


def _refused(reason: str, message: str) -> Unauthenticated:
    return Unauthenticated(f"id_token: {message}", reason=reason)


class OidcVerifier:
    def __init__(self, provider: OidcProvider) -> None:
        self.provider = provider
        self._client: jwt.PyJWKClient | None = None
        self._keys: jwt.PyJWKSet | None = None
        if provider.jwks_file:
            try:
                self._keys = jwt.PyJWKSet.from_json(Path(provider.jwks_file).read_text())
            except (jwt.PyJWKError, jwt.PyJWKSetError, ValueError) as error:
                raise SettingsError(f"MOGAMES_OIDC_JWKS_FILE: not a usable JWKS: {error}") from None
        else:
            self._client = jwt.PyJWKClient(
                provider.jwks_url, cache_keys=True, lifespan=KEYS_LIFESPAN_S, timeout=FETCH_TIMEOUT_S
            )

    async def _key(self, token: str) -> Any:
        try:
            key_id = jwt.get_unverified_header(token).get("kid")
        except jwt.DecodeError:
            raise _refused("malformed_id_token", "not a JWT") from None
        if self._keys is not None:
            for key in self._keys.keys:
                if key.key_id == key_id or (key_id is None and len(self._keys.keys) == 1):
                    return key
            raise _refused("unknown_signing_key", f"no key {key_id!r} among the provider's keys")
        assert self._client is not None
        try:
            # PyJWKClient reads the URL synchronously: off the event loop.
            return await asyncio.to_thread(self._client.get_signing_key_from_jwt, token)
        except jwt.PyJWKClientConnectionError:
            raise Unavailable(
                "id_token: the provider's keys could not be fetched; retry", "keys_unavailable"
            ) from None
        except jwt.PyJWKClientError as error:
            raise _refused(
                "unknown_signing_key", f"no matching key among the provider's keys ({error})"
            ) from None
        except jwt.DecodeError:
            raise _refused("malformed_id_token", "not a JWT") from None

    async def verify(self, token: str) -> Identity:
        """The identity an ID token proves; Unauthenticated with the reason it is refused."""
        if not token:
            raise _refused("malformed_id_token", "required")
        key = await self._key(token)
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=ALGORITHMS,
                audience=self.provider.audience,
                issuer=self.provider.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise _refused("id_token_expired", "the ID token has expired; get a fresh one") from None
        except jwt.InvalidAudienceError:
            raise _refused("wrong_audience", f"not issued for audience {self.provider.audience!r}") from None
        except jwt.InvalidIssuerError:
            raise _refused("wrong_issuer", f"not issued by {self.provider.issuer!r}") from None
        except jwt.InvalidSignatureError:
            raise _refused("bad_signature", "its signature does not verify with the provider's key") from None
        except jwt.InvalidAlgorithmError:
            raise _refused(
                "bad_algorithm", f"signed with an algorithm not among {', '.join(ALGORITHMS)}"
            ) from None
        except jwt.InvalidTokenError as error:
            raise _refused("invalid_id_token", str(error)) from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise _refused("invalid_id_token", "sub: required")
        return Identity(claims["iss"], subject)
