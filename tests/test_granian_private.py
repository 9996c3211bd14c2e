"""The granian hook of gateway/granian_private.py holds for the installed release: it is the
pinned one, and a socket bound beforehand (port 0, learnt before serving) is the one served.
An upgrade of granian that changes the hook fails here, by name, before the web port does."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import granian
import httpx
from granian.constants import HTTPModes, Interfaces
from granian.log import LogLevels

from gateway.granian_private import PINNED, BoundGranian

ROOT = Path(__file__).resolve().parent.parent


def test_the_installed_granian_is_the_one_the_hook_was_written_for() -> None:
    pinned = re.search(r"^granian==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned is not None, "requirements.txt pins no granian"
    assert pinned.group(1) == PINNED == granian.__version__


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"served"})


async def test_a_socket_bound_beforehand_is_the_one_served() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    server = BoundGranian(
        sock, _hello, backlog=16, interface=Interfaces.ASGINL, http=HTTPModes.auto, log_level=LogLevels.error
    )
    serving = asyncio.create_task(server.serve())
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(100):
                try:
                    answer = await http.get(f"http://127.0.0.1:{port}/", timeout=5)
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"nothing served on the socket bound to port {port}")
        assert (answer.status_code, answer.text) == (200, "served")
    finally:
        server.stop()
        await asyncio.wait_for(serving, 10)
