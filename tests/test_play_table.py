"""PlayMatch asked with_table (the web page's stream), and WatchMatch asked the same (a
spectator's, or the page's Connect fallback): after a commit, each stream's table is built
from the match as its replica received it with the commit's events, however the commit came
(here, through another replica: by the watch hub's read), and not read again per commit.
Each seat's table holds its own view only, as GetView gives it, at the commit's version."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import redis.asyncio as aioredis
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient, auth
from services.runtime import keys
from tests.conftest import Cluster, services_on_own_redis
from tests.helpers import start_match

GAME = "happy_mochi"
MOVES = 6


async def _play_with_table(client: GameClient, match_id: str, token: str) -> Any:
    call = client.stub.PlayMatch(metadata=auth(token), timeout=60)
    watch = common_pb2.WatchMatchRequest(match_id=match_id, with_table=True)
    await call.write(client.pb2.PlayMatchRequest(watch=watch))
    return call


class _Seat:
    """One seat's stream (or a spectator's WatchMatch, ``watch``): the last table and prompt
    it sent, checking that no table is older than the one before it."""

    def __init__(self, call: Any, watch: bool = False) -> None:
        self.call = call
        self.watch = watch
        self.table: Any = None
        self.prompt: Any = None

    async def table_at(self, version: int, prompted: bool = False) -> Any:
        """Read on until a table at ``version`` with every seat connected (and with
        ``prompted``, the seat's prompt at ``version`` before it)."""
        while True:
            response = await asyncio.wait_for(self.call.read(), 10)
            assert response is not grpc.aio.EOF, "the stream ended"
            for event in [response] if self.watch else response.events:
                kind = event.WhichOneof("event")
                if kind == "prompt":
                    self.prompt = event
                elif kind == "table":
                    if self.table is not None:
                        assert event.table.match.version >= self.table.match.version, "an older table"
                    self.table = event.table
            table = self.table
            if table is None or table.match.version != version:
                continue
            if prompted and (self.prompt is None or self.prompt.version != version):
                continue
            if all(seat.connected for seat in table.match.seats):
                return table


class _MatchReads:
    """The match's reads sent to Redis by a client (not a script's commands), as MONITOR
    shows them: an HGET of its rev (a cached record checked) or an HMGET (read whole)."""

    END = "end-of-reads"

    def __init__(self, redis: aioredis.Redis, match_id: str) -> None:
        self.redis = redis
        self.key = keys.match(match_id)
        self.seen: list[str] = []
        self.listening = asyncio.Event()
        self.task = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        async with self.redis.monitor() as monitor:
            self.listening.set()
            while True:
                command = await monitor.next_command()
                words = command["command"].split()
                if words[1:2] == [self.END]:
                    return
                if command["client_type"] != "lua" and words[1:2] == [self.key]:
                    self.seen.append(words[0].upper())

    async def stop(self) -> list[str]:
        """Every read sent before this call."""
        await self.redis.echo(self.END)
        await asyncio.wait_for(self.task, 10)
        return self.seen


async def test_tables_after_another_replicas_commits_are_each_seats_own_and_read_nothing() -> None:
    async with services_on_own_redis([GAME]) as (own, redis):
        await _tables_of_another_replicas_commits(own, redis)


async def _tables_of_another_replicas_commits(own: Cluster, redis: aioredis.Redis) -> None:
    here, there = own.replica_client(GAME, 0), own.replica_client(GAME, 1)
    started = await start_match(there, 2, seed=7)
    match = await there.match(started.match_id)
    version, mover = match.version, match.active_seats[0]
    seats = {
        seat: _Seat(await _play_with_table(here, started.match_id, token))
        for seat, token in started.tokens.items()
    }
    request = common_pb2.WatchMatchRequest(match_id=started.match_id, with_table=True)
    spectator = _Seat(here.stub.WatchMatch(request, timeout=60), watch=True)
    # Caught up: both seats connected (their streams' presence), the tables at the version.
    for n, seat in seats.items():
        await seat.table_at(version, prompted=n == mover)
    await spectator.table_at(version)

    reads = _MatchReads(redis, started.match_id)
    await reads.listening.wait()
    for _ in range(MOVES):
        move = seats[mover].prompt.prompt.moves[0]
        answer = await there.submit(started.match_id, started.tokens[mover], move, expected_version=version)
        version, mover = answer.version, answer.active_seats[0]
        for n, seat in seats.items():
            table = await seat.table_at(version, prompted=n == mover)
            assert table.view.seat == n and table.view.version == version
            assert list(table.view.active_seats) == list(table.match.active_seats) == [mover]
        table = await spectator.table_at(version)
        assert table.view.version == version and not table.view.hand
    seen = await reads.stop()

    # Each seat's table is its own view as GetView gives it (its hand, no one else's).
    views = {n: await there.view(started.match_id, started.tokens[n]) for n in seats}
    for n, seat in seats.items():
        assert seat.table.view == views[n], n
    assert views[0].hand != views[1].hand
    assert spectator.table.view == await there.view(started.match_id, None)
    # One read of the match per commit on the watching replica, the hub's (with the commit's
    # events): none for the tables.
    assert seen == ["HMGET"] * MOVES, seen
    for seat in [*seats.values(), spectator]:
        seat.call.cancel()
