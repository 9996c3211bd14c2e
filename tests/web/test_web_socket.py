"""PlayMatch over a WebSocket on the web port (gateway/web_socket.py, the framing of
improbable-eng/grpc-web's websocket transport): a whole match played on two WebSocket seats;
a bad, foreign or revoked token refused with the status and rich details native PlayMatch
gives; a page of a foreign origin refused at the handshake; the framing's limits; and a
stream whose replica stops or vanishes ended UNAVAILABLE, the browser's cue to reconnect."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from mogames.happymochi.v1 import happymochi_pb2
from playwright.async_api import Browser
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from bench.ws_client import SUBPROTOCOL, SocketCall, SocketGameClient, header_block, open_play, request_frame
from clients.bot import play_match
from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from gateway.server import build as build_gateway
from gateway.web import WebServer, own_listener, start_web
from services.runtime.settings import GatewaySettings, InputLimits
from tests.conftest import Cluster
from tests.helpers import bounded, refusal_of, start_match, wait_until
from tests.test_gateway_tls import _self_signed as self_signed
from tests.test_processes import spawn_service
from tests.web.conftest import ALLOWED_ORIGIN, PAGE, ROOT, WebStack, serving_web

GAME = "happy_mochi"
SERVICE = "mogames.happymochi.v1.HappyMochi"
PLAY = f"/{SERVICE}/PlayMatch"
Response = happymochi_pb2.PlayMatchResponse
# The gateway's shutdown grace: a stream handed over ends long before it.
GRACE_S = 30


def socket_url(web: WebStack, path: str = PLAY) -> str:
    return web.url.replace("http", "ws", 1) + path


def watch(match_id: str) -> happymochi_pb2.PlayMatchRequest:
    return happymochi_pb2.PlayMatchRequest(watch={"match_id": match_id, "after_version": 0})


async def first_response(call: SocketCall) -> Response:
    async for response in call:
        return response
    raise AssertionError("the stream ended without a response")


async def ending(call: SocketCall) -> grpc.aio.AioRpcError:
    """The error the stream ends with (reading every response until then)."""
    try:
        async with asyncio.timeout(30):
            async for _response in call:
                pass
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the stream ended OK")


def reason(error: grpc.aio.AioRpcError) -> str:
    return refusal_of(error).reason


async def test_a_match_is_played_to_the_end_on_two_websocket_seats(web_stack: WebStack) -> None:
    client = SocketGameClient(web_stack.cluster.gateway, GAME, web_stack.url)
    played = await play_match(client, 2, seed=11, one_stream=True, until=time.monotonic() + 120)
    assert played.finished and played.moves > 10, played
    assert played.cut_codes == []
    match = await GameClient(web_stack.cluster.gateway, GAME).match(played.match_id)
    assert match.version >= played.moves and match.winners


async def ending_natively(native: GameClient, match_id: str, token: str) -> grpc.aio.AioRpcError:
    call = await native.play(match_id, token, after_version=0)
    try:
        async for _response in call:
            pass
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the native stream ended OK")


async def test_a_bad_foreign_or_revoked_token_is_refused_as_natively(web_stack: WebStack) -> None:
    native = GameClient(web_stack.cluster.gateway, GAME)
    match = await native.create(2, seed=3)
    seats = [await native.join(match.match_id, f"player-{n}") for n in range(2)]
    other = await start_match(native, 2)
    for token, code, why in (
        ("not-a-token", grpc.StatusCode.UNAUTHENTICATED, "unauthenticated"),
        (other.tokens[0], grpc.StatusCode.PERMISSION_DENIED, "permission_denied"),
    ):
        call = await open_play(socket_url(web_stack), token, Response)
        await call.write(watch(match.match_id))
        error = await ending(call)
        assert (error.code(), reason(error)) == (code, why), error
        native_error = await ending_natively(native, match.match_id, token)
        assert (native_error.code(), native_error.details()) == (error.code(), error.details())

    # A stream open when its seat is rejoined elsewhere ends token_revoked; so does a new one.
    call = await open_play(socket_url(web_stack), seats[0].token, Response)
    await call.write(watch(match.match_id))
    await first_response(call)
    await native.rejoin(match.match_id, seats[0].rejoin_key)
    error = await ending(call)
    assert (error.code(), reason(error)) == (grpc.StatusCode.UNAUTHENTICATED, "token_revoked"), error
    again = await open_play(socket_url(web_stack), seats[0].token, Response)
    await again.write(watch(match.match_id))
    error = await ending(again)
    assert (error.code(), reason(error)) == (grpc.StatusCode.UNAUTHENTICATED, "token_revoked"), error


async def test_a_page_of_a_foreign_origin_is_refused_at_the_handshake(web_stack: WebStack) -> None:
    native = GameClient(web_stack.cluster.gateway, GAME)
    started = await start_match(native, 2)
    for origin in ("http://foreign.example", "http://127.0.0.1:1"):
        with pytest.raises(InvalidStatus) as refused:
            await open_play(socket_url(web_stack), started.tokens[0], Response, origin=origin)
        assert refused.value.response.status_code == 403
    # Another subprotocol than the framing's is refused too.
    with pytest.raises(InvalidStatus):
        await connect(socket_url(web_stack), subprotocols=["chat"])  # type: ignore[list-item]
    # The listed origin, the web port's own page, and a client that is no browser are served.
    for origin in (ALLOWED_ORIGIN, web_stack.url, None):
        call = await open_play(socket_url(web_stack), started.tokens[0], Response, origin=origin)
        await call.write(watch(started.match_id))
        assert (await first_response(call)).events
        call.cancel()


async def test_a_browser_gone_without_a_word_releases_its_seats_stream(web_stack: WebStack) -> None:
    native = GameClient(web_stack.cluster.gateway, GAME)
    started = await start_match(native, 2)
    call = await open_play(socket_url(web_stack), started.tokens[0], Response)
    await call.write(watch(started.match_id))
    await first_response(call)

    async def seat_connected(connected: bool) -> bool:
        return (await native.match(started.match_id)).seats[0].connected is connected

    await wait_until(lambda: seat_connected(True), "the seat counted as connected")
    call.socket.transport.abort()  # the tab is gone: no close frame, the connection reset
    await wait_until(lambda: seat_connected(False), "the replica's stream released", timeout_s=20)


async def test_a_web_port_serving_https_carries_the_stream_over_wss(cluster: Cluster, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={GAME: tuple(cluster.replicas_addresses[GAME])},
        shutdown_grace_s=1,
        log_level="warning",
        tls_cert=str(cert),
        tls_key=str(key),
        web_listen="127.0.0.1:0",
        web_root=str(PAGE),
    )
    gateway, _checker, pools, port = await build_gateway(settings)
    own = own_listener(gateway)
    await gateway.start()
    web = await start_web(settings, pools, port, own)
    assert web is not None
    try:
        started = await start_match(cluster.client(GAME), 2)
        tls = ssl.create_default_context(cafile=str(cert))
        url = f"wss://localhost:{web.port}{PLAY}"
        call = await open_play(
            url, started.tokens[0], Response, origin=f"https://localhost:{web.port}", tls=tls
        )
        await call.write(watch(started.match_id))
        assert (await first_response(call)).events
        call.cancel()
    finally:
        await bounded(web.stop(), "stopping the web port")
        await bounded(gateway.stop(None), "stopping the gateway")
        for pool in pools:
            await bounded(pool.close(), "closing a replica pool")


def documented_client() -> str:
    """The browser client of docs/protocol.md ("PlayMatch from a browser"), as written there."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text[text.index("### PlayMatch from a browser") :]
    return section[section.index("```js\n") + len("```js\n") : section.index("\n```", section.index("```js"))]


