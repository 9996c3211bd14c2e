"""The suite's Redis Cluster: 3 masters and 3 replicas on loopback (deploy/redis_cluster.py),
one for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy.redis_cluster import RedisClusterProcesses, running_redis_cluster

__all__ = ["RedisClusterProcesses", "redis_cluster", "running_redis_cluster"]


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterProcesses]:
    with running_redis_cluster() as cluster:
        yield cluster
