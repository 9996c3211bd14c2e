"""The catch-up's prompt, staged: a PlayMatch asked with_table whose watch's first read is
overtaken by the seat's own connection event still gets the seat's prompt in its catch-up.

How it happens: opening the stream commits the seat's connection (presence.py) while the
watch hub reads the history for the new watcher. When the read reaches Redis before that
commit but its answer is handled after the commit was handed to the hub, the read's record
is older than the one the hub has made prompts from. The hub skipped prompting from such a
record altogether, yet handed over its events and its table: the catch-up came as the
history and the table without the prompt (which only followed with the connection event,
one message later; a seat to move that drew from the catch-up was left without its moves).

Staged with real parts: one replica on a real Redis; its hub's first read of the match is
held, once Redis has answered it, until the connection's commit (held until then) has been
handed over."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient, auth
from services.runtime.server import build as build_service
from tests.conftest import service_settings
from tests.helpers import active_seat_move, start_match

GAME = "happy_mochi"
STAGE_WAIT_S = 5.0


def kinds_of(response: Any) -> list[str]:
    return [event.WhichOneof("event") for event in response.events]


async def test_a_catch_up_read_overtaken_by_the_seats_connection_still_prompts(redis_url: str) -> None:
    replica = await build_service(service_settings(GAME, redis_url))
    await replica.server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{replica.port}") as channel:
            client = GameClient(channel, GAME)
            started = await start_match(client, 2, seed=5)
            match_id = started.match_id
            seat, _move, version = await active_seat_move(client, started)

            store = replica.scheduler.service.hub.store
            read_events = store.events_after
            presence = replica.presence
            count = presence.count
            read_answered, connection_committed = asyncio.Event(), asyncio.Event()
            staged_reads: list[Any] = []

            async def read_overtaken_by_the_connection(
                of_match: str, after: Any, with_record: bool, known: Any = None
            ) -> Any:
                answer = await read_events(of_match, after, with_record, known)
                if of_match == match_id and with_record and not staged_reads:
                    staged_reads.append(answer[1])
                    read_answered.set()
                    await asyncio.wait_for(connection_committed.wait(), STAGE_WAIT_S)
                return answer

            async def count_after_the_read(of_match: str, grant: Any, opened: bool) -> None:
                if of_match == match_id and opened:
                    await asyncio.wait_for(read_answered.wait(), STAGE_WAIT_S)
                await count(of_match, grant, opened)
                if of_match == match_id and opened:
                    connection_committed.set()

            store.events_after = read_overtaken_by_the_connection  # type: ignore[method-assign]
            presence.count = count_after_the_read  # type: ignore[method-assign]

            call = client.stub.PlayMatch(metadata=auth(started.tokens[seat]), timeout=30)
            watch = common_pb2.WatchMatchRequest(match_id=match_id, with_table=True)
            await call.write(client.pb2.PlayMatchRequest(watch=watch))
            first = await call.read()
            caught_up = await call.read()
            connected = await call.read()
            call.cancel()

            # The staging held: the read's record predates the connection's commit.
            assert len(staged_reads) == 1 and connection_committed.is_set()
            assert staged_reads[0].version == version
            stored_rev = await store.rev(match_id)
            assert stored_rev is not None and staged_reads[0].rev < stored_rev
            assert kinds_of(first) == ["table"]
            kinds = kinds_of(caught_up)
            assert kinds[-2:] == ["prompt", "table"], kinds
            prompt = caught_up.events[-2]
            assert (prompt.version, prompt.prompt.seat) == (version, seat) and prompt.prompt.moves
            assert all(kind != "seat_connection" for kind in kinds), kinds
            # The connection's event follows, with the table; the seat was prompted at this
            # version already, so no prompt again.
            assert kinds_of(connected) == ["seat_connection", "table"], kinds_of(connected)
    finally:
        await replica.server.stop(None)
        await replica.close()
