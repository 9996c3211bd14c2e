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

import asyncio
import random
import time
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as aioredis
import structlog
from redis.asyncio.client import Pipeline, PubSub
from redis.asyncio.cluster import ClusterNode, ClusterPipeline
from redis.asyncio.connection import ConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import AuthenticationError, BusyLoadingError, RedisClusterException, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.utils import get_lib_version

from services.runtime import metrics, redis_private
from services.runtime.redis_lane import PipelinedLane

RedisClient = aioredis.Redis | aioredis.RedisCluster

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}
SINGLE_SCHEMES = ("redis", "rediss", "unix")

SOCKET_TIMEOUT_S = 1.5

# A script's first lines when it needs the time: Redis's clock in ms as `now`, the same for
# every replica whatever its own clock says.
NOW_MS_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
CONNECT_TIMEOUT_S = 1.0
# Watchers used to hold a connection each; the watch hub needs only one, but a busy
# replica still runs many calls at once.
MAX_CONNECTIONS = 512
# A burst (2,000 watches opening at once) opens as many connections as it runs commands at
# once; those left idle this long are closed, all but the few most recently used.
IDLE_CLOSE_S = 5.0
KEEP_IDLE = 2

# What CLIENT SETINFO tells Redis about the client, made once: left to redis-py, every new
# connection reads the package's metadata again (importlib.metadata parsing its files, a
# tenth of a busy replica's CPU when connections came and went).
_DRIVER_INFO = DriverInfo(name="redis-py", lib_version=get_lib_version())


log = structlog.get_logger("redis")

# How long start-up waits for a Redis it cannot reach before giving up (one that answers
# "loading" is waited for as long as it loads).
UNREACHABLE_BUDGET_S = 30.0
_FIRST_WAIT_S, _LONGEST_WAIT_S = 0.1, 2.0


class RedisUrlError(ValueError):
    pass


class RedisStartupError(RuntimeError):
    """Redis cannot be used at start-up; the message is one line for the operator."""


@dataclass(frozen=True)
class ClusterTarget:
    nodes: tuple[tuple[str, int], ...]
    tls: bool
    username: str | None
    password: str | None


def text(value: Any, errors: str = "strict") -> str:
    """A reply or header value as text: bytes decoded as UTF-8 (redis-py answers bytes
    unless asked to decode, gRPC gives ``-bin`` headers as bytes), anything else as str."""
    return value.decode(errors=errors) if isinstance(value, bytes) else str(value)


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def check_url(url: str) -> None:
    """Raise RedisUrlError naming what is wrong with ``url``. Nothing is guessed: redis-py
    reads ``redis:/host:port`` (one slash) as localhost:6379, so it is refused here."""
    parts = urlsplit(url)
    scheme = parts.scheme
    if scheme in CLUSTER_SCHEMES:
        parse_cluster_url(url)
        return
    if scheme not in SINGLE_SCHEMES:
        raise RedisUrlError(
            "must be a redis://, rediss://, unix://, redis+cluster:// or rediss+cluster:// URL, "
            f"got scheme {scheme!r}"
        )
    if scheme == "unix":
        if not parts.path:
            raise RedisUrlError("must be unix:///path/to/redis.sock, got no path")
        return
    shape = f"must be {scheme}://[user:password@]host[:port][/db]"
    if not url.startswith(f"{scheme}://") or not parts.hostname:
        raise RedisUrlError(f"{shape}, got no host in {_without_password(url)!r}")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise RedisUrlError(f"{shape}, got a bad port in {_without_password(url)!r}") from None
    if parts.path.strip("/") and not parts.path.strip("/").isdigit():
        raise RedisUrlError(f"{shape}, got database {parts.path.strip('/')!r}")


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()


def describe(url: str) -> str:
    """Where ``url`` points, without its password, for messages."""
    return _without_password(url)


