"""A browser tab, as a process of its own: ``python -m tests.web.departing_browser URL
MATCH_ID TOKEN N`` opens N HTTP/2 connections to the web port, each watching the match,
prints "watching" once every watch has its first event, and waits to be killed: its
connections then go as a closed tab's do, with no HTTP/2 goodbye."""

from __future__ import annotations

import asyncio
import sys

import httpx
from mogames.common.v1 import common_pb2
from mogames.happymochi.v1 import happymochi_pb2

from tests.web.wire import WebClient

SERVICE = "/mogames.happymochi.v1.HappyMochi"


async def main(url: str, match_id: str, token: str, count: int) -> None:
    watches = []
    for _ in range(count):
        http = httpx.AsyncClient(http1=False, http2=True, timeout=20)
        watch = WebClient(http, url, "connect-proto").stream(
            f"{SERVICE}/WatchMatch",
            common_pb2.WatchMatchRequest(match_id=match_id, after_version=0),
            happymochi_pb2.MatchEvent,
            token=token,
        )
        await anext(watch)
        watches.append(watch)
    print("watching", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
