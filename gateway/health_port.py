"""The gateway's health-only port (``MOGAMES_HEALTH_LISTEN``): grpc.health.v1 in plaintext.

The kubelet's native gRPC probes cannot speak TLS, and the public port serves TLS in a
deployment. This port shares the public port's HealthServicer, so a probe sees exactly the
statuses a client would (NOT_SERVING from the start of a graceful shutdown), and it serves
nothing else: a game or lobby call, or reflection, answers UNIMPLEMENTED here.
"""

from __future__ import annotations

from grpc import aio
from grpc_health.v1 import health, health_pb2_grpc

from services.runtime import serving


async def start_health_port(listen: str, checker: health.aio.HealthServicer) -> tuple[aio.Server, int]:
    """A started server answering only Health/Check and Health/Watch; with its bound port."""
    server = aio.server(options=[("grpc.so_reuseport", 0)])
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    port = serving.bind(server.add_insecure_port, listen)
    await server.start()
    return server, port
