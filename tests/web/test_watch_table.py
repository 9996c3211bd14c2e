"""WatchMatch asked with_table carries the caller's table: first when it opens, then after
each commit's events (and the seat's prompt), so that the web page draws from the stream
alone; heartbeats every TABLE_HEARTBEAT_S while quiet; the watch released when its call ends;
PlayMatch refuses the flag."""

from __future__ import annotations

import time
from typing import Any

import grpc
import pytest
from mogames.common.v1 import common_pb2

from clients.game_client import auth
from services.runtime.servicer import TABLE_HEARTBEAT_S
from tests.conftest import Cluster
from tests.helpers import active_seat_move, start_match, watch_released

GAME = "happy_mochi"


async def test_the_table_comes_first_and_after_each_commit(cluster: Cluster) -> None:
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=3)
    mover = (await client.match(started.match_id)).active_seats[0]
    request = common_pb2.WatchMatchRequest(match_id=started.match_id, with_table=True)
    stream = client.stub.WatchMatch(request, metadata=auth(started.tokens[mover]), timeout=30)
    kinds: list[str] = []
    tables = []
    async for event in stream:
        kind = event.WhichOneof("event")
        kinds.append(kind)
        if kind == "table":
            tables.append(event.table)
            if len(tables) == 2:
                break
    # First the table as it stands, then the history, the seat's prompt, and the table again.
    assert kinds[0] == "table" and kinds[-2:] == ["prompt", "table"], kinds
    first, caught_up = tables
    for table in (first, caught_up):
        assert table.view.seat == mover and table.match.match_id == started.match_id
        assert table.view.version == table.match.version
        assert list(table.match.active_seats) == [mover]
    assert len(caught_up.view.hand) > 0

    # A move: its events, then the table at the move's version, for the seat that moved.
    seat, move, version = await active_seat_move(client, started)
    answer = await client.submit(started.match_id, started.tokens[seat], move, expected_version=version)
    after: list[str] = []
    async for event in stream:
        kind = event.WhichOneof("event")
        if kind == "heartbeat":
            continue
        after.append(kind)
        if kind == "table":
            assert event.table.match.version == answer.version == event.table.view.version
            assert event.version == answer.version
            break
    committed = [e.WhichOneof("event") for e in answer.events]
    assert after[: len(committed)] == committed and after[-1] == "table", (after, committed)
    stream.cancel()


async def test_a_quiet_table_watch_sends_heartbeats_and_is_released(
    cluster: Cluster, redis_client: Any
) -> None:
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=4)
    request = common_pb2.WatchMatchRequest(match_id=started.match_id, with_table=True)
    stream = client.stub.WatchMatch(request, timeout=30)
    beats = 0
    start = time.monotonic()
    async for event in stream:
        if event.WhichOneof("event") == "heartbeat":
            beats += 1
            if beats == 2:
                break
    # Two heartbeats of a quiet match, each after TABLE_HEARTBEAT_S without anything else.
    assert time.monotonic() - start >= TABLE_HEARTBEAT_S
    # Dropped while it waits for the next event: the watch ends with the call.
    stream.cancel()
    await watch_released(redis_client, started.match_id)


async def test_play_match_refuses_with_table(cluster: Cluster) -> None:
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=5)
    call = client.stub.PlayMatch(metadata=auth(started.tokens[0]), timeout=10)
    watch = common_pb2.WatchMatchRequest(match_id=started.match_id, with_table=True)
    await call.write(client.pb2.PlayMatchRequest(watch=watch))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call.read()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "with_table" in (refused.value.details() or "")
