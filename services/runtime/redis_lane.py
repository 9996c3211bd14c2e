"""The hot path's Redis lane on one Redis: a move's Lua commit (and the TIME a timed move
asks first) on one connection shared by every command of the replica, pipelined.

Redis answers a connection's commands in the order they came, so commands need no
connection each: each is written to the one connection, and its reply is the next one
read. Every command asked in one turn of the event loop goes out in one write
(``send_packed_command``), and one reader takes the replies in order (``read_response``,
whose parser hands over every reply a socket read brought before reading again). Under
load a replica's commits share their system calls, on its side and on Redis's, without
redis-py's per-command work (pool lock, connection checks, a timeout per command).

Only short commands belong here: one that blocks (BLPOP, XREAD BLOCK) holds up every
command behind it. A command not answered within its timeout fails, and so does the
connection: it is closed (its replies could still come, to nobody), every command behind
it fails with a connection error (it may or may not have run: the commit is made safe to
send again by its request digest, not by the lane) and the next command opens a new one.
A command whose caller is cancelled keeps its place: its reply is read and dropped.
"""

from __future__ import annotations

import asyncio
import collections
import math
from collections.abc import Callable
from typing import Any

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError


class PipelinedLane:
    def __init__(self, make_connection: Callable[[], Any]) -> None:
        # A redis-py connection, not connected yet: redis-py makes the handshake (TLS, AUTH,
        # SELECT, CLIENT SETINFO); the lane then writes and reads its streams itself.
        self._make_connection = make_connection
        self._connection: Any = None
        self._connecting: asyncio.Task[Any] | None = None
        self._reader: asyncio.Task[None] | None = None
        # Commands sent and not answered yet, in order: (the caller's future, deadline, timeout).
        self._waiting: collections.deque[tuple[asyncio.Future[Any], float, float]] = collections.deque()
        self._out: list[bytes] = []
        self._flush: asyncio.Task[None] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._closing: set[asyncio.Task[None]] = set()

    async def command(self, args: tuple[str | bytes | int, ...], timeout_s: float) -> Any:
        if self._connection is None:
            await self._connect()
            if self._connection is None:  # lost again while this caller resumed
                raise RedisConnectionError("the connection to Redis was lost as it opened")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._waiting.append((future, loop.time() + timeout_s, timeout_s))
        # hiredis packs in C what redis-py's packer encodes argument by argument.
        self._out.append(hiredis.pack_command(args))  # type: ignore[arg-type]  # its stub wants a 1-tuple
        if self._flush is None:
            # The task's first step runs after this turn's other callbacks: every command
            # they ask for goes out in the same write.
            self._flush = loop.create_task(self._write(), name="redis-lane-writer")
        if self._watchdog is None:
            self._watchdog = loop.call_at(self._waiting[0][1], self._check_deadline)
        return await future

    async def _connect(self) -> None:
        if self._connecting is None:
            self._connecting = asyncio.create_task(self._open())
        # Shielded: one caller's cancellation must not cancel the others' connect.
        connecting = self._connecting
        try:
            await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None

    async def _open(self) -> None:
        connection = self._make_connection()
        await connection.connect()
        self._connection = connection
        self._reader = asyncio.create_task(self._read(connection), name="redis-lane-reader")

    async def _write(self) -> None:
        self._flush = None
        out, self._out = self._out, []
        connection = self._connection
        if connection is None or not out:
            return  # the connection failed since: so did these commands
        try:
            # Waits only while the socket's buffer is full; commands asked meanwhile go out
            # in the next write, in order.
            await connection.send_packed_command([b"".join(out)], check_health=False)
        except Exception as error:
            self._fail(connection, RedisConnectionError(f"writing to Redis failed: {error}"))

    async def _read(self, connection: Any) -> None:
        try:
            while True:
                try:
                    # No timeout of the read's own: the watchdog times each command out.
                    reply = await connection.read_response(
                        disable_decoding=True, timeout=math.inf, disconnect_on_error=False
                    )
                except ResponseError as error:  # an error reply, as redis-py makes it (NoScriptError, ...)
                    reply = error
                else:
                    if reply is None and not connection.is_connected:
                        raise RedisConnectionError("Redis closed the connection")
                if not self._waiting:
                    raise InvalidResponse("a reply no command asked for")
                future = self._waiting.popleft()[0]
                if future.done():
                    continue  # its caller was cancelled: the reply is dropped
                if isinstance(reply, ResponseError):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            lost = error if isinstance(error, RedisConnectionError) else RedisConnectionError(str(error))
            self._fail(connection, lost)

    def _check_deadline(self) -> None:
        self._watchdog = None
        if not self._waiting or self._connection is None:
            return
        loop = asyncio.get_running_loop()
        future, deadline, timeout_s = self._waiting[0]
        if deadline > loop.time():
            self._watchdog = loop.call_at(deadline, self._check_deadline)
            return
        if not future.done():
            future.set_exception(RedisTimeoutError(f"no reply from Redis within {timeout_s} s"))
        self._waiting.popleft()
        self._fail(
            self._connection,
            RedisConnectionError("connection closed: a command before this one got no reply in time"),
        )

    def _fail(self, connection: Any, error: Exception) -> None:
        """Close ``connection`` and fail every command waiting on it with ``error``."""
        if connection is not self._connection:
            return
        self._connection = None
        self._out = []  # the failed commands' own
        if self._flush is not None:
            self._flush.cancel()  # not started yet: nothing of it was written
            self._flush = None
        waiting, self._waiting = self._waiting, collections.deque()
        for future, _, _ in waiting:
            if not future.done():
                future.set_exception(error)
        reader, self._reader = self._reader, None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
        closing = asyncio.get_running_loop().create_task(connection.disconnect(nowait=True))
        self._closing.add(closing)  # the loop keeps only a weak reference to a task
        closing.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        if self._connection is not None:
            self._fail(self._connection, RedisConnectionError("the lane was closed"))
        await asyncio.gather(*self._closing, return_exceptions=True)
