"""A bare gRPC echo server, the baseline ``make bench`` compares game moves against.

python -m clients.echo 127.0.0.1:50099
"""

from __future__ import annotations

import sys
from typing import Any

import grpc

from services.runtime import logs, serving

METHOD = "/mogames.bench.Echo/Echo"


class EchoHandler(grpc.GenericRpcHandler):
    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        if handler_call_details.method != METHOD:
            return None

        async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return request

        return grpc.unary_unary_rpc_method_handler(echo)


async def main(listen: str) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([EchoHandler()])
    server.add_insecure_port(listen)
    checker = await serving.add_health_and_reflection(server, [])
    await serving.serve_until_signalled(server, checker, 1)


if __name__ == "__main__":
    logs.configure("warning", service="echo")
    serving.run(main(sys.argv[1]))
