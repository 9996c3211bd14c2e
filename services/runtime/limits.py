"""Limits at the edge: bounded request fields, and per-client budgets for creating and joining.

Field bounds are checked on the decoded protobuf message, before anything converts it, so
an oversize request costs its decoding and nothing more. Client budgets are fixed-window
counters in Redis, shared by every replica; a client is its peer address, or what a
trusted proxy says it is (``client_id``).
"""

from __future__ import annotations

import ipaddress
import time
import uuid
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from mogames.common.v1 import common_pb2

from services.runtime import keys
from services.runtime.errors import InvalidArgument, ResourceExhausted
from services.runtime.redis_client import RedisClient, text
from services.runtime.settings import InputLimits, IPNetwork, ServiceSettings

# Metadata the gateway sets to the client it serves, replacing whatever the client sent;
# services trust it because only gateways (and our nginx front) reach them.
FORWARDED_CLIENT = "mogames-client"
MAX_CLIENT_ID = 64
# Clients over a budget that each replica remembers (beyond it, the lapsed, else all, go).
MAX_REMEMBERED_OVER = 10_000

_TEXT = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
# Repeated fields with a bound of their own.
_LAYOUT_FIELDS = ("custom_tiles",)


def check_fields(message: Message, limits: InputLimits, path: str = "") -> None:
    """Raise InvalidArgument naming the first string or repeated field over its bound."""
    if not path and message.ByteSize() <= limits.smallest_bound:
        # Every character and every repeated entry takes at least a byte on the wire, so a
        # message this small is within every bound: a move's request is, and skips the walk.
        return
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


def _is_trusted(host: str, proxies: tuple[IPNetwork, ...]) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a Unix socket or an unparsable peer is nobody's proxy
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in proxies)


def client_id(metadata: Any, peer: str, limits: InputLimits, trust_any_peer: bool = False) -> str:
    """Who is calling a gRPC port (``peer`` as gRPC names it), for budgets: see client_named.
    A Unix-socket peer is the gateway's own web port (gateway.web.own_listener: a socket in
    a folder only this user reaches), a proxy like any trusted one."""
    own = peer.startswith("unix:")
    return client_named(metadata, _peer_host(peer), limits, trust_any_peer, trusted=own)


def client_named(
    metadata: Any, host: str, limits: InputLimits, trust_any_peer: bool = False, trusted: bool = False
) -> str:
    """The client's name for budgets: the peer's address ``host``, unless the peer is a
    trusted proxy (``limits.trusted_proxies``), whose ``mogames-client`` (else
    ``client_id_metadata``) header names the client instead. ``trust_any_peer`` takes any
    peer's ``mogames-client``, the header only gateways and our nginx set (replacing the
    client's). A client's own word is never taken: it would choose its own budget."""
    proxy = trusted or _is_trusted(host, limits.trusted_proxies)
    if proxy or trust_any_peer:
        values = dict(metadata or ())
        value = values.get(FORWARDED_CLIENT)
        if not value and proxy and limits.client_id_metadata:
            value = values.get(limits.client_id_metadata)
        if value:
            # A proxy chain lists the original client first.
            return text(value, errors="replace").split(",", 1)[0].strip()[:MAX_CLIENT_ID]
    return host[:MAX_CLIENT_ID]


