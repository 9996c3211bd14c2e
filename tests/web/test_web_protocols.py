"""The web port speaks Connect (JSON and binary) and gRPC-Web for every RPC: unary calls with
the seat's token, WatchMatch streams that resume, errors with their rich details, deadlines,
HTTP/2, CORS, and a browser that goes away releasing the service's stream."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import redis.asyncio as aioredis
from grpc_health.v1 import health_pb2
from mogames.common.v1 import common_pb2
from mogames.happymochi.v1 import happymochi_pb2
from mogames.lobby.v1 import lobby_pb2

from deploy.redis_server import free_port
from gateway.backends import ReplicaPool
from gateway.web import GZIP_MIN_BYTES, _GzipLarge, web_app
from services.runtime import keys
from tests.web.conftest import ALLOWED_ORIGIN, WebStack
from tests.web.wire import PROTOCOLS, WebClient, WireError

SERVICE = "/mogames.happymochi.v1.HappyMochi"


@pytest.fixture(params=PROTOCOLS)
async def web(request: pytest.FixtureRequest, web_stack: WebStack) -> AsyncIterator[WebClient]:
    async with httpx.AsyncClient(timeout=20) as http:
        yield WebClient(http, web_stack.url, request.param)


async def started_match(web: WebClient) -> tuple[str, dict[int, str]]:
    match = await web.unary(
        f"{SERVICE}/CreateMatch", happymochi_pb2.CreateMatchRequest(players=2, seed=7), common_pb2.Match
    )
    tokens = {}
    for n in range(2):
        joined = await web.unary(
            f"{SERVICE}/JoinMatch",
            common_pb2.JoinMatchRequest(match_id=match.match_id, player_name=f"web-{n}"),
            common_pb2.JoinMatchResponse,
        )
        tokens[joined.seat] = joined.token
    return match.match_id, tokens


def is_history(event: Any) -> bool:
    return event.WhichOneof("event") not in ("prompt", "heartbeat")


async def history(web: WebClient, request: common_pb2.WatchMatchRequest, until_version: int) -> list[Any]:
    """History events of a watch, up to and including the first of ``until_version``."""
    seen: list[Any] = []
    stream = web.stream(f"{SERVICE}/WatchMatch", request, happymochi_pb2.MatchEvent)
    async with contextlib.aclosing(stream):
        async for event in stream:
            if is_history(event):
                seen.append(event)
                if event.version >= until_version:
                    break
    return seen


async def play(web: WebClient, match_id: str, tokens: dict[int, str], moves: int) -> None:
    """The active seat's first legal move, ``moves`` times."""
    for _ in range(moves):
        match = await web.unary(
            f"{SERVICE}/GetMatch", common_pb2.GetMatchRequest(match_id=match_id), common_pb2.Match
        )
        seat = match.active_seats[0]
        legal = await web.unary(
            f"{SERVICE}/ListLegalMoves",
            common_pb2.ListLegalMovesRequest(match_id=match_id),
            happymochi_pb2.ListLegalMovesResponse,
            token=tokens[seat],
        )
        await web.unary(
            f"{SERVICE}/SubmitMove",
            happymochi_pb2.SubmitMoveRequest(match_id=match_id, move=legal.moves[0]),
            happymochi_pb2.SubmitMoveResponse,
            token=tokens[seat],
        )


async def test_unary_calls_carry_the_seat_token(web: WebClient) -> None:
    match_id, tokens = await started_match(web)
    match = await web.unary(
        f"{SERVICE}/GetMatch", common_pb2.GetMatchRequest(match_id=match_id), common_pb2.Match
    )
    assert match.status == common_pb2.IN_PROGRESS and match.game == "happy_mochi"
    view = await web.unary(
        f"{SERVICE}/GetView",
        common_pb2.GetViewRequest(match_id=match_id),
        happymochi_pb2.View,
        token=tokens[1],
    )
    assert view.seat == 1 and len(view.hand) > 0
    games = await web.unary(
        "/mogames.lobby.v1.Lobby/ListGames", lobby_pb2.ListGamesRequest(), lobby_pb2.ListGamesResponse
    )
    assert {g.name for g in games.games} >= {"happy_mochi"}
    health = await web.unary(
        "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest(), health_pb2.HealthCheckResponse
    )
    assert health.status == health_pb2.HealthCheckResponse.SERVING


async def test_a_matchs_calls_go_to_one_replica(web_stack: WebStack) -> None:
    """As on the native port, every call about a match goes to the replica its id hashes to,
    whose decoded state of it stays warm: no other replica ever reads it."""
    replicas = [service.scheduler.service for service in web_stack.cluster.services["happy_mochi"]]
    assert len(replicas) == 2
    async with httpx.AsyncClient(timeout=20) as http:
        web = WebClient(http, web_stack.url, "connect-proto")
        for _ in range(4):
            match_id, tokens = await started_match(web)
            await play(web, match_id, tokens, 3)
            holding = [n for n, replica in enumerate(replicas) if replica.cache.peek(match_id) is not None]
            assert len(holding) == 1, f"match {match_id} read by replicas {holding}"


