"""Channels to each game's replicas: which one serves a call, and whether any is up.

A match's calls go to one replica (a hash of the match id over the replicas that are up),
so that replica's cache of the match stays warm; any replica answers correctly, only slower.
When every replica of a game is down, calls fail at once with UNAVAILABLE instead of
waiting for a deadline; they wait (briefly) only for a replica that is still connecting.
"""

from __future__ import annotations

import asyncio
import itertools
import zlib

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.runtime import metrics
from services.runtime.errors import Unavailable

log = structlog.get_logger("backends")

_CHANNEL_OPTIONS = [
    # A DNS name behind one address (a Kubernetes headless service) may resolve to many
    # replicas: spread over all of them.
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

_READY = grpc.ChannelConnectivity.READY
_FAILED = (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN)


class ReplicaPool:
    def __init__(self, service: str, addresses: tuple[str, ...]) -> None:
        self.service = service
        self.addresses = addresses
        self.channels = [
            grpc.aio.insecure_channel(f"dns:///{a}", options=_CHANNEL_OPTIONS) for a in addresses
        ]
        self._hash_seeds = [a.encode() for a in addresses]
        self._turn = itertools.count()
        self._outage = False

    def ready(self) -> list[int]:
        """Indexes of the replicas that are connected now (asking the others to connect)."""
        return [i for i, c in enumerate(self.channels) if c.get_state(try_to_connect=True) is _READY]

    def pick(self) -> grpc.aio.Channel:
        """A replica's channel for a caller that routes by itself (the web port): the next
        connected one in turn, else any (the call then waits or fails on its own)."""
        ready = self.ready()
        return self.channels[ready[next(self._turn) % len(ready)] if ready else 0]

    async def choose(self, key: bytes = b"") -> int:
        """The replica for a call: by ``key`` (a match id) when given, else in turn.

        Raises ``Unavailable`` when no replica is up and none connects within CONNECT_WAIT_S."""
        ready = self.ready()
        if not ready:
            ready = await self._wait_for_one()
        if self._outage:
            self.set_outage(False)
        if len(ready) == 1:
            return ready[0]
        if key:
            seeds = self._hash_seeds
            return max(ready, key=lambda i: zlib.crc32(key, zlib.crc32(seeds[i])))
        return ready[next(self._turn) % len(ready)]

    async def _wait_for_one(self) -> list[int]:
        connecting = [c for c in self.channels if c.get_state(try_to_connect=True) not in _FAILED]
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
        raise Unavailable(f"{self.service}: no replica is reachable, retry later", reason="no_replica")

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
        for channel in self.channels:
            await channel.close()

    async def _replica_serving(self, channel: grpc.aio.Channel) -> bool:
        request = health_pb2.HealthCheckRequest(service=self.service)
        try:
            # Waiting for a replica that is (re)connecting: the checks run side by side, so a
            # replica that is down costs this check HEALTH_TIMEOUT_S, not the others.
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                request, timeout=HEALTH_TIMEOUT_S, wait_for_ready=True
            )
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def serving_count(self) -> int:
        """How many replicas answer SERVING for the game's service."""
        answers = await asyncio.gather(*(self._replica_serving(c) for c in self.channels))
        return sum(answers)

    async def serving(self) -> bool:
        return await self.serving_count() > 0


async def refresh_health(checker: health.aio.HealthServicer, pools: list[ReplicaPool]) -> None:
    """Mirror each game's backend health on the gateway's health service; the overall
    health (``""``, the one probes use) is SERVING only while every game has a replica."""
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
