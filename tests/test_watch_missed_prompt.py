"""The missed prompt, staged: a live match where a seat is to move and its live watch never
gets the prompt, while a fresh watch gets it at once.

How it happens: a watch that reaches back past the few commits the hub reads first (a new
or resumed watch from an old cursor, as after a failover's cut) reads the match's record,
then the whole tail. A commit landing between the two leaves the read holding events newer
than its record. Handed over as they were, those events moved the watchers past the commit
while their prompts came from the older record (where the other seat was to move); the
commit's own notification then found every watcher already there, so nobody read again and
the seat now to move was never prompted. The hub now hands over only what its record
covers and reads again.

Staged with real parts: two replicas on one real Redis, the watch on one, the interleaved
move a real SubmitMove through the other, made right before the watching replica's hub
reads the tail (its store's own read, run unchanged after it)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from clients.game_client import GameClient
from services.runtime.history import KEEP_RECENT
from services.runtime.server import build as build_service
from tests.conftest import service_settings
from tests.helpers import active_seat_move, start_match

GAME = "happy_mochi"


async def test_a_watch_whose_read_straddles_a_commit_still_prompts_the_seat_to_move(redis_url):
    watching, moving = [await build_service(service_settings(GAME, redis_url)) for _ in range(2)]
    for replica in (watching, moving):
        await replica.server.start()
    try:
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{watching.port}") as watching_channel,
            grpc.aio.insecure_channel(f"127.0.0.1:{moving.port}") as moving_channel,
        ):
            watcher_client, mover_client = (
                GameClient(watching_channel, GAME),
                GameClient(moving_channel, GAME),
            )
            started = await start_match(mover_client, 2, seed=5)
            match_id = started.match_id
            # More commits than the hub's first read holds: a watch from the first join on
            # reads the whole tail after the record.
            for _ in range(KEEP_RECENT + 1):
                seat, move, version = await active_seat_move(mover_client, started)
                await mover_client.submit(match_id, started.tokens[seat], move, expected_version=version)
            mover, move, version = await active_seat_move(mover_client, started)
            (waiter,) = set(started.tokens) - {mover}

            store = watching.scheduler.service.store
            read_tail = store._tail
            interleaved: list[Any] = []

            async def tail_read_after_a_commit(of_match: str) -> list[bytes]:
                if of_match == match_id and not interleaved:
                    interleaved.append(
                        await mover_client.submit(
                            match_id, started.tokens[mover], move, expected_version=version
                        )
                    )
                return await read_tail(of_match)

            store._tail = tail_read_after_a_commit  # type: ignore[method-assign,assignment]
            stream = watcher_client.watch(match_id, started.tokens[waiter])
            prompts = asyncio.create_task(_first_prompt_after(stream, version))
            try:
                prompt = await asyncio.wait_for(prompts, timeout=10)
            except TimeoutError:
                prompt = None
            finally:
                stream.cancel()
            assert interleaved, "the staged commit landed inside the hub's read"
            current = await mover_client.match(match_id)
            assert current.version == version + 1 and list(current.active_seats) == [waiter]
            assert prompt is not None, (
                f"seat {waiter} to move at version {current.version} was never prompted"
            )
            assert (prompt.version, prompt.prompt.seat) == (current.version, waiter)
            # A fresh watch of the same seat is prompted as well (the symptom's other half).
            fresh = watcher_client.watch(match_id, started.tokens[waiter], after_version=current.version)
            try:
                again = await asyncio.wait_for(_first_prompt_after(fresh, version), timeout=10)
            finally:
                fresh.cancel()
            assert (again.version, again.prompt.seat) == (current.version, waiter)
    finally:
        for replica in (watching, moving):
            await replica.server.stop(None)
            await replica.close()


async def _first_prompt_after(stream: Any, version: int) -> Any:
    """The first prompt of a version after ``version`` the stream brings."""
    async for event in stream:
        if event.WhichOneof("event") == "prompt" and event.version > version:
            return event
    raise AssertionError("the watch ended without a prompt")
