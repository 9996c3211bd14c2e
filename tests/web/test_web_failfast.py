"""The web port's calls to a game whose replica is down fail at once with UNAVAILABLE, with
the message and rich details the native port answers in the same case, instead of waiting
out their deadline: Connect and gRPC-Web calls and PlayMatch over a WebSocket alike, for a
replica killed or stopped under a running gateway and for one that was never up. A gateway that has
just started still waits for a live replica's first connection, as natively, and serves
its first calls. Real replica processes, real gateways."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2
from mogames.common.v1 import common_pb2
from mogames.happymochi.v1 import happymochi_pb2
from websockets.asyncio.client import connect

from bench.ws_client import SUBPROTOCOL, SocketCall, header_block, request_frame
from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from services.runtime.settings import GatewaySettings
from tests.conftest import Cluster
from tests.helpers import refusal_of, start_match, wait_until
from tests.test_processes import spawn_service
from tests.web.conftest import PAGE, serving_gateway
from tests.web.wire import WebClient, WireError

GAME = "happy_mochi"
SERVICE = "mogames.happymochi.v1.HappyMochi"
GET, WATCH, PLAY = (f"/{SERVICE}/{name}" for name in ("GetMatch", "WatchMatch", "PlayMatch"))
DEADLINE_S = 30
# Far below the deadline: a call made to wait for the replica would take all of it.
FAST_S = 3.0
# Each way a browser calls, and the native call it is compared with.
WEB_CALLS = {
    "connect unary": "unary",
    "grpc-web unary": "unary",
    "connect stream": "stream",
    "websocket": "play",
}


@dataclass(frozen=True)
class Answer:
    """A call's error as both sides can tell it: Connect's code name, the message, the
    ErrorInfo reason and the RetryInfo delay (0 without one)."""

    code: str
    message: str
    reason: str
    retry_ms: int


def _of_wire(error: WireError) -> Answer:
    retry_ms = 0
    for type_name, value in error.details:
        if type_name == "google.rpc.RetryInfo":
            retry_ms = error_details_pb2.RetryInfo.FromString(value).retry_delay.ToMilliseconds()
    return Answer(error.code, error.message, error.reason, retry_ms)


def _of_grpc(error: grpc.aio.AioRpcError) -> Answer:
    refused = refusal_of(error)
    return Answer(error.code().name.lower(), refused.details, refused.reason, refused.retry_ms)


def _watch(match_id: str) -> happymochi_pb2.PlayMatchRequest:
    return happymochi_pb2.PlayMatchRequest(watch={"match_id": match_id, "after_version": 0})


async def web_call(kind: str, web_port: int, match_id: str, token: str) -> Any:
    """One call of ``kind`` on the web port with a DEADLINE_S deadline: its first message."""
    url = f"http://127.0.0.1:{web_port}"
    if kind == "websocket":
        socket = await connect(
            f"ws://127.0.0.1:{web_port}{PLAY}",
            subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
            open_timeout=10,
        )
        headers = (("authorization", f"Bearer {token}"), ("grpc-timeout", f"{DEADLINE_S}S"))
        await socket.send(header_block(headers))
        await socket.send(request_frame(_watch(match_id).SerializeToString()))
        try:
            async for response in SocketCall(socket, happymochi_pb2.PlayMatchResponse):
                return response
        finally:
            await socket.close()
        return None
    async with httpx.AsyncClient(timeout=DEADLINE_S + 10) as http:
        if kind == "connect stream":
            stream = WebClient(http, url, "connect-json").stream(
                WATCH,
                common_pb2.WatchMatchRequest(match_id=match_id),
                happymochi_pb2.MatchEvent,
                timeout_ms=DEADLINE_S * 1000,
            )
            async for event in stream:
                return event
            return None
        client = WebClient(http, url, "grpc-web" if kind == "grpc-web unary" else "connect-proto")
        request = common_pb2.GetMatchRequest(match_id=match_id)
        return await client.unary(GET, request, common_pb2.Match, timeout_ms=DEADLINE_S * 1000)


async def native_call(kind: str, native_port: int, match_id: str, token: str) -> None:
    """The native counterpart of ``web_call``: GetMatch, WatchMatch or PlayMatch."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{native_port}") as channel:
        if kind == "unary":
            get = channel.unary_unary(GET, request_serializer=common_pb2.GetMatchRequest.SerializeToString)
            await get(common_pb2.GetMatchRequest(match_id=match_id), timeout=DEADLINE_S)
            return
        if kind == "stream":
            watch = channel.unary_stream(
                WATCH, request_serializer=common_pb2.WatchMatchRequest.SerializeToString
            )
            await watch(common_pb2.WatchMatchRequest(match_id=match_id), timeout=DEADLINE_S).read()
            return
        play = channel.stream_stream(
            PLAY, request_serializer=happymochi_pb2.PlayMatchRequest.SerializeToString
        )
        # The gateway routes PlayMatch by its token and refuses before any request, so none is
        # written: a write racing the refusal ends the call INTERNAL on grpc's Python client
        # (a send into a stream the server has just closed), hiding the status it was sent.
        call = play(metadata=(("authorization", f"Bearer {token}"),), timeout=DEADLINE_S)
        await call.read()
        call.cancel()


