"""The gateway asks clients to reconnect after max_connection_age (so a balancer can move
them to replicas started since); the client reconnects by itself and goes on."""

from __future__ import annotations

import asyncio
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.server import build as build_gateway
from services.runtime.settings import GatewaySettings


async def test_clients_are_asked_to_reconnect_after_the_connection_age(cluster):
    gateway, _checker, pools, port = await build_gateway(
        GatewaySettings(
            listen="127.0.0.1:0",
            backends={"happy_mochi": tuple(cluster.replicas_addresses["happy_mochi"])},
            shutdown_grace_s=1,
            log_level="warning",
            max_connection_age_s=1,
        )
    )
    await gateway.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert channel.get_state() == grpc.ChannelConnectivity.READY
            deadline = time.monotonic() + 10
            while channel.get_state() == grpc.ChannelConnectivity.READY:
                assert time.monotonic() < deadline, "the connection outlived its maximum age"
                await asyncio.sleep(0.1)
            # Told to go away, the client connects again for its next call.
            reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await gateway.stop(None)
        for pool in pools:
            await pool.close()