async def test_watch_resumes_after_the_last_event_seen(web: WebClient) -> None:
    match_id, tokens = await started_match(web)
    await play(web, match_id, tokens, 2)
    # From the first event of version 1 (after_seq 0), the deal and joins of version 0 skipped.
    first = await history(web, common_pb2.WatchMatchRequest(match_id=match_id, after_version=1), 2)
    assert first[0].version == 1 and first[-1].version == 2
    cursor = [e for e in first if e.version == 1][-1]
    resumed = await history(
        web,
        common_pb2.WatchMatchRequest(match_id=match_id, after_version=cursor.version, after_seq=cursor.seq),
        2,
    )
    # Exactly where the first watch was after its cursor: nothing missed, nothing repeated.
    assert resumed == [first[-1]]


async def test_a_refused_move_comes_back_with_its_rule(web: WebClient) -> None:
    match_id, tokens = await started_match(web)
    match = await web.unary(
        f"{SERVICE}/GetMatch", common_pb2.GetMatchRequest(match_id=match_id), common_pb2.Match
    )
    active = match.active_seats[0]
    legal = await web.unary(
        f"{SERVICE}/ListLegalMoves",
        common_pb2.ListLegalMovesRequest(match_id=match_id),
        happymochi_pb2.ListLegalMovesResponse,
        token=tokens[active],
    )
    move = happymochi_pb2.SubmitMoveRequest(match_id=match_id, move=legal.moves[0])
    with pytest.raises(WireError) as refused:
        await web.unary(
            f"{SERVICE}/SubmitMove", move, happymochi_pb2.SubmitMoveResponse, token=tokens[1 - active]
        )
    assert refused.value.code == "failed_precondition"
    assert refused.value.reason == "not_your_turn"
    after = await web.unary(
        f"{SERVICE}/GetMatch", common_pb2.GetMatchRequest(match_id=match_id), common_pb2.Match
    )
    assert after.version == match.version
    # GetView without a token is a spectator's; a seat call without one is refused.
    with pytest.raises(WireError) as unauthenticated:
        await web.unary(
            f"{SERVICE}/ListLegalMoves",
            common_pb2.ListLegalMovesRequest(match_id=match_id),
            happymochi_pb2.ListLegalMovesResponse,
        )
    assert unauthenticated.value.code == "unauthenticated"


async def test_a_stream_error_carries_its_details(web: WebClient) -> None:
    with pytest.raises(WireError) as missing:
        await history(web, common_pb2.WatchMatchRequest(match_id="0" * 32), 1)
    assert missing.value.code == "not_found"
    assert missing.value.reason


async def test_the_client_deadline_reaches_the_watch(web: WebClient) -> None:
    match_id, _tokens = await started_match(web)
    started = time.monotonic()
    stream = web.stream(
        f"{SERVICE}/WatchMatch",
        common_pb2.WatchMatchRequest(match_id=match_id),
        happymochi_pb2.MatchEvent,
        timeout_ms=1500,
    )
    with pytest.raises(WireError) as expired:
        async for _event in stream:
            pass
    assert expired.value.code == "deadline_exceeded"
    assert time.monotonic() - started < 10


async def test_http2_cleartext(web_stack: WebStack) -> None:
    async with httpx.AsyncClient(http1=False, http2=True, timeout=20) as http:
        client = WebClient(http, web_stack.url, "connect-proto")
        match_id, tokens = await started_match(client)
        await play(client, match_id, tokens, 1)
        events = await history(client, common_pb2.WatchMatchRequest(match_id=match_id, after_version=1), 1)
        reply = await http.post(
            f"{web_stack.url}{SERVICE}/GetMatch",
            json={"matchId": match_id},
            headers={"connect-protocol-version": "1"},
        )
    assert reply.http_version == "HTTP/2"
    assert reply.json()["status"] == "IN_PROGRESS"
    assert events[0].version == 1


async def test_64_bit_fields_are_json_strings(web_stack: WebStack) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        client = WebClient(http, web_stack.url, "connect-json")
        match_id, tokens = await started_match(client)
        await play(client, match_id, tokens, 1)
        reply = await http.post(
            f"{web_stack.url}{SERVICE}/GetMatch",
            json={"matchId": match_id},
            headers={"connect-protocol-version": "1"},
        )
    assert reply.json()["version"] == "1"


async def test_cors_allows_only_the_configured_origins(web_stack: WebStack) -> None:
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,connect-protocol-version",
    }
    async with httpx.AsyncClient(timeout=20) as http:
        allowed = await http.options(
            f"{web_stack.url}{SERVICE}/GetView", headers={"origin": ALLOWED_ORIGIN, **preflight}
        )
        other = await http.options(
            f"{web_stack.url}{SERVICE}/GetView", headers={"origin": "http://elsewhere.example", **preflight}
        )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-origin" not in other.headers


