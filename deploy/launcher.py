"""Start the whole system as real processes: Redis, game service replicas, the gateway
(and, with ``nginx_front``, nginx in front of it), for ``make bench`` (bench/bench.py).
``make run`` supervises its own set (deploy/local.py).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from deploy import nginx
from deploy.redis_server import free_port, running_redis, wait_for_port


@dataclass
class System:
    gateway: str  # what clients call: the gateway, or nginx in front of it
    redis_url: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    # The Python gateway's own address (the same as ``gateway`` without nginx).
    python_gateway: str = ""


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
    nginx_front: bool = False,
    redis_url: str | None = None,
) -> Iterator[System]:
    """Everything up and listening for the block; stopped with SIGTERM (graceful) after it.
    With ``redis_url`` (e.g. a Redis Cluster's) the system uses that Redis instead of its own."""
    env = dict(os.environ)
    env.setdefault("MOGAMES_TOKEN_SECRET", secrets.token_urlsafe(32))
    processes: list[subprocess.Popen[bytes]] = []
    own_redis = contextlib.nullcontext(redis_url) if redis_url else running_redis(redis_port)
    with own_redis as redis_url, tempfile.TemporaryDirectory(prefix="mogames-") as workdir:
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
            python_gateway = f"127.0.0.1:{free_port()}" if nginx_front else gateway_listen
            env["MOGAMES_GATEWAY_LISTEN"] = python_gateway
            if nginx_front:
                # nginx, on loopback, names each client to the gateway (the lobby's budgets).
                env.setdefault("MOGAMES_TRUSTED_PROXIES", "127.0.0.1")
            command = [sys.executable, "-m", "gateway"]
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
            wait_for_port(int(python_gateway.rsplit(":", 1)[1]), timeout_s=60)
            if nginx_front:
                backends = {g: env[f"MOGAMES_BACKENDS_{g.upper()}"].split(",") for g in games}
                config = nginx.write_config(gateway_listen, python_gateway, backends, Path(workdir))
                processes.append(subprocess.Popen(nginx.command(config), stdout=log, stderr=log))
                wait_for_port(int(gateway_listen.rsplit(":", 1)[1]), timeout_s=60)
            yield System(gateway_listen, redis_url, processes, python_gateway)
        finally:
            _stop(processes)