async def wait_until_ready(client: RedisClient, url: str, budget_s: float = UNREACHABLE_BUDGET_S) -> None:
    """Return once Redis answers a PING. While it loads its data ("LOADING") this waits as
    long as the load takes; while it cannot be reached, ``budget_s`` at most; each with
    backoff and one log line. Raises RedisStartupError (one line) for a refused password or
    once the budget is spent."""
    where = describe(url)
    delay = _FIRST_WAIT_S
    deadline = time.monotonic() + budget_s
    told: str | None = None
    while True:
        try:
            await client.ping()
        except AuthenticationError as error:
            raise _refused(where, error) from None
        except ResponseError as error:
            if "NOAUTH" in str(error) or "WRONGPASS" in str(error):
                raise _refused(where, error) from None
            raise
        except BusyLoadingError:
            deadline = time.monotonic() + budget_s  # it is there, and making progress
            if told != "loading":
                told = "loading"
                log.warning("redis_loading", redis=where, note="waiting until Redis has loaded its data")
        except (RedisConnectionError, RedisTimeoutError, RedisClusterException, OSError) as error:
            if time.monotonic() >= deadline:
                raise RedisStartupError(
                    f"Redis at {where} unreachable after {budget_s:g} s ({_one_line(error)})"
                ) from None
            if told != "unreachable":
                told = "unreachable"
                log.warning("redis_unreachable", redis=where, error=_one_line(error), retry_for_s=budget_s)
        else:
            if told is not None:
                log.info("redis_ready", redis=where)
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, _LONGEST_WAIT_S)


def _refused(where: str, error: BaseException) -> RedisStartupError:
    return RedisStartupError(
        f"Redis at {where} refused the password: set MOGAMES_REDIS_PASSWORD (or the URL's) to "
        f"its requirepass ({_one_line(error)})"
    )


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


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


class IdleClosingPool(ConnectionPool):
    """A connection pool that closes the connections a burst left idle (redis-py keeps
    every connection it ever opened). The pool hands out the most recently released
    connection first, so under steady load the same few stay busy and the rest go idle."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._released_at: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self._closer: asyncio.Task[None] | None = None
        # No socket timeout of its own: each command's timeout covers its write and reply.
        self._lane = PipelinedLane(
            lambda: self.connection_class(**{**self.connection_kwargs, "socket_timeout": None})
        )

    async def quick(self, *args: str | bytes | int, timeout_s: float = SOCKET_TIMEOUT_S) -> Any:
        """One short command on the pool's pipelined lane (services/runtime/redis_lane.py):
        the hot path (a move's Lua commit) without the pool's per-command work. A connection
        error is raised as redis-py raises it, with nothing retried: the caller knows whether
        its command is safe to send again."""
        return await self._lane.command(args, timeout_s)

    async def release(self, connection: Any) -> None:
        await super().release(connection)
        self._released_at[connection] = time.monotonic()
        if len(redis_private.idle_connections(self)) > KEEP_IDLE:
            self._close_idle_later()

    def _close_idle_later(self) -> None:
        if self._closer is None or self._closer.done():
            # The task holds the pool weakly: a pool nobody uses any more is not kept alive.
            self._closer = asyncio.get_running_loop().create_task(_close_idle_loop(weakref.ref(self)))

    async def close_idle(self) -> bool:
        """Close the idle connections past KEEP_IDLE; whether more than those stay open."""
        now = time.monotonic()

        def idle(spare: list[Any]) -> list[Any]:
            return [c for c in spare if now - self._released_at.get(c, now) >= IDLE_CLOSE_S]

        async with redis_private.pool_lock(self):
            available = redis_private.idle_connections(self)
            closing = idle(available[: max(0, len(available) - KEEP_IDLE)])
            for connection in closing:
                available.remove(connection)
            left = len(available)
        for connection in closing:
            await connection.disconnect()
        return left > KEEP_IDLE

    async def disconnect(self, inuse_connections: bool = True) -> None:
        if self._closer is not None:
            self._closer.cancel()
        await self._lane.close()
        await super().disconnect(inuse_connections)


async def _close_idle_loop(pool_ref: weakref.ref[IdleClosingPool]) -> None:
    while True:
        await asyncio.sleep(IDLE_CLOSE_S / 2)
        pool = pool_ref()
        if pool is None or not await pool.close_idle():
            return
        del pool  # not held while asleep


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
        "driver_info": _DRIVER_INFO,
    }
    if not is_cluster_url(url):
        if password and not urlsplit(url).password:
            common["password"] = password
        pool = IdleClosingPool.from_url(url, retry=_retry(2), health_check_interval=30, **common)
        return TimedRedis.from_pool(pool)
    target = parse_cluster_url(url)
    return TimedRedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
        username=target.username,
        password=target.password or password or None,
        ssl=target.tls,
        # A failover takes the cluster's node timeout plus an election (a few seconds at
        # most): enough attempts, each re-reading the topology, to ride over most of it.
        retry=_retry(6),
        **common,
    )


def _command_name(args: tuple[Any, ...]) -> str:
    return str(args[0]).split(" ", 1)[0].upper() if args else "?"


class TimedRedis(aioredis.Redis):
    """redis-py's client, each command and pipeline timed for the metrics."""

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super().execute_command(*args, **options)
        finally:
            metrics.redis_command_seconds(_command_name(args), time.perf_counter() - started)

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return _TimedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)


