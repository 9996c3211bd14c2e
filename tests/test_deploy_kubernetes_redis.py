"""The Redis pods' own shell, as the manifests render it, run for real: the start-up command
makes Redis's config from the mounted Secret file (password required, redis.conf included),
the readiness probe authenticates from that file, and the exporter's password file is the
JSON map it reads. Paths under /run, /etc and /data are moved into a temporary folder, and
the Redis is the one the tests run (a Redis Cluster node's settings need Redis 7: its
generated config is read, not run)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis

from deploy.manifests import copy_tree, objects, render
from deploy.redis_server import free_port, redis_executable, wait_for_port

PASSWORD = "pw-0123"  # deploy/manifests.py's made-up secrets.env


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    deploy = copy_tree(tmp_path_factory.mktemp("k8s"))
    return {variant: objects(render(deploy, variant)) for variant in ("default", "redis-cluster")}


class Pod:
    """A pod's file system under ``root``: the Secret's file, the config maps, empty folders."""

    def __init__(self, root: Path, manifests: list[dict[str, Any]], port: int) -> None:
        self.root = root
        (root / "secrets").mkdir()
        (root / "secrets" / "redis-password").write_text(PASSWORD)
        for folder in ("run", "exporter", "data", "etc", "etc-cluster"):
            (root / folder).mkdir()
        for config in (m for m in manifests if m["kind"] == "ConfigMap"):
            name = config["metadata"]["name"]
            folder = "etc-cluster" if name.startswith("redis-cluster-config") else "etc"
            for file, text in config["data"].items():
                text = text.replace("dir /data", f"dir {root / 'data'}").replace("port 6379", f"port {port}")
                (root / folder / file).write_text(text)
        self.redis_bin = Path(redis_executable()).parent

    def shell(self, script: str) -> str:
        for path, local in (
            ("/run/secrets/mogames", "secrets"),
            ("/run/redis", "run"),
            ("/run/exporter", "exporter"),
            ("/etc/redis-cluster", "etc-cluster"),
            ("/etc/redis", "etc"),
        ):
            script = script.replace(path, str(self.root / local))
        return script.replace("redis-server ", f"{self.redis_bin}/redis-server ")

    def run(self, script: str, **env: str) -> subprocess.CompletedProcess[str]:
        path = f"{self.redis_bin}:{os.environ['PATH']}"
        return subprocess.run(
            ["sh", "-c", self.shell(script)],
            env={**os.environ, "PATH": path, **env},
            capture_output=True,
            text=True,
            timeout=30,
        )


def redis_pod(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    (statefulset,) = [m for m in manifests if m["kind"] == "StatefulSet"]
    pod: dict[str, Any] = statefulset["spec"]["template"]["spec"]
    return pod


def test_the_single_redis_starts_with_the_secret_file_s_password_and_its_probe_and_exporter_use_it(
    rendered, tmp_path
):
    port = free_port()
    pod_spec = redis_pod(rendered["default"])
    pod = Pod(tmp_path, rendered["default"], port)
    (init,) = pod_spec["initContainers"]
    assert pod.run(init["args"][0]).returncode == 0
    assert json.loads((tmp_path / "exporter" / "passwords.json").read_text()) == {
        "redis://localhost:6379": PASSWORD
    }
    container = pod_spec["containers"][0]
    server = subprocess.Popen(
        ["sh", "-c", pod.shell(container["args"][0])], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        wait_for_port(port)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).ping()
        client = redis.Redis(port=port, password=PASSWORD)
        assert client.ping()
        # redis.conf is included: durable, and refusing writes rather than evicting when full.
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        probe = container["readinessProbe"]["exec"]["command"]
        assert probe[:2] == ["sh", "-c"]
        local_probe = probe[2].replace("redis-cli ping", f"redis-cli -p {port} ping")
        assert pod.run(local_probe).returncode == 0
        (tmp_path / "secrets" / "redis-password").write_text("wrong")
        assert pod.run(local_probe).returncode != 0
        client.shutdown(nosave=True)
    finally:
        server.wait(timeout=10)
    # The password never reaches a command line, and its config file is the owner's alone.
    assert PASSWORD not in container["args"][0]
    assert (tmp_path / "run" / "redis.conf").stat().st_mode & 0o077 == 0


def test_a_redis_cluster_node_announces_its_name_and_authenticates_to_its_master(rendered, tmp_path):
    pod = Pod(tmp_path, rendered["redis-cluster"], free_port())
    container = redis_pod(rendered["redis-cluster"])["containers"][0]
    made = pod.run(container["args"][0].replace("exec redis-server", "exec true"), POD_NAME="redis-cluster-4")
    assert made.returncode == 0, made.stderr
    config = (tmp_path / "run" / "redis.conf").read_text().splitlines()
    assert config == [
        f"include {tmp_path / 'etc' / 'redis.conf'}",
        f"include {tmp_path / 'etc-cluster' / 'cluster.conf'}",
        "cluster-announce-hostname redis-cluster-4.redis-cluster",
        f'requirepass "{PASSWORD}"',
        f'masterauth "{PASSWORD}"',
    ]
    cluster = (tmp_path / "etc-cluster" / "cluster.conf").read_text().splitlines()
    assert {
        "cluster-enabled yes",
        "cluster-config-file /data/nodes.conf",
        "cluster-node-timeout 1000",
    } <= set(cluster)
