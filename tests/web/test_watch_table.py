"""WatchMatch asked with_table carries the caller's table: first when it opens, then after
each commit's events (and the seat's prompt), so that the web page draws from the stream
alone; heartbeats every TABLE_HEARTBEAT_S while quiet; the watch released when its call ends.
PlayMatch asked with_table carries the same tables (after each commit, in the message with
the move's answer) and heartbeats."""

from __future__ import annotations

import time
from typing import Any

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


def kinds_of(response: Any) -> list[str]:
    return [event.WhichOneof("event") for event in response.events]


async def answered(call: Any) -> Any:
    """The next message with a move's answer; each one before it that brings history (the
    seat's connection) ends with the table."""
    while True:
        response = await call.read()
        if response.WhichOneof("answer"):
            return response
        if any(event.seq for event in response.events):
            assert kinds_of(response)[-1] == "table", kinds_of(response)


async def test_play_match_asked_with_table_carries_it_with_each_commit(cluster: Cluster) -> None:
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=5)
    seat, move, version = await active_seat_move(client, started)
    call = client.stub.PlayMatch(metadata=auth(started.tokens[seat]), timeout=30)
    watch = common_pb2.WatchMatchRequest(match_id=started.match_id, with_table=True)
    await call.write(client.pb2.PlayMatchRequest(watch=watch))
    # The table as it stands alone first, then the history and the prompt with the table after.
    first = await call.read()
    assert kinds_of(first) == ["table"] and first.events[0].table.view.seat == seat
    caught_up = await call.read()
    assert kinds_of(caught_up)[-2:] == ["prompt", "table"], kinds_of(caught_up)

    # A refused move changed nothing: no table with its answer (but after history, if any).
    await client.send_move(call, move, expected_version=version + 1)
    refused = await answered(call)
    assert refused.WhichOneof("answer") == "refused", refused
    assert "table" not in kinds_of(refused) or any(event.seq for event in refused.events)

    # A committed move: its events, then the table at its version, in the answer's message.
    await client.send_move(call, move, expected_version=version)
    answer = await answered(call)
    assert answer.WhichOneof("answer") == "committed", answer
    kinds = kinds_of(answer)
    committed = [e.WhichOneof("event") for e in answer.committed.events]
    assert kinds[: len(committed)] == committed and kinds[-1] == "table", (kinds, committed)
    table = answer.events[-1].table
    assert table.match.version == table.view.version == answer.committed.version
    assert table.view.seat == seat
    call.cancel()


async def test_a_quiet_play_match_with_table_beats_every_table_heartbeat(cluster: Cluster) -> None:
    client = cluster.client(GAME)
    started = await start_match(client, 2, seed=6)
    call = client.stub.PlayMatch(metadata=auth(started.tokens[0]), timeout=30)
    watch = common_pb2.WatchMatchRequest(match_id=started.match_id, with_table=True)
    await call.write(client.pb2.PlayMatchRequest(watch=watch))
    beats: list[int] = []
    while len(beats) < 2:
        response = await call.read()
        if kinds_of(response) == ["heartbeat"]:
            beats.append(response.events[0].heartbeat.server_time_unix_ms)
        else:  # the table, the history (the seat's connection), each with the table after
            assert kinds_of(response)[-1] == "table", kinds_of(response)
    # Two in a row, TABLE_HEARTBEAT_S apart by the server's clock (the call's timeout is
    # shorter than the game's own heartbeat_s, 30 s: they are the table's).
    assert beats[1] - beats[0] >= TABLE_HEARTBEAT_S * 1000 - 50, beats
    call.cancel()