class ClientBudgets:
    """Per-client rate limits on CreateMatch/JoinMatch and a cap on waiting matches."""

    # AddBot has no budget of its own: its answer only tells the cap a match stopped waiting.
    METHODS = ("CreateMatch", "JoinMatch", "AddBot")

    def __init__(self, client: RedisClient, settings: ServiceSettings) -> None:
        self.redis = client
        self.window_s = settings.rate_window_s
        self.per_window = {"CreateMatch": settings.create_per_window, "JoinMatch": settings.join_per_window}
        self.max_waiting = settings.max_waiting_per_client
        self.waiting_ttl_s = settings.abandon_after_s
        self.limits = settings.limits
        # (method, client) -> end of the window in which that client is over its budget.
        self._over: dict[tuple[str, str], float] = {}

    def who(self, context: grpc.aio.ServicerContext) -> str:
        # Only gateways reach a service (docs/operations.md, "Budgets"), so any peer's word counts,
        # unless the service is told which peers are its gateways.
        trust_any_peer = not self.limits.trusted_proxies
        return client_id(context.invocation_metadata(), context.peer(), self.limits, trust_any_peer)

    async def admit(self, method: str, client: str) -> str | None:
        """Count this call against the client's budget; ResourceExhausted when over it.

        A CreateMatch also takes one of the client's waiting-match places at once (the
        returned reservation), so calls racing each other cannot all see room for one
        more: ``answered`` swaps it for the match, ``release`` gives it back."""
        limit = self.per_window.get(method, 0)
        if limit:
            now = time.time()
            over_until = self._over.get((method, client), 0.0)
            if now < over_until:
                # Already over its budget in this window: refused here, no Redis command
                # (a flood costs Redis one counter per window, not one per call).
                raise self._over_budget(method, limit, over_until - now)
            window = int(now // self.window_s)
            key = keys.rate_window(method, client, window)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.incr(key)
                pipe.expire(key, self.window_s + 1)
                count, _ = await pipe.execute()
            if count > limit:
                window_end = (window + 1) * self.window_s
                self._remember_over(method, client, window_end, now)
                raise self._over_budget(method, limit, window_end - now)
        if method != "CreateMatch" or not self.max_waiting:
            return None
        waiting = keys.client_waiting(client)
        reservation = f"creating:{uuid.uuid4().hex}"
        now = time.time()
        # One key, one transaction: every racing call's place is counted by the others.
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(waiting, "-inf", now - self.waiting_ttl_s)
            pipe.zadd(waiting, {reservation: now})
            pipe.zcard(waiting)
            pipe.expire(waiting, self.waiting_ttl_s)
            _, _, count, _ = await pipe.execute()
        if count > self.max_waiting:
            await self.release(client, reservation)
            raise ResourceExhausted(
                f"CreateMatch: {count - 1} of your matches still wait for players (at most "
                f"{self.max_waiting}); fill or leave one first",
                retry_after_s=self.window_s,
                reason="too_many_waiting_matches",
            )
        return reservation

    def _over_budget(self, method: str, limit: int, retry_after_s: float) -> ResourceExhausted:
        return ResourceExhausted(
            f"{method}: at most {limit} per {self.window_s} s from one client, retry later",
            retry_after_s=retry_after_s,
        )

    def _remember_over(self, method: str, client: str, until: float, now: float) -> None:
        if len(self._over) >= MAX_REMEMBERED_OVER:
            self._over = {k: t for k, t in self._over.items() if t > now}
            if len(self._over) >= MAX_REMEMBERED_OVER:
                self._over.clear()
        self._over[(method, client)] = until

    async def release(self, client: str, reservation: str | None) -> None:
        """Give back a waiting-match place taken by a CreateMatch that made no match."""
        if reservation is not None:
            await self.redis.zrem(keys.client_waiting(client), reservation)

    async def answered(self, method: str, client: str, response: Any, reservation: str | None = None) -> None:
        """Keep the waiting-match count, which counts only matches still waiting for players:
        a created match that waits takes its reservation's place (one its bots filled at
        creation gives it back), and a match that a join or a bot started stops counting for
        its creator."""
        if not self.max_waiting:
            return
        if method == "CreateMatch" and response.status != common_pb2.WAITING_FOR_PLAYERS:
            await self.release(client, reservation)
        elif method == "CreateMatch":
            match_id = response.match_id
            waiting = keys.client_waiting(client)
            async with self.redis.pipeline(transaction=True) as pipe:
                if reservation is not None:
                    pipe.zrem(waiting, reservation)
                pipe.zadd(waiting, {match_id: time.time()})
                pipe.expire(waiting, self.waiting_ttl_s)
                await pipe.execute()
            await self.redis.set(keys.match_creator(match_id), client, ex=self.waiting_ttl_s)
        elif method in ("JoinMatch", "AddBot"):
            match = response.match if method == "JoinMatch" else response
            if match.status == common_pb2.WAITING_FOR_PLAYERS:
                return
            match_id = match.match_id
            creator = await self.redis.getdel(keys.match_creator(match_id))
            if creator is not None:
                await self.redis.zrem(keys.client_waiting(text(creator)), match_id)