async def refused(call: object) -> tuple[Answer, float]:
    """How a call (a coroutine) fails, and in how many seconds."""
    started = time.monotonic()
    try:
        await call  # type: ignore[misc]
    except WireError as error:
        return _of_wire(error), time.monotonic() - started
    except grpc.aio.AioRpcError as error:
        return _of_grpc(error), time.monotonic() - started
    raise AssertionError("the call succeeded while its replica is down")


@contextlib.asynccontextmanager
async def gateway_before(address: str, redis_url: str) -> AsyncIterator[tuple[int, int]]:
    """A new gateway (its native port, its web port) in front of the replica at ``address``;
    it has not reached the replica yet (no health round runs in it)."""
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={GAME: (address,)},
        shutdown_grace_s=1,
        log_level="warning",
        redis_url=redis_url,
        web_listen="127.0.0.1:0",
        web_root=str(PAGE),
    )
    async with serving_gateway(settings) as (native_port, web):
        yield native_port, web.port


@pytest.mark.alone
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
async def test_a_replica_gone_answers_unavailable_at_once_as_natively(
    stop: signal.Signals, redis_url: str, tmp_path: Path
):
    address = f"127.0.0.1:{free_port()}"
    replica = spawn_service(
        GAME, address, redis_url, tmp_path / "replica.log", {"MOGAMES_ALLOW_CLIENT_SEED": "true"}
    )
    try:
        wait_for_port(int(address.rsplit(":", 1)[1]), 30)
        async with gateway_before(address, redis_url) as (native_port, web_port):
            async with grpc.aio.insecure_channel(f"127.0.0.1:{native_port}") as channel:
                started = await start_match(GameClient(channel, GAME), 2)
            replica.send_signal(stop)
            replica.wait(timeout=30)
            match_id, token = started.match_id, started.tokens[0]

            async def gone_natively() -> bool:
                answer, _took_s = await refused(native_call("unary", native_port, match_id, token))
                return answer.reason == "no_replica"

            # Once the gateway has seen its connection close (its channel no longer ready).
            await wait_until(gone_natively, "the native port answering no_replica", timeout_s=10)
            for kind, native_kind in WEB_CALLS.items():
                answer, took_s = await refused(web_call(kind, web_port, match_id, token))
                natively, native_took_s = await refused(
                    native_call(native_kind, native_port, match_id, token)
                )
                assert answer.code == "unavailable", (kind, answer)
                assert answer == natively, (kind, answer, natively)
                assert answer.reason == "no_replica" and answer.retry_ms > 0, (kind, answer)
                assert took_s < FAST_S and native_took_s < FAST_S, (kind, took_s, native_took_s)
            # Connect's HTTP mapping of unavailable: 503.
            with pytest.raises(WireError) as error:
                await web_call("connect unary", web_port, match_id, token)
            assert error.value.http_status == 503, error.value
    finally:
        if replica.poll() is None:
            replica.kill()
        replica.wait()


@pytest.mark.alone
async def test_a_replica_never_up_answers_unavailable_at_once_as_natively(redis_url: str):
    """The first call of a gateway whose replica is not there: the channel's first connection
    fails, and the call with it, as when the gateway knows the replica is down."""
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    match_id, token = "no-such-match", "not-a-token"
    for kind, native_kind in WEB_CALLS.items():
        async with gateway_before(address, redis_url) as (_native_port, web_port):
            answer, took_s = await refused(web_call(kind, web_port, match_id, token))
        async with gateway_before(address, redis_url) as (native_port, _web_port):
            natively, native_took_s = await refused(native_call(native_kind, native_port, match_id, token))
        assert answer.code == "unavailable", (kind, answer)
        assert answer == natively, (kind, answer, natively)
        assert answer.reason == "no_replica" and answer.retry_ms > 0, (kind, answer)
        assert took_s < FAST_S and native_took_s < FAST_S, (kind, took_s, native_took_s)


async def test_a_starting_gateway_serves_its_first_calls_once_its_replica_connects(
    cluster: Cluster, redis_url: str
):
    """Fail-fast is not fail-at-start: each new gateway's first call (its channel to the
    replica still connecting) waits for that connection and is served."""
    started = await start_match(cluster.client(GAME), 2)
    match = await cluster.client(GAME).match(started.match_id)
    address = cluster.replicas_addresses[GAME][0]
    for kind in WEB_CALLS:
        async with gateway_before(address, redis_url) as (_native_port, web_port):
            served = await asyncio.wait_for(
                web_call(kind, web_port, match.match_id, started.tokens[0]), DEADLINE_S
            )
            assert served is not None, kind