# Runs the documented client in the page: sends the watch, closes the stream after the first
# response if asked; resolves with the responses' bytes and how the stream ended.
_PLAY_IN_PAGE = """async ([url, token, watch, closeAfterFirst]) => {
  %s
  const responses = [];
  return await new Promise((resolve) => {
    const play = openPlay(url, token, (bytes) => {
      responses.push(Array.from(bytes));
      if (closeAfterFirst) play.close();
    }, (code, message, trailers) => resolve({responses, code, message, trailers}));
    play.send(new Uint8Array(watch));
    setTimeout(() => resolve({responses, code: -1, message: "no end in time", trailers: {}}), 10000);
  });
}"""


async def test_a_browser_plays_on_the_documented_client(web_stack: WebStack, browser: Browser) -> None:
    native = GameClient(web_stack.cluster.gateway, GAME)
    started = await start_match(native, 2)
    page = await browser.new_page()
    try:
        await page.goto(web_stack.url)  # the web port's own page: its Origin is allowed
        script = _PLAY_IN_PAGE % documented_client()
        request = list(watch(started.match_id).SerializeToString())
        # A bad token: the status, message and rich details reach the page.
        refused = await page.evaluate(script, [socket_url(web_stack), "not-a-token", request, False])
        assert refused["code"] == grpc.StatusCode.UNAUTHENTICATED.value[0] and refused["message"], refused
        assert refused["responses"] == [] and "grpc-status-details-bin" in refused["trailers"]
        # The seat's token: the watch's first response (the match so far, the prompt).
        played = await page.evaluate(script, [socket_url(web_stack), started.tokens[0], request, True])
        first = Response.FromString(bytes(played["responses"][0]))
        assert first.events and first.events[0].version == 0, first
        assert played["code"] == grpc.StatusCode.UNAVAILABLE.value[0]  # closed by the page itself
    finally:
        await page.close()


