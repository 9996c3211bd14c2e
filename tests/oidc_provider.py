"""A stand-in OpenID Connect provider for the tests: key pairs made here, their JWKS served
over HTTP on loopback (or written to a file), ID tokens signed with PyJWT."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://accounts.test.example"
AUDIENCE = "mogames-test-app"
KEY_ID = "test-key-1"


class Provider:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        # Another key pair under the same key id: what a forger holds.
        self.forged_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> str:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return json.dumps({"keys": [{**public, "kid": KEY_ID, "use": "sig", "alg": "RS256"}]})

    def id_token(self, subject: str, key: Any = None, expires_in_s: int = 600, **claims: Any) -> str:
        now = int(time.time())
        body = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": subject,
            "iat": now,
            "exp": now + expires_in_s,
            **claims,
        }
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": KEY_ID})


@contextlib.contextmanager
def serving_jwks(provider: Provider) -> Iterator[str]:
    """The provider's JWKS at an http://127.0.0.1 URL (yielded) while the block runs."""
    body = provider.jwks().encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()
