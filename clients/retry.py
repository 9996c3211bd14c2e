"""What a client retries: every transient failure, with the delay the server asks for.

The server answers every transient failure (Redis unreachable or failing over, a replica
stopping, a stream handed over) with UNAVAILABLE and a ``google.rpc.RetryInfo``; a call
retried with the same ``request_id`` is answered once (docs/operations.md). gRPC's own
client can also end a stream that the server closed while this side was still writing
with INTERNAL "Internal error from Core": the stream was cut, not refused, so it counts
as transient too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from services.runtime.errors import stream_cut

T = TypeVar("T")

DEFAULT_DELAY_S = 0.2
LONGEST_DELAY_S = 2.0
# How long a call is retried before its error is given up to the caller.
GIVE_UP_AFTER_S = 60.0


def is_transient(error: grpc.aio.AioRpcError) -> bool:
    return error.code() == grpc.StatusCode.UNAVAILABLE or stream_cut(error)


def retry_delay_s(error: grpc.aio.AioRpcError) -> float:
    """The delay the error's RetryInfo asks for, else a short default."""
    try:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:
        status = None
    for detail in status.details if status else ():
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return min(info.retry_delay.ToMilliseconds() / 1000, LONGEST_DELAY_S)
    return DEFAULT_DELAY_S


async def retried(call: Callable[[], Awaitable[T]], give_up_after_s: float = GIVE_UP_AFTER_S) -> T:
    """``call()`` until it succeeds or fails otherwise than transiently. ``call`` must send
    the same request each time (the same request_id): the server then answers it once."""
    give_up_at = time.monotonic() + give_up_after_s
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if not is_transient(error) or time.monotonic() >= give_up_at:
                raise
            await asyncio.sleep(retry_delay_s(error))
