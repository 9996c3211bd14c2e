"""One pub/sub connection per players process for every WatchMyTurns stream it serves.

A stream subscribes its player's channel (``keys.player_turns``) here; the hub subscribes
Redis once per player watched and hands each message to every stream of that player.
``subscribe`` returns once Redis confirmed the subscription, so a notice published after
it is never missed. redis-py subscribes every channel again after a reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from services.runtime import keys, redis_client
from services.runtime.redis_client import RedisClient, text

log = structlog.get_logger("turns_hub")

# Notices a slow stream may have waiting; past that its oldest are dropped (the client
# lists its matches again on reconnecting anyway).
QUEUE_SIZE = 256
RETRY_AFTER_ERROR_S = 1.0
CONFIRM_TIMEOUT_S = 10.0


class TurnsHub:
    def __init__(self, redis: RedisClient) -> None:
        self.redis = redis
        self._pubsub: Any = None
        self._streams: dict[str, set[asyncio.Queue[bytes]]] = {}
        self._confirmed: dict[str, asyncio.Event] = {}
        self._lock = asyncio.Lock()
        self._listener: asyncio.Task[None] | None = None

    async def subscribe(self, player_id: str) -> asyncio.Queue[bytes]:
        """A queue of the player's notices (JSON as published), from now on."""
        queue: asyncio.Queue[bytes] = asyncio.Queue(QUEUE_SIZE)
        async with self._lock:
            if self._pubsub is None:
                self._pubsub = redis_client.pubsub(self.redis)
            streams = self._streams.setdefault(player_id, set())
            streams.add(queue)
            if len(streams) == 1:
                confirmed = self._confirmed[player_id] = asyncio.Event()
                await self._pubsub.subscribe(keys.player_turns(player_id))
            else:
                confirmed = self._confirmed[player_id]
            if self._listener is None or self._listener.done():
                self._listener = asyncio.create_task(self._listen(), name="turns-hub")
        try:
            await asyncio.wait_for(confirmed.wait(), CONFIRM_TIMEOUT_S)
        except BaseException:
            await self.unsubscribe(player_id, queue)
            raise
        return queue

    async def unsubscribe(self, player_id: str, queue: asyncio.Queue[bytes]) -> None:
        async with self._lock:
            streams = self._streams.get(player_id)
            if streams is None:
                return
            streams.discard(queue)
            if not streams:
                del self._streams[player_id]
                self._confirmed.pop(player_id, None)
                with contextlib.suppress(Exception):
                    await self._pubsub.unsubscribe(keys.player_turns(player_id))

    async def _listen(self) -> None:
        while self._streams:
            try:
                message = await self._pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("turns_hub_read_failed", error=str(error))
                await asyncio.sleep(RETRY_AFTER_ERROR_S)
                continue
            if message is None:
                continue
            channel = text(message["channel"])
            player_id = channel[channel.index("{p:") + 3 : channel.rindex("}")]
            if message["type"] == "subscribe":
                confirmed = self._confirmed.get(player_id)
                if confirmed is not None:
                    confirmed.set()
            elif message["type"] == "message":
                for queue in list(self._streams.get(player_id, ())):
                    if queue.full():
                        queue.get_nowait()
                    queue.put_nowait(message["data"])

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
