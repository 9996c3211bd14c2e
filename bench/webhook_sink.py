"""The webhook receiver of the workers' bench (bench/bench_workers.py), its own process:
``python -m granian --interface asgi bench.webhook_sink:app``. It checks each call's signature, keeps
when it came and the commit time its body names, and answers those at ``GET /figures``."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SECRET = os.environ.get("MOGAMES_WEBHOOK_SECRET", "").encode()
# (Unix ms it came, Unix ms of its commit) per call.
_calls: list[tuple[float, int]] = []
_keys: set[str] = set()
_bad_signatures = 0


async def hook(request: Request) -> Response:
    global _bad_signatures
    body = await request.body()
    expected = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(request.headers.get("mogames-signature", ""), expected):
        _bad_signatures += 1
        return Response(status_code=401)
    notice = json.loads(body)
    _calls.append((time.time() * 1000, int(notice["at_ms"])))
    _keys.add(request.headers["idempotency-key"])
    return Response(status_code=204)


async def figures(_request: Request) -> JSONResponse:
    return JSONResponse({"calls": _calls, "distinct": len(_keys), "bad_signatures": _bad_signatures})


app = Starlette(routes=[Route("/hook", hook, methods=["POST"]), Route("/figures", figures)])