async def _stream_is_read(redis_url: str, match_id: str, window_s: float) -> bool:
    """Whether some service watches the match within ``window_s``: the watch hub of a
    replica serving a watch subscribes the match's notification channel."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + window_s
        while True:
            [(_channel, count)] = await client.pubsub_numsub(keys.notify(match_id))
            if count or time.monotonic() >= deadline:
                return bool(count)
            await asyncio.sleep(0.1)
    finally:
        await client.aclose()


async def test_a_browser_that_goes_away_releases_the_watch(web_stack: WebStack, redis_url: str) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        client = WebClient(http, web_stack.url, "connect-json")
        match_id, tokens = await started_match(client)
        await play(client, match_id, tokens, 1)
        stream = client.stream(
            f"{SERVICE}/WatchMatch",
            common_pb2.WatchMatchRequest(match_id=match_id, after_version=0),
            happymochi_pb2.MatchEvent,
        )
        await anext(stream)
        assert await _stream_is_read(redis_url, match_id, 5), "the watch is not being served"
        # The tab closes: the HTTP connection goes away mid-stream.
        await stream.aclose()
    deadline = time.monotonic() + 10
    while await _stream_is_read(redis_url, match_id, 0.0):
        assert time.monotonic() < deadline, "the service still serves the closed watch after 10 s"
        await asyncio.sleep(0.2)


async def test_the_page_has_an_icon(web_stack: WebStack) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        icon = await http.get(f"{web_stack.url}/favicon.ico")
    assert icon.status_code == 200
    # An ICO file: reserved 0, type 1 (icon), at least one image.
    assert icon.content[:4] == b"\x00\x00\x01\x00" and icon.content[4] >= 1


async def test_small_answers_go_uncompressed(web_stack: WebStack) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        client = WebClient(http, web_stack.url, "connect-proto")
        match_id, _tokens = await started_match(client)
        reply = await http.post(
            f"{web_stack.url}{SERVICE}/GetMatch",
            content=common_pb2.GetMatchRequest(match_id=match_id).SerializeToString(),
            headers={"content-type": "application/proto", "accept-encoding": "gzip"},
        )
    assert reply.status_code == 200
    assert len(reply.content) < GZIP_MIN_BYTES
    assert reply.headers.get("content-encoding", "identity") == "identity"
    assert common_pb2.Match.FromString(reply.content).match_id == match_id


async def test_large_answers_are_gzipped_for_browsers_that_accept_it() -> None:
    large, small = b"x" * GZIP_MIN_BYTES, b"x" * (GZIP_MIN_BYTES - 1)

    async def answer(scope: Any, receive: Any, send: Any) -> None:
        accepted = dict(scope["headers"]).get(b"accept-encoding", b"")
        assert b"gzip" not in accepted, "the server would gzip it whatever its size"
        headers = [(b"content-encoding", b"identity")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = large if scope["path"] == "/large" else small
        await send({"type": "http.response.body", "body": body, "more_body": False})

    transport = httpx.ASGITransport(app=_GzipLarge(answer))
    async with httpx.AsyncClient(transport=transport, base_url="http://web") as http:
        gzipped = await http.post("/large", headers={"accept-encoding": "gzip"})
        plain = await http.post("/small", headers={"accept-encoding": "gzip"})
    assert gzipped.headers["content-encoding"] == "gzip" and gzipped.content == large
    assert plain.headers["content-encoding"] == "identity" and plain.content == small


async def test_no_replica_up_is_unavailable_with_its_reason(tmp_path: Path) -> None:
    """As on the native port: once a game's replicas are all down, the web port answers
    UNAVAILABLE within about a second, naming why, rather than holding the browser's call
    until its deadline."""
    replica = grpc.aio.server()
    port = replica.add_insecure_port("127.0.0.1:0")
    await replica.start()
    pool = ReplicaPool("mogames.happymochi.v1.HappyMochi", (f"127.0.0.1:{port}",))
    own = grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}")
    transport = httpx.ASGITransport(app=web_app([pool], own, (), tmp_path))
    try:
        await pool.replicas[0].channel.channel_ready()
        assert pool.ready() == pool.replicas  # it connected: now it goes down
        await replica.stop(None)
        async with httpx.AsyncClient(transport=transport, base_url="http://web") as http:
            started = time.monotonic()
            answer = await http.post(
                f"{SERVICE}/GetMatch",
                content=common_pb2.GetMatchRequest(match_id="m").SerializeToString(),
                headers={"content-type": "application/proto", "connect-timeout-ms": "20000"},
            )
            waited_s = time.monotonic() - started
    finally:
        await pool.close()
        await own.close()
    error = answer.json()
    assert answer.status_code == 503 and error["code"] == "unavailable", error
    assert "no replica is reachable" in error["message"]
    assert error["details"][0]["type"] == "google.rpc.ErrorInfo"
    assert waited_s < 10, waited_s
