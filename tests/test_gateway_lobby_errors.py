"""The lobby's own calls to a game service (matchmaking's CreateMatch and JoinMatch, the
listing's GetMatch): a replica that hangs past their deadline makes FindMatch answer
UNAVAILABLE with a retry hint, not INTERNAL; a game with no replica up makes FindMatch and
ListMatches answer UNAVAILABLE at once, as the gateway's routing does, not at the lobby's
deadline. A real service process (SIGSTOPped, or killed) behind a real gateway."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

import gateway.lobby
import gateway.matchmaker
from clients.game_client import GameClient
from deploy.redis_server import free_port, wait_for_port
from gateway.server import build as build_gateway
from services.runtime.settings import GatewaySettings
from tests.helpers import refusal, retry_delay_s
from tests.test_processes import spawn_service

GAME = "happy_mochi"
# The lobby's deadline for its calls to a replica (10 s in service), short for the test.
RPC_TIMEOUT_S = 1.0


def alone_with_a_bot() -> lobby_pb2.FindMatchRequest:
    """A new ticket that waits 1 s alone, then has its match made with a bot (CreateMatch)."""
    return lobby_pb2.FindMatchRequest(
        game=GAME,
        players=2,
        player_name="alone",
        ticket_id=uuid.uuid4().hex,
        wait_seconds=1,
        fill_with_bots=True,
    )


@contextlib.asynccontextmanager
async def one_replica_behind_a_gateway(
    redis_url: str, tmp_path: Path
) -> AsyncIterator[tuple[subprocess.Popen[str], grpc.aio.Channel]]:
    """A game service process, an in-process gateway in front of it with the lobby, and a
    channel to the gateway; the service may be stopped or killed by the test."""
    port = free_port()
    service = spawn_service(GAME, f"127.0.0.1:{port}", redis_url, tmp_path / "service.log")
    server, _checker, pools, gateway_port = await build_gateway(
        GatewaySettings(
            listen="127.0.0.1:0",
            backends={GAME: (f"127.0.0.1:{port}",)},
            shutdown_grace_s=1,
            log_level="warning",
            redis_url=redis_url,
        )
    )
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gateway_port}")
    try:
        wait_for_port(port, 30)
        yield service, channel
    finally:
        await channel.close()
        await server.stop(None)
        for pool in pools:
            await pool.close()
        if service.poll() is None:
            os.kill(service.pid, signal.SIGCONT)
            service.terminate()
        service.wait(timeout=20)


async def test_find_match_whose_replica_hangs_past_the_deadline_is_unavailable_with_a_retry_hint(
    redis_url, tmp_path, monkeypatch
):
    monkeypatch.setattr(gateway.matchmaker, "RPC_TIMEOUT_S", RPC_TIMEOUT_S)
    async with one_replica_behind_a_gateway(redis_url, tmp_path) as (service, channel):
        # Through the gateway first, so its channel to the replica is connected.
        assert (await GameClient(channel, GAME).create(2)).match_id
        lobby = lobby_pb2_grpc.LobbyStub(channel)
        request = alone_with_a_bot()
        os.kill(service.pid, signal.SIGSTOP)
        started = time.monotonic()
        refused = await refusal(lobby.FindMatch(request, timeout=30))
        assert refused.code == grpc.StatusCode.UNAVAILABLE, refused
        assert refused.reason == "backend_unavailable"
        assert "DEADLINE_EXCEEDED" in refused.details
        assert time.monotonic() - started < 10  # the lobby's deadline, not the client's
        try:
            await lobby.FindMatch(request, timeout=30)
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.UNAVAILABLE
            assert 0 < retry_delay_s(error) <= 5
        else:
            raise AssertionError("FindMatch succeeded against a stopped replica")

        os.kill(service.pid, signal.SIGCONT)
        # The replica back, the same ticket is seated (the retry the hint asked for).
        found = await lobby.FindMatch(request, timeout=30)
        assert found.joined.token and found.joined.match.match_id


async def test_lobby_calls_to_a_game_with_no_replica_up_fail_at_once_not_at_their_deadline(
    redis_url, tmp_path, monkeypatch
):
    # A deadline far beyond the bound below: a call that waited for the replica would show.
    deadline_s = 120.0
    monkeypatch.setattr(gateway.matchmaker, "RPC_TIMEOUT_S", deadline_s)
    monkeypatch.setattr(gateway.lobby, "RPC_TIMEOUT_S", deadline_s)
    async with one_replica_behind_a_gateway(redis_url, tmp_path) as (service, channel):
        listed = await GameClient(channel, GAME).create(2, table={"public": True})
        lobby = lobby_pb2_grpc.LobbyStub(channel)
        page = await lobby.ListMatches(lobby_pb2.ListMatchesRequest(game=GAME, page_size=100), timeout=30)
        assert listed.match_id in [m.match_id for m in page.matches]

        service.kill()
        service.wait(timeout=20)
        started = time.monotonic()
        refused = await refusal(lobby.ListMatches(lobby_pb2.ListMatchesRequest(game=GAME, page_size=100)))
        assert refused.code == grpc.StatusCode.UNAVAILABLE, refused
        assert refused.reason == "no_replica", refused
        refused = await refusal(lobby.FindMatch(alone_with_a_bot()))
        assert refused.code == grpc.StatusCode.UNAVAILABLE, refused
        assert refused.reason == "no_replica", refused
        # Both answered within a few seconds (the gateway's brief wait for a connecting
        # replica, FindMatch's 1 s in the queue), not after the lobby's deadline.
        assert time.monotonic() - started < deadline_s / 4
