"""The one place that makes Redis clients: a single Redis or a Redis Cluster, by URL.

``redis://host:port/db`` (or ``rediss://`` for TLS, ``unix://path``) is one Redis;
``redis+cluster://host:port,host:port`` (or ``rediss+cluster://``) is a Redis Cluster
reached through any of the listed nodes. A password in the URL wins over
``MOGAMES_REDIS_PASSWORD``.

Every per-match key carries the match id as a hash tag (``services/runtime/keys.py``), so
one match's reads, Lua commit and pipelines stay in one slot and work the same on both.
Timeouts are short so a hung or dead Redis answers UNAVAILABLE within a second or two
instead of holding calls until their deadline; on a cluster the client follows MOVED/ASK
redirections itself and, on a failover, re-reads the topology and retries a few times.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.connection import ConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

RedisClient = aioredis.Redis | aioredis.RedisCluster

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}
SINGLE_SCHEMES = ("redis", "rediss", "unix")

SOCKET_TIMEOUT_S = 1.5
CONNECT_TIMEOUT_S = 1.0
# Watchers used to hold a connection each; the watch hub needs only one, but a busy
# replica still runs many calls at once.
MAX_CONNECTIONS = 512


class RedisUrlError(ValueError):
    pass


@dataclass(frozen=True)
class ClusterTarget:
    nodes: tuple[tuple[str, int], ...]
    tls: bool
    username: str | None
    password: str | None


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def check_url(url: str) -> None:
    """Raise RedisUrlError naming what is wrong with ``url``."""
    scheme = urlsplit(url).scheme
    if scheme in CLUSTER_SCHEMES:
        parse_cluster_url(url)
    elif scheme not in SINGLE_SCHEMES:
        raise RedisUrlError(
            "must be a redis://, rediss://, unix://, redis+cluster:// or rediss+cluster:// URL, "
            f"got scheme {scheme!r}"
        )


def parse_cluster_url(url: str) -> ClusterTarget:
    """``redis+cluster://[user:password@]host:port,host:port[/]``: the seed nodes."""
    parts = urlsplit(url)
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":") if credentials else ("", "", "")
    nodes = []
    for address in hosts.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise RedisUrlError(f"cluster nodes must be host:port, got {address!r}")
        nodes.append((host.strip("[]"), int(port)))
    if parts.path not in ("", "/", "/0"):
        raise RedisUrlError("a Redis Cluster has only database 0")
    return ClusterTarget(
        nodes=tuple(nodes),
        tls=CLUSTER_SCHEMES[parts.scheme],
        username=unquote(username) or None,
        password=unquote(password) or None,
    )


def _retry(attempts: int) -> Retry:
    # Only connection errors: a command whose reply timed out may have run, and a Lua
    # commit is made safe to repeat by its request id, not by the client.
    return Retry(ExponentialBackoff(cap=0.5, base=0.05), attempts, supported_errors=(RedisConnectionError,))


def connect(
    url: str,
    password: str | None = None,
    max_connections: int = MAX_CONNECTIONS,
    socket_timeout_s: float | None = SOCKET_TIMEOUT_S,
) -> RedisClient:
    """A client for ``url``; nothing is sent until its first command.

    ``socket_timeout_s`` must exceed the longest ``BLOCK`` its caller asks for (None: no limit).
    """
    check_url(url)
    common: dict[str, Any] = {
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "max_connections": max_connections,
    }
    if not is_cluster_url(url):
        if password and not urlsplit(url).password:
            common["password"] = password
        return aioredis.Redis.from_url(url, retry=_retry(2), health_check_interval=30, **common)
    target = parse_cluster_url(url)
    return aioredis.RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
        username=target.username,
        password=target.password or password or None,
        ssl=target.tls,
        # A failover takes the cluster's node timeout plus an election (a few seconds at
        # most): enough attempts, each re-reading the topology, to ride over most of it.
        retry=_retry(6),
        **common,
    )


def _roaming(connection_class: Any, cluster: aioredis.RedisCluster) -> Any:
    """``connection_class`` connecting to a random cluster node each time, another one than
    before when it can: a reconnect after its node died lands on a live one (and the pubsub
    resubscribes there)."""

    class RoamingConnection(connection_class):  # type: ignore[misc, valid-type]
        def _connection_arguments(self) -> Any:
            nodes = cluster.get_nodes()
            current = (getattr(self, "host", None), getattr(self, "port", None))
            others = [n for n in nodes if (n.host, n.port) != current]
            node = random.choice(others or nodes)
            self.host, self.port = node.host, node.port
            return super()._connection_arguments()

    return RoamingConnection


def pubsub(client: RedisClient) -> PubSub:
    """A pub/sub connection reaching the same Redis (or cluster) as ``client``, of its own.

    It waits for messages as long as it takes: no socket timeout (a quiet subscriber would
    otherwise time out and resubscribe every few seconds) and no health-check PINGs (quiet
    watchers cost Redis nothing); TCP keepalive notices a peer that vanished. On a cluster,
    classic (not sharded) messages reach every node, so any node will do: each (re)connect
    goes to a random node, another one than before, so losing a node costs a reconnect.
    ``aclose()`` closes its connection.
    """
    connection_class: Any
    if isinstance(client, aioredis.RedisCluster):
        node = random.choice(client.get_nodes())
        connection_class = _roaming(node.connection_class, client)
        kwargs = {**node.connection_kwargs, "host": node.host, "port": node.port}
    else:
        pool = client.connection_pool
        connection_class, kwargs = pool.connection_class, {**pool.connection_kwargs}
    kwargs.update(socket_timeout=None, health_check_interval=0, socket_keepalive=True)
    dedicated = ConnectionPool(connection_class=connection_class, max_connections=1, **kwargs)
    return aioredis.Redis.from_pool(dedicated).pubsub()
