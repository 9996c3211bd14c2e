"""A bare gRPC echo server, the baseline ``make bench`` compares game moves against.

python -m bench.echo 127.0.0.1:50099 [BACKEND]

With a BACKEND (an echo server's address) it forwards every Echo call there instead.

``Echo`` answers a unary call with its request. ``Relay`` is the least a PlayMatch-shaped
move can cost on grpc.aio: two streams join a room by their first message, and each later
message is sent back to its sender (the answer) and to the other stream (the event), as
a two-seat match's move is; no storage, no rules, no checks.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc

from services.runtime import logs, serving

METHOD = "/mogames.bench.Echo/Echo"
RELAY_METHOD = "/mogames.bench.Echo/Relay"
# The first byte of a relayed message: the sender's own copy, or the other stream's move.
ANSWER, EVENT = b"a", b"e"
# Sent to every stream of a room once its second stream joined: moves may start.
FULL = b"f"


class EchoHandler(grpc.GenericRpcHandler):
    def __init__(self) -> None:
        self._rooms: dict[bytes, list[asyncio.Queue[bytes]]] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        if handler_call_details.method == RELAY_METHOD:
            return grpc.stream_stream_rpc_method_handler(self._relay)
        if handler_call_details.method != METHOD:
            return None

        async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return request

        return grpc.unary_unary_rpc_method_handler(echo)

    async def _relay(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        room = await anext(requests)
        outbox: asyncio.Queue[bytes] = asyncio.Queue()
        members = self._rooms.setdefault(room, [])
        members.append(outbox)
        if len(members) == 2:
            for member in members:
                member.put_nowait(FULL)

        async def read() -> None:
            async for move in requests:
                outbox.put_nowait(ANSWER + move)
                for other in members:
                    if other is not outbox:
                        other.put_nowait(EVENT + move)

        reader = asyncio.create_task(read())
        try:
            while True:
                yield await outbox.get()
        finally:
            reader.cancel()
            members.remove(outbox)
            if not members:
                del self._rooms[room]


class ForwardHandler(grpc.GenericRpcHandler):
    """Forwards each Echo call, as its bytes, to the echo server at ``backend``: the hop a
    gateway adds between a client and a replica, with nothing else done."""

    def __init__(self, backend: str) -> None:
        self._channel = grpc.aio.insecure_channel(backend)
        echo = self._channel.unary_unary(METHOD)

        async def forward(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return await echo(request)  # type: ignore[no-any-return]

        self._handler = grpc.unary_unary_rpc_method_handler(forward)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        return self._handler if handler_call_details.method == METHOD else None


async def main(listen: str, backend: str | None) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([ForwardHandler(backend) if backend else EchoHandler()])
    server.add_insecure_port(listen)
    checker = await serving.add_health_and_reflection(server, [])
    await serving.serve_until_signalled(server, checker, 1)


if __name__ == "__main__":
    logs.configure("warning", service="echo")
    serving.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
