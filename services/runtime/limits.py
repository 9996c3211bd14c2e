"""Limits at the edge: bounded request fields, and per-client budgets for creating and joining.

Field bounds are checked on the decoded protobuf message, before anything converts it, so
an oversize request costs its decoding and nothing more. Client budgets are fixed-window
counters in Redis, shared by every replica; a client is its peer address, or the value
of a configured metadata key set by a trusted proxy (``InputLimits.client_id_metadata``).
"""

from __future__ import annotations

import time
from typing import Any

import grpc
import redis.asyncio as aioredis
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from mogames.common.v1 import common_pb2

from services.runtime import keys
from services.runtime.errors import InvalidArgument, ResourceExhausted
from services.runtime.settings import InputLimits, ServiceSettings

# Metadata the gateway sets to the client it serves, replacing whatever the client sent;
# services trust it because only gateways reach them.
FORWARDED_CLIENT = "mogames-client"
MAX_CLIENT_ID = 64

_TEXT = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
# Repeated fields with a bound of their own.
_LAYOUT_FIELDS = ("custom_tiles",)


def check_fields(message: Message, limits: InputLimits, path: str = "") -> None:
    """Raise InvalidArgument naming the first string or repeated field over its bound."""
    for field, value in message.ListFields():
        name = path + field.name
        if field.is_repeated:
            bound = limits.max_layout_tiles if field.name in _LAYOUT_FIELDS else limits.max_repeated
            if len(value) > bound:
                raise InvalidArgument(f"{name}: at most {bound} entries, got {len(value)}", field=name)
            entry = field.message_type
            if field.type == _MESSAGE and entry is not None and not entry.GetOptions().map_entry:
                for i, item in enumerate(value):
                    check_fields(item, limits, f"{name}[{i}].")
            elif field.type in _TEXT:
                for i, item in enumerate(value):
                    _check_text(f"{name}[{i}]", item, limits)
        elif field.type == _MESSAGE:
            check_fields(value, limits, name + ".")
        elif field.type in _TEXT:
            _check_text(name, value, limits)


def _check_text(name: str, value: str | bytes, limits: InputLimits) -> None:
    if len(value) > limits.max_string:
        raise InvalidArgument(f"{name}: at most {limits.max_string} characters, got {len(value)}", field=name)


def _peer_host(peer: str) -> str:
    """``ipv4:1.2.3.4:5678`` -> ``1.2.3.4``; ``ipv6:[::1]:5678`` -> ``::1``."""
    _scheme, _, rest = peer.partition(":")
    host = rest.rpartition(":")[0] if rest.count(":") and not rest.startswith("/") else rest
    return host.strip("[]") or peer


def client_id(metadata: Any, peer: str, metadata_key: str) -> str:
    """Who is calling, for budgets: the gateway's word, a trusted proxy's header, or the peer."""
    values = dict(metadata or ())
    value = values.get(FORWARDED_CLIENT) or (values.get(metadata_key) if metadata_key else None)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if value:
        # A proxy chain lists the original client first.
        return value.split(",", 1)[0].strip()[:MAX_CLIENT_ID]
    return _peer_host(peer)[:MAX_CLIENT_ID]


class ClientBudgets:
    """Per-client rate limits on CreateMatch/JoinMatch and a cap on waiting matches."""

    METHODS = ("CreateMatch", "JoinMatch")

    def __init__(self, client: aioredis.Redis, settings: ServiceSettings) -> None:
        self.redis = client
        self.window_s = settings.rate_window_s
        self.per_window = {"CreateMatch": settings.create_per_window, "JoinMatch": settings.join_per_window}
        self.max_waiting = settings.max_waiting_per_client
        self.waiting_ttl_s = settings.abandon_after_s
        self.metadata_key = settings.limits.client_id_metadata

    def who(self, context: grpc.aio.ServicerContext) -> str:
        return client_id(context.invocation_metadata(), context.peer(), self.metadata_key)

    async def admit(self, method: str, client: str) -> None:
        """Count this call against the client's budget; ResourceExhausted when over it."""
        limit = self.per_window[method]
        if limit:
            now = time.time()
            window = int(now // self.window_s)
            key = keys.rate_window(method, client, window)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.incr(key)
                pipe.expire(key, self.window_s + 1)
                count, _ = await pipe.execute()
            if count > limit:
                retry_after = (window + 1) * self.window_s - now
                raise ResourceExhausted(
                    f"{method}: at most {limit} per {self.window_s} s from one client, retry later",
                    retry_after_s=retry_after,
                )
        if method == "CreateMatch" and self.max_waiting:
            waiting = keys.client_waiting(client)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zremrangebyscore(waiting, "-inf", time.time() - self.waiting_ttl_s)
                pipe.zcard(waiting)
                _, count = await pipe.execute()
            if count >= self.max_waiting:
                raise ResourceExhausted(
                    f"CreateMatch: {count} of your matches still wait for players (at most "
                    f"{self.max_waiting}); fill or leave one first",
                    retry_after_s=self.window_s,
                    reason="too_many_waiting_matches",
                )

    async def answered(self, method: str, client: str, response: Any) -> None:
        """Keep the waiting-match count: add a created match, drop one that started."""
        if not self.max_waiting:
            return
        if method == "CreateMatch":
            match_id = response.match_id
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zadd(keys.client_waiting(client), {match_id: time.time()})
                pipe.expire(keys.client_waiting(client), self.waiting_ttl_s)
                pipe.set(keys.match_creator(match_id), client, ex=self.waiting_ttl_s)
                await pipe.execute()
        elif method == "JoinMatch" and response.match.status != common_pb2.WAITING_FOR_PLAYERS:
            match_id = response.match.match_id
            creator = await self.redis.getdel(keys.match_creator(match_id))
            if creator is not None:
                name = creator.decode() if isinstance(creator, bytes) else creator
                await self.redis.zrem(keys.client_waiting(name), match_id)