async def raw_ending(web: WebStack, path: str, *messages: bytes | str) -> grpc.aio.AioRpcError:
    """The status a stream at ``path`` ends with after ``messages`` (the first: headers)."""
    socket = await connect(socket_url(web, path), subprotocols=[SUBPROTOCOL])  # type: ignore[list-item]
    for message in messages:
        await socket.send(message)
    return await ending(SocketCall(socket, Response))


async def test_the_framing_and_its_limits_are_enforced(web_stack: WebStack) -> None:
    native = GameClient(web_stack.cluster.gateway, GAME)
    started = await start_match(native, 2)
    headers = header_block((("authorization", f"Bearer {started.tokens[0]}"),))
    first = request_frame(watch(started.match_id).SerializeToString())
    limit = InputLimits().max_message_bytes
    for path, messages, code in (
        (f"/{SERVICE}/GetMatch", (headers,), grpc.StatusCode.UNIMPLEMENTED),
        # A frame saying it is over the limit is refused before it is read.
        (
            PLAY,
            (headers, first, b"\x00\x00" + (limit + 1).to_bytes(4, "big")),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        ),
        (PLAY, (headers, request_frame(bytes(limit + 1))), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (PLAY, (headers, first, "a text frame"), grpc.StatusCode.INVALID_ARGUMENT),
        (PLAY, (headers, first[:1] + b"\x01" + first[2:]), grpc.StatusCode.INVALID_ARGUMENT),
        (PLAY, ("authorization Bearer", first), grpc.StatusCode.INVALID_ARGUMENT),
        (PLAY, (headers, b"\x00" + request_frame(b"\xff\xff")[1:]), grpc.StatusCode.INVALID_ARGUMENT),
    ):
        error = await raw_ending(web_stack, path, *messages)
        assert error.code() == code, (path, messages[-1][:20], error)
    # A request split over two messages is read whole.
    socket = await connect(socket_url(web_stack), subprotocols=[SUBPROTOCOL])  # type: ignore[list-item]
    await socket.send(headers)
    await socket.send(first[:4])
    await socket.send(b"\x00" + first[4:])
    call = SocketCall(socket, Response)
    assert (await first_response(call)).events
    call.cancel()


@contextlib.asynccontextmanager
async def web_port_before(address: str, redis_url: str) -> AsyncIterator[WebServer]:
    """A gateway with its web port on in front of the one replica at ``address``."""
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={GAME: (address,)},
        shutdown_grace_s=GRACE_S,
        log_level="warning",
        redis_url=redis_url,
        web_listen="127.0.0.1:0",
        web_root=str(PAGE),
    )
    async with serving_web(settings) as web:
        yield web


@pytest.mark.parametrize("stop", ["replica stopped", "replica killed", "gateway stopped"])
async def test_a_stream_cut_by_its_replica_or_gateway_ends_unavailable_at_once(
    stop: str, redis_url: str, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{free_port()}"
    replica = spawn_service(
        GAME, address, redis_url, tmp_path / "replica.log", {"MOGAMES_ALLOW_CLIENT_SEED": "true"}
    )
    try:
        wait_for_port(int(address.rsplit(":", 1)[1]), 30)
        async with web_port_before(address, redis_url) as web, grpc.aio.insecure_channel(address) as channel:
            started = await start_match(GameClient(channel, GAME), 2)
            calls = []
            for token in started.tokens.values():
                calls.append(await open_play(f"ws://127.0.0.1:{web.port}{PLAY}", token, Response))
                await calls[-1].write(watch(started.match_id))
                await first_response(calls[-1])
            cut_at = time.monotonic()
            if stop == "gateway stopped":
                stopping = asyncio.create_task(web.stop())
            else:
                replica.send_signal(signal.SIGTERM if stop == "replica stopped" else signal.SIGKILL)
            for call in calls:
                error = await ending(call)
                assert error.code() == grpc.StatusCode.UNAVAILABLE, error
                if stop != "replica killed":  # handed over: the reason says so
                    assert reason(error) == "stream_cut", error
            # At once, not after the gateway's grace.
            assert time.monotonic() - cut_at < GRACE_S / 2
            if stop == "gateway stopped":
                await stopping
    finally:
        if replica.poll() is None:
            replica.kill()
        replica.wait()
