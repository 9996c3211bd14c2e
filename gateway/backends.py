"""Channels to each game's replicas, spread round-robin, skipping replicas that are down."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import grpc

_CHANNEL_OPTIONS = [
    # A DNS name behind one address (a Kubernetes headless service) may resolve to many
    # replicas: spread over all of them.
    ("grpc.lb_policy_name", "round_robin"),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.max_receive_message_length", 16 * 1024 * 1024),
]


class ReplicaPool:
    def __init__(self, addresses: tuple[str, ...]) -> None:
        self.addresses = addresses
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
