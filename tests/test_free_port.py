"""The ports tests and `make run` hand to the servers they start: outside the kernel's range
for outgoing connections (which any connection may take at any moment) and, under xdist, in
a slice of the worker's own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from deploy.redis_server import CLUSTER_BUS_OFFSET, _outgoing_ports_start, free_port


def test_free_ports_lie_below_the_outgoing_range_with_room_for_a_cluster_bus():
    outgoing = _outgoing_ports_start()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    for port in ports:
        assert port + CLUSTER_BUS_OFFSET < outgoing
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free indeed


def test_each_xdist_worker_hands_out_ports_of_its_own():
    script = "from deploy.redis_server import free_port; print(*[free_port() for _ in range(200)])"

    def ports_of(worker: str) -> set[int]:
        env = {**os.environ, "PYTEST_XDIST_WORKER": worker, "PYTEST_XDIST_WORKER_COUNT": "3"}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        return {int(port) for port in done.stdout.split()}

    first, second, third = ports_of("gw0"), ports_of("gw1"), ports_of("gw2")
    assert len(first) == len(second) == len(third) == 200
    assert max(first) < min(second) and max(second) < min(third)
