"""Channels to each game's replicas: which one serves a call, and whether any is up.

A match's calls go to one replica (a hash of the match id over the replicas that are up),
so that replica's cache of the match stays warm; any replica answers correctly, only slower.
Up means connected and serving by the health rounds: a replica that says NOT_SERVING
(draining) takes no new calls from that round on, and one that does not answer two rounds in
a row (stopped, hung; one slow answer under load is forgiven) from the second, rather than
once its connection's keepalive gives up. While none is serving, every connected replica
takes calls (the health rounds themselves may be what fails).
A listed name (a Kubernetes headless Service) stands for every address it resolves to,
looked up again every health round, so each pod is a replica of its own.
When every replica of a game is down, calls fail at once with UNAVAILABLE instead of
waiting for a deadline; they wait (briefly) only for a replica that is still connecting.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from gateway.discovery import Resolver, expand, system_resolver
from services.runtime import metrics
from services.runtime.errors import no_replica

log = structlog.get_logger("backends")

_CHANNEL_OPTIONS = [
    # A channel holds a listed name only until the pool has resolved it (or while it cannot):
    # spread over the name's addresses meanwhile.
    ("grpc.lb_policy_name", "round_robin"),
    # Keep quiet connections (long watches) alive through proxies and NAT, and notice a
    # vanished replica; the services accept pings this often (serving.KEEPALIVE_OPTIONS).
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # Reconnect soon after a replica restarts.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
    ("grpc.max_receive_message_length", 16 * 1024 * 1024),
]

# How long a call waits for a replica that is connecting (none is up yet) before UNAVAILABLE.
CONNECT_WAIT_S = 1.0
HEALTH_TIMEOUT_S = 2.0
# Health rounds in a row without an answer that take a replica out of the routing.
SILENT_ROUNDS = 2
# A replica that left the resolved set keeps its channel this long: the streams it holds end
# on its own terms (a replica shutting down hands them over) before the channel closes.
REMOVED_GRACE_S = 30.0

_READY = grpc.ChannelConnectivity.READY
_FAILED = (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN)
_CONNECTING = (grpc.ChannelConnectivity.IDLE, grpc.ChannelConnectivity.CONNECTING)


@dataclass(eq=False)
class Replica:
    """One replica's channel, and the calls made on it (made once, not on every call)."""

    address: str
    channel: grpc.aio.Channel
    seed: bytes  # its weight in the match hash comes from its address, not its place in a list
    # Until its first connection a replica counts as up while it connects: the gateway's
    # first calls (at start, or when a replica is added) then hash over every replica, not
    # over whichever happened to connect first, and a match does not move once the rest do.
    connected_once: bool = False
    # By the health rounds (until the first: serving), and how many in a row it has not answered.
    serving: bool = True
    silent_rounds: int = 0
    _calls: dict[tuple[str, str], Any] = field(default_factory=dict)

    @classmethod
    def connect(cls, address: str) -> Replica:
        channel = grpc.aio.insecure_channel(f"dns:///{address}", options=_CHANNEL_OPTIONS)
        return cls(address, channel, seed_of(address))

    def is_up(self) -> bool:
        """Connected, or still making its first connection (a call on it waits for that)."""
        state = self.channel.get_state(try_to_connect=True)
        if state is _READY:
            self.connected_once = True
            return True
        return not self.connected_once and state in _CONNECTING

    def call(self, kind: str, method: str) -> Any:
        """``kind`` is the channel's factory: unary_unary, unary_stream or stream_stream."""
        made = self._calls.get((kind, method))
        if made is None:
            made = self._calls[(kind, method)] = getattr(self.channel, kind)(method)
        return made


def seed_of(address: str) -> bytes:
    """A replica's key in the match hash, from its address."""
    return hashlib.blake2b(address.encode(), digest_size=32).digest()


def weight(key: bytes, seed: bytes) -> int:
    """A replica's weight for a match (``key``) in rendezvous hashing: a keyed BLAKE2 hash, so
    every replica wins its share of the matches. (A CRC seeded with the replica is affine in
    the seed: the replicas' weights then differ by constants, and one of three won half.)"""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8, key=seed).digest(), "big")


