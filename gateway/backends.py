"""Channels to each game's replicas, spread round-robin, skipping replicas that are down."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

_CHANNEL_OPTIONS = [
    # A DNS name behind one address (a Kubernetes headless service) may resolve to many
    # replicas: spread over all of them.
    ("grpc.lb_policy_name", "round_robin"),
    ("grpc.keepalive_time_ms", 30_000),
    # Reconnect soon after a replica restarts; calls wait for it (wait_for_ready).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
    ("grpc.max_receive_message_length", 16 * 1024 * 1024),
]


class ReplicaPool:
    def __init__(self, service: str, addresses: tuple[str, ...]) -> None:
        self.service = service
        self.channels = [
            grpc.aio.insecure_channel(f"dns:///{a}", options=_CHANNEL_OPTIONS) for a in addresses
        ]
        self._turn: Iterator[int] = itertools.cycle(range(len(self.channels)))

    def pick(self) -> grpc.aio.Channel:
        """The next replica in turn, passing over any in TRANSIENT_FAILURE while another is up."""
        for _ in range(len(self.channels)):
            channel = self.channels[next(self._turn)]
            if channel.get_state(try_to_connect=True) != grpc.ChannelConnectivity.TRANSIENT_FAILURE:
                return channel
        return self.channels[next(self._turn)]

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()

    async def serving(self, timeout_s: float = 3.0) -> bool:
        """Whether any replica answers SERVING for the game's service."""
        request = health_pb2.HealthCheckRequest(service=self.service)
        for channel in self.channels:
            try:
                reply = await health_pb2_grpc.HealthStub(channel).Check(
                    request, timeout=timeout_s, wait_for_ready=True
                )
            except grpc.aio.AioRpcError:
                continue
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return True
        return False


async def refresh_health(checker: health.aio.HealthServicer, pools: list[ReplicaPool]) -> None:
    """Mirror each game's backend health on the gateway's own health service."""
    for pool in pools:
        up = await pool.serving()
        status = health_pb2.HealthCheckResponse.SERVING if up else health_pb2.HealthCheckResponse.NOT_SERVING
        await checker.set(pool.service, status)


async def watch_health(
    checker: health.aio.HealthServicer, pools: list[ReplicaPool], every_s: float = 5.0
) -> None:
    while True:
        await refresh_health(checker, pools)
        await asyncio.sleep(every_s)