class _TimedExecute:
    """A pipeline's ``execute``, timed for the metrics (one and cluster pipelines alike)."""

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super().execute(*args, **kwargs)  # type: ignore[misc]
        finally:
            metrics.redis_command_seconds("PIPELINE", time.perf_counter() - started)


class _TimedPipeline(_TimedExecute, Pipeline):  # type: ignore[misc]  # redis-py's own bases disagree
    pass


class TimedRedisCluster(aioredis.RedisCluster):
    """redis-py's cluster client, timed like TimedRedis, with its lost connections reported
    as such: on a failover it closes a failed node's connections, also under commands still
    using one of them; such a command then fails inside the client (AttributeError: its
    writer is gone). That is a lost connection, so the caller answers UNAVAILABLE and the
    client retries, as for any other."""

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super().execute_command(*args, **kwargs)
        except AttributeError as error:
            raise RedisConnectionError(f"connection closed under the command: {error}") from error
        finally:
            metrics.redis_command_seconds(_command_name(args), time.perf_counter() - started)

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> ClusterPipeline:
        if shard_hint:
            return super().pipeline(transaction, shard_hint)  # refused by redis-py, by name
        return _TimedClusterPipeline(self, transaction)  # type: ignore[abstract]  # as redis-py makes it


class _TimedClusterPipeline(_TimedExecute, ClusterPipeline):  # type: ignore[misc]  # as above
    pass


def _roaming(connection_class: Any, cluster: aioredis.RedisCluster) -> Any:
    """``connection_class`` connecting to a random cluster node each time, another one than
    before when it can: a reconnect after its node died lands on a live one (and the pubsub
    resubscribes there)."""

    class RoamingConnection(connection_class):  # type: ignore[misc, valid-type]
        async def connect_check_health(self, *args: Any, **kwargs: Any) -> Any:
            # Every way redis-py (re)connects goes through here: pick the node first.
            if not self.is_connected:
                nodes = cluster.get_nodes()
                current = (getattr(self, "host", None), getattr(self, "port", None))
                others = [n for n in nodes if (n.host, n.port) != current]
                node = random.choice(others or nodes)
                self.host, self.port = node.host, node.port
            return await super().connect_check_health(*args, **kwargs)

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
    return aioredis.Redis.from_pool(dedicated).pubsub(push_handler_func=_as_read)


async def _as_read(message: Any) -> Any:
    """A pub/sub message (a RESP3 push) handed back as read, to whoever reads the connection
    (the watch hub); redis-py's default handler logs each one first."""
    return message