class ReplicaPool:
    """A game's replicas: the listed addresses, each listed name standing for every address
    it resolves to (see discovery), kept current by ``resolve``."""

    def __init__(
        self, service: str, addresses: tuple[str, ...], resolver: Resolver = system_resolver
    ) -> None:
        self.service = service
        self.listed = addresses
        self.resolver = resolver
        # Until the first resolution the listed addresses themselves (gRPC resolves a name).
        self.replicas = [Replica.connect(a) for a in addresses]
        self._retiring: set[asyncio.Task[None]] = set()
        self._resolve_failed = False
        self._turn = itertools.count()
        self._outage = False

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(r.address for r in self.replicas)

    async def resolve(self) -> None:
        """Follow the listed names to their current addresses. A replica that stays keeps its
        channel and its matches; one that is gone stops taking calls at once and its channel
        closes after REMOVED_GRACE_S, so the streams it holds end on its own terms first."""
        try:
            current = await expand(self.listed, self.resolver)
        except (OSError, TimeoutError) as error:
            if not self._resolve_failed:
                log.warning("backend_resolve_failed", backend=self.service, error=str(error) or repr(error))
            self._resolve_failed = True
            return
        self._resolve_failed = False
        known = {r.address: r for r in self.replicas}
        if set(current) == set(known):
            return
        self.replicas = [known.get(a) or Replica.connect(a) for a in current]
        gone = [r for a, r in known.items() if a not in current]
        log.info(
            "backend_replicas",
            backend=self.service,
            replicas=list(current),
            added=[a for a in current if a not in known],
            removed=[r.address for r in gone],
        )
        for replica in gone:
            closing = asyncio.create_task(replica.channel.close(grace=REMOVED_GRACE_S))
            self._retiring.add(closing)
            closing.add_done_callback(self._retiring.discard)

    def ready(self) -> list[Replica]:
        """The replicas that are up now (asking the others to connect): see ``Replica.is_up``,
        and of those the ones serving at the last health round, if any is."""
        up = [r for r in self.replicas if r.is_up()]
        return [r for r in up if r.serving] or up

    async def choose(self, key: bytes = b"") -> Replica:
        """The replica for a call: by ``key`` (a match id) when given, else in turn.

        By key it is rendezvous hashing: the connected replica with the highest hash of
        (its address, the key). A replica that comes or goes moves only the matches it
        wins or won; the others stay where they are.
        Raises ``Unavailable`` when no replica is up and none connects within CONNECT_WAIT_S."""
        ready = self.ready()
        if not ready:
            ready = await self._wait_for_one()
        if self._outage:
            self.set_outage(False)
        if len(ready) == 1:
            return ready[0]
        if key:
            return max(ready, key=lambda r: weight(key, r.seed))
        return ready[next(self._turn) % len(ready)]

    async def _wait_for_one(self) -> list[Replica]:
        connecting = [
            r.channel for r in self.replicas if r.channel.get_state(try_to_connect=True) not in _FAILED
        ]
        if connecting:
            waits = [asyncio.ensure_future(c.channel_ready()) for c in connecting]
            _done, pending = await asyncio.wait(
                waits, timeout=CONNECT_WAIT_S, return_when=asyncio.FIRST_COMPLETED
            )
            for wait in pending:
                wait.cancel()
            ready = self.ready()
            if ready:
                return ready
        self.set_outage(True)
        raise no_replica(self.service)

    def set_outage(self, outage: bool) -> None:
        """Log an outage once when it starts and once when it ends."""
        if outage == self._outage:
            return
        self._outage = outage
        if outage:
            log.warning("backend_unavailable", backend=self.service, replicas=list(self.addresses))
        else:
            log.info("backend_recovered", backend=self.service)

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.channel.close()
        for closing in list(self._retiring):
            closing.cancel()

    async def _replica_serving(self, channel: grpc.aio.Channel) -> bool | None:
        """Whether the replica answers SERVING; None: no answer."""
        request = health_pb2.HealthCheckRequest(service=self.service)
        try:
            # Waiting for a replica that is (re)connecting: the checks run side by side, so a
            # replica that is down costs this check HEALTH_TIMEOUT_S, not the others.
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                request, timeout=HEALTH_TIMEOUT_S, wait_for_ready=True
            )
        except grpc.aio.AioRpcError:
            return None
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def serving_count(self) -> int:
        """How many replicas answer SERVING for the game's service; each one's answer is kept
        for ``ready`` (a change logged once)."""
        replicas = list(self.replicas)
        answers = await asyncio.gather(*(self._replica_serving(r.channel) for r in replicas))
        for replica, answer in zip(replicas, answers, strict=True):
            if answer is None:
                replica.silent_rounds += 1
                serving = replica.serving and replica.silent_rounds < SILENT_ROUNDS
            else:
                replica.silent_rounds = 0
                serving = answer
            if serving != replica.serving:
                replica.serving = serving
                if serving:
                    log.info("backend_replica_serving", backend=self.service, replica=replica.address)
                else:
                    log.warning("backend_replica_not_serving", backend=self.service, replica=replica.address)
        return sum(1 for answer in answers if answer)

    async def serving(self) -> bool:
        return await self.serving_count() > 0


async def refresh_health(checker: health.aio.HealthServicer, pools: list[ReplicaPool]) -> None:
    """Mirror each game's backend health on the gateway's health service; the overall
    health (``""``, the one probes use) is SERVING only while every game has a replica.
    Each round first follows the listed names to their current replicas."""
    await asyncio.gather(*(pool.resolve() for pool in pools))
    counts = await asyncio.gather(*(pool.serving_count() for pool in pools))
    serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
    for pool, count in zip(pools, counts, strict=True):
        metrics.BACKENDS_UP.labels(service=pool.service).set(count)
        pool.set_outage(count == 0 and not pool.ready())
        await checker.set(pool.service, serving if count else not_serving)
    await checker.set("", serving if all(counts) else not_serving)


async def watch_health(
    checker: health.aio.HealthServicer, pools: list[ReplicaPool], every_s: float = 2.0
) -> None:
    while True:
        await refresh_health(checker, pools)
        await asyncio.sleep(every_s)
