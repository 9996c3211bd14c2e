"""Start the whole system as real processes: Redis, game service replicas, the gateway.

Used by ``make run`` (deploy/local.py) and ``make bench`` (clients/bench.py).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from deploy.redis_server import free_port, running_redis, wait_for_port


@dataclass
class System:
    gateway: str
    redis_url: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def all_running(self) -> bool:
        return all(p.poll() is None for p in self.processes)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def running_system(
    games: list[str],
    replicas: int = 1,
    gateway_listen: str = "127.0.0.1:50051",
    redis_port: int | None = None,
    first_service_port: int | None = None,
    log: IO[bytes] | None = None,
) -> Iterator[System]:
    """Everything up and listening for the block; stopped with SIGTERM (graceful) after it."""
    env = dict(os.environ)
    env.setdefault("MOGAMES_TOKEN_SECRET", secrets.token_urlsafe(32))
    processes: list[subprocess.Popen[bytes]] = []
    with running_redis(redis_port) as redis_url:
        env["MOGAMES_REDIS_URL"] = redis_url
        try:
            ports: list[int] = []
            for game in games:
                addresses = []
                for _ in range(replicas):
                    port = first_service_port + len(ports) if first_service_port else free_port()
                    ports.append(port)
                    listen = f"127.0.0.1:{port}"
                    service_env = {**env, "MOGAMES_LISTEN": listen}
                    command = [sys.executable, "-m", "services", game]
                    processes.append(subprocess.Popen(command, env=service_env, stdout=log, stderr=log))
                    addresses.append(listen)
                env[f"MOGAMES_BACKENDS_{game.upper()}"] = ",".join(addresses)
            for port in ports:
                wait_for_port(port, timeout_s=60)
            env["MOGAMES_GATEWAY_LISTEN"] = gateway_listen
            command = [sys.executable, "-m", "gateway"]
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
            wait_for_port(int(gateway_listen.rsplit(":", 1)[1]), timeout_s=60)
            yield System(gateway_listen, redis_url, processes)
        finally:
            _stop(processes)
