"""Small helpers shared by the integration tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from clients.game_client import GameClient
from services.runtime import keys


@dataclass
class StartedMatch:
    match_id: str
    tokens: dict[int, str]


async def start_match(client: GameClient, players: int, seed: int = 1) -> StartedMatch:
    match = await client.create(players, seed=seed)
    tokens = {}
    for n in range(players):
        joined = await client.join(match.match_id, f"player-{n}")
        tokens[joined.seat] = joined.token
    return StartedMatch(match.match_id, tokens)


@dataclass
class Refusal:
    code: grpc.StatusCode
    details: str
    reason: str
    field: str
    retry_ms: int = 0  # the RetryInfo's delay, 0 without one


async def refusal(call: Awaitable[Any]) -> Refusal:
    """The error a call fails with, with its rich details; fails the test if it succeeds."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return refusal_of(error)
    raise AssertionError("the call succeeded, a refusal was expected")


def refusal_of(error: grpc.aio.AioRpcError) -> Refusal:
    """A call's error with its rich details (the ErrorInfo reason, the BadRequest field, the
    RetryInfo delay)."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    reason = field = ""
    retry_ms = 0
    for detail in status.details if status else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            field = bad.field_violations[0].field
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            retry_ms = retry.retry_delay.ToMilliseconds()
    return Refusal(error.code(), error.details() or "", reason, field, retry_ms)


async def active_seat_move(client: GameClient, started: StartedMatch) -> tuple[int, Any, int]:
    """The first active seat, its first legal move and the current version."""
    match = await client.match(started.match_id)
    seat = match.active_seats[0]
    legal = await client.legal_moves(started.match_id, started.tokens[seat])
    return seat, legal.moves[0], legal.version


def is_history(event: Any) -> bool:
    """A stored event (seq >= 1), not a prompt or a heartbeat."""
    return bool(event.seq)


async def events_before(stream: Any, stop_version: int) -> list[Any]:
    """History events of a WatchMatch stream up to (not including) the first of ``stop_version``."""
    seen = []
    async for event in stream:
        if not is_history(event):
            continue
        if event.version >= stop_version:
            break
        seen.append(event)
    stream.cancel()
    return seen


async def health_status(channel: grpc.aio.Channel, service: str) -> int:
    """The gRPC health status a process reports for ``service`` ("" = overall)."""
    reply = await health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=5
    )
    return int(reply.status)


async def wait_until(check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 20.0) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


async def subscribers(redis_client: Any, match_id: str) -> int:
    """How many subscribers (one per replica whose hub watches it) Redis counts on
    ``match_id``'s notification channel."""
    count: int = (await redis_client.pubsub_numsub(keys.notify(match_id)))[0][1]
    return count


async def until_subscribers(redis_client: Any, match_id: str, count: int, timeout_s: float) -> None:
    """Until Redis counts ``count`` subscribers of ``match_id``'s notifications."""

    async def counted() -> bool:
        return await subscribers(redis_client, match_id) == count

    await wait_until(counted, f"{count} subscriber(s) of {match_id}'s notifications", timeout_s)


async def watch_released(redis_client: Any, match_id: str) -> None:
    """Until no replica is subscribed to ``match_id``'s notifications (10 s at most)."""
    await until_subscribers(redis_client, match_id, 0, timeout_s=10)


async def bounded(step: Awaitable[Any], what: str, timeout_s: float = 60.0) -> Any:
    """``step``'s result; past ``timeout_s`` an AssertionError naming it and where every task
    of the loop waits (a fixture's teardown that hangs then says which step and why)."""
    task = asyncio.ensure_future(step)
    await asyncio.wait([task], timeout=timeout_s)
    if task.done():
        return task.result()
    task.cancel()
    waits = []
    for other in asyncio.all_tasks():
        frames = other.get_stack(limit=4)
        where = " > ".join(
            f"{f.f_code.co_name} ({f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno})" for f in frames
        )
        waits.append(f"  {other.get_name()}: {where}")
    raise AssertionError(f"{what}: not done after {timeout_s} s; tasks:\n" + "\n".join(waits))


def retry_delay_s(error: grpc.aio.AioRpcError) -> float:
    """The RetryInfo delay a refusal carries (seconds); fails when it has none."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    for detail in status.details if status else ():
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return info.retry_delay.ToMilliseconds() / 1000
    raise AssertionError(f"no RetryInfo in {error}")


async def wait_serving(channel: grpc.aio.Channel, service: str, timeout_s: float = 30.0) -> None:
    """Until the process behind ``channel`` reports ``service`` SERVING (a gateway's port
    opens before it has seen its replicas' health, and answers UNAVAILABLE until then)."""

    async def serving() -> bool:
        return await health_status(channel, service) == health_pb2.HealthCheckResponse.SERVING

    await wait_until(serving, f"{service} SERVING", timeout_s)
