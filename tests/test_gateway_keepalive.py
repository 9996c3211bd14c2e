"""A mobile-style client pinging every 10 s keeps a quiet WatchMatch through the gateway
open for two minutes, on the keepalive policy alone (server heartbeats turned far off);
the same client against gRPC's default policy is cut off with GOAWAY too_many_pings."""

from __future__ import annotations

import asyncio
import dataclasses

import grpc
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from gateway.server import build as build_gateway
from services.runtime.server import build as build_service
from services.runtime.settings import GatewaySettings, ServiceSettings
from tests.conftest import service_settings
from tests.helpers import StartedMatch, active_seat_move

QUIET_S = 120
# What a mobile client does: ping every 10 s, whether or not anything is in flight.
PINGING_CLIENT = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]


def _without_heartbeats(settings: ServiceSettings) -> ServiceSettings:
    """Server heartbeats (data on the stream) would keep it alive by themselves: push them
    past the test, whatever the setting is called."""
    far = {f.name: 3600 for f in dataclasses.fields(settings) if "heartbeat" in f.name}
    return dataclasses.replace(settings, **far)


class _Quiet(grpc.GenericRpcHandler):
    """A stream that never sends anything, on a server with gRPC's default policy."""

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        async def quiet(request: bytes, context: grpc.aio.ServicerContext):
            await asyncio.sleep(QUIET_S * 2)
            yield b""

        return grpc.unary_stream_rpc_method_handler(quiet)


async def _default_policy_cuts_off() -> grpc.StatusCode:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([_Quiet()])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=PINGING_CLIENT) as channel:
            try:
                async for _ in channel.unary_stream("/quiet.Quiet/Stream")(b"", timeout=QUIET_S):
                    pass
            except grpc.aio.AioRpcError as error:
                return error.code()
            return grpc.StatusCode.OK
    finally:
        await server.stop(None)


async def test_pinging_client_keeps_a_quiet_watch_through_the_gateway_for_two_minutes(redis_url):
    service = await build_service(_without_heartbeats(service_settings("happy_mochi", redis_url)))
    await service.server.start()
    gateway, _checker, pools, gateway_port = await build_gateway(
        GatewaySettings(
            listen="127.0.0.1:0",
            backends={"happy_mochi": (f"127.0.0.1:{service.port}",)},
            shutdown_grace_s=1,
            log_level="warning",
        )
    )
    await gateway.start()
    control = asyncio.create_task(_default_policy_cuts_off())
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}", options=PINGING_CLIENT) as channel:
            players = GameClient(channel, "happy_mochi")
            match = await players.create(2)
            watch = channel.unary_stream(
                "/mogames.happymochi.v1.HappyMochi/WatchMatch",
                request_serializer=common_pb2.WatchMatchRequest.SerializeToString,
            )(common_pb2.WatchMatchRequest(match_id=match.match_id))
            first = asyncio.ensure_future(watch.read())
            done, _ = await asyncio.wait([first], timeout=QUIET_S)
            assert not done, f"the quiet watch ended or sent something: {first.result()!r}"
            # Still alive end to end: what happens now reaches the watcher.
            tokens = {}
            for name in ("late-0", "late-1"):
                joined = await players.join(match.match_id, name)
                tokens[joined.seat] = joined.token
            seat, move, version = await active_seat_move(players, StartedMatch(match.match_id, tokens))
            await players.submit(match.match_id, tokens[seat], move, expected_version=version)
            assert await asyncio.wait_for(first, 10)
            watch.cancel()
        # The same pings against gRPC's defaults: cut off (too_many_pings after ~40 s).
        assert await asyncio.wait_for(control, 30) == grpc.StatusCode.UNAVAILABLE
    finally:
        control.cancel()
        await gateway.stop(None)
        for pool in pools:
            await pool.close()
        await service.stop(None)
