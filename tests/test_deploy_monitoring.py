"""The monitoring component (deploy/kubernetes/components/monitoring) as the production variant
renders it: its rules load in a real Prometheus's promtool (check rules), its alerts fire on
staged series (promtool test rules), the dashboard's queries parse and name only series
something exports, and the ServiceMonitor reaches every metrics port."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.manifests import copy_tree, objects, render

PROJECT = Path(__file__).resolve().parents[1]
# Where the project's own metrics are defined.
METRIC_SOURCES = [
    PROJECT / "services" / "runtime" / "metrics.py",
    PROJECT / "services" / "workers" / "worker_metrics.py",
    *sorted((PROJECT / "gateway").glob("*.py")),
]


STALLED_DESCRIPTION = (
    "See the match_stalled warnings (match, version, seats); a fresh WatchMatch of the seat gets its prompt."
)
INTERNAL_DESCRIPTION = (
    "Every transient failure is answered UNAVAILABLE; these are not. "
    "The process logs each one with its traceback."
)


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return objects(render(copy_tree(tmp_path_factory.mktemp("k8s")), "production"))


def _one(manifests: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)


def _rules(production: list[dict[str, Any]], into: Path) -> Path:
    path = into / "mogames.rules.yaml"
    path.write_text(yaml.safe_dump(_one(production, "PrometheusRule")["spec"]))
    return path


def test_the_rules_load_in_promtool(production, tmp_path):
    checked = _promtool("check", "rules", str(_rules(production, tmp_path)))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    groups = _one(production, "PrometheusRule")["spec"]["groups"]
    count = sum(len(group["rules"]) for group in groups)
    assert f"SUCCESS: {count} rules found" in checked.stdout


def test_the_alerts_fire_on_staged_series_and_stay_quiet_without_them(production, tmp_path):
    rules = _rules(production, tmp_path)
    cases = {
        "rule_files": [rules.name],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": 'mogames_stalled_matches{game="more", pod="game-more-1"}',
                        "values": "0 0 1x10",
                    },
                    {"series": 'mogames_stalled_matches{game="mori", pod="game-mori-1"}', "values": "0x12"},
                    {
                        "series": 'mogames_gateway_backends_up{service="mogames.mori.v1.Mori"}',
                        "values": "2 0x5",
                    },
                    {"series": 'redis_up{pod="redis-cluster-3"}', "values": "1 1 0 0 0"},
                    # 1 INTERNAL a minute against 100 OKs: a bug, whatever its share.
                    {"series": 'mogames_rpcs_total{method="SubmitMove", code="OK"}', "values": "0+100x10"},
                    {
                        "series": 'mogames_rpcs_total{method="SubmitMove", code="INTERNAL"}',
                        "values": "0+1x10",
                    },
                ],
                "alert_rule_test": [
                    {
                        "eval_time": "8m",
                        "alertname": "MogamesStalledMatches",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", "game": "more"},
                                "exp_annotations": {
                                    "summary": "1 live more matches wait for a seat that was never prompted",
                                    "description": STALLED_DESCRIPTION,
                                },
                            }
                        ],
                    },
                    {"eval_time": "3m", "alertname": "MogamesStalledMatches", "exp_alerts": []},
                    {
                        "eval_time": "4m",
                        "alertname": "MogamesGameWithoutReplicas",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "critical", "service": "mogames.mori.v1.Mori"},
                                "exp_annotations": {
                                    "summary": "No replica of mogames.mori.v1.Mori answers the gateways: "
                                    "its calls are UNAVAILABLE"
                                },
                            }
                        ],
                    },
                    {
                        "eval_time": "4m",
                        "alertname": "MogamesRedisDown",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "critical", "pod": "redis-cluster-3"},
                                "exp_annotations": {
                                    "summary": "Redis redis-cluster-3 does not answer its exporter"
                                },
                            }
                        ],
                    },
                    {
                        "eval_time": "10m",
                        "alertname": "MogamesInternalErrors",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", "method": "SubmitMove"},
                                "exp_annotations": {
                                    "summary": "SubmitMove answers INTERNAL or UNKNOWN: "
                                    "a bug, not a transient failure",
                                    "description": INTERNAL_DESCRIPTION,
                                },
                            }
                        ],
                    },
                    # 1 % of the calls: under the 5 % this alert waits for.
                    {"eval_time": "10m", "alertname": "MogamesUnavailableAnswers", "exp_alerts": []},
                ],
            }
        ],
    }
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(cases))
    tested = _promtool("test", "rules", str(tmp_path / "cases.yaml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_dashboard_queries_parse_and_name_only_exported_or_recorded_series(production, tmp_path):
    dashboard_map = next(
        m for m in production if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "mogames-dashboard"
    )
    assert dashboard_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(dashboard_map["data"]["mogames.json"])
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(expressions) == len(dashboard["panels"]) >= 12
    # promtool parses each query as a recording rule's expression.
    as_rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"dashboard:panel{i}", "expr": e} for i, e in enumerate(expressions)],
            }
        ]
    }
    (tmp_path / "dashboard.rules.yaml").write_text(yaml.safe_dump(as_rules))
    checked = _promtool("check", "rules", str(tmp_path / "dashboard.rules.yaml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    recorded = {
        rule["record"]
        for group in _one(production, "PrometheusRule")["spec"]["groups"]
        for rule in group["rules"]
        if "record" in rule
    }
    exported = _exported_names()
    for expression in expressions:
        for name in re.findall(r"\b(mogames[:_][a-z0-9_:]+|redis_[a-z_]+)\b", expression):
            if name.startswith("redis_"):
                continue  # redis_exporter's, next to every Redis
            assert name in recorded | exported, f"{name} in {expression!r} is neither exported nor recorded"
    for group in _one(production, "PrometheusRule")["spec"]["groups"]:
        for rule in group["rules"]:
            for name in re.findall(r"\b(mogames_[a-z0-9_]+)\b", rule["expr"]):
                assert name in exported, f"{name} in rule {rule.get('record') or rule.get('alert')}"


def _exported_names() -> set[str]:
    """The series names the project's metrics expose (a counter's _total, a histogram's
    _bucket, _sum and _count)."""
    names = set()
    for source in METRIC_SOURCES:
        for kind, name in re.findall(
            r"\b(Counter|Gauge|Histogram)\(\s*\"(mogames_[a-z0-9_]+)\"", source.read_text()
        ):
            names |= {
                "Counter": {f"{name}_total"},
                "Gauge": {name},
                "Histogram": {f"{name}_bucket", f"{name}_sum", f"{name}_count"},
            }[kind]
    assert {"mogames_rpcs_total", "mogames_stalled_matches", "mogames_gateway_backends_up"} <= names
    return names


def test_the_service_monitor_reaches_every_kind_of_pod_on_its_metrics_port(production):
    monitor = _one(production, "ServiceMonitor")
    selected = [
        m
        for m in production
        if m["kind"] == "Service"
        and monitor["spec"]["selector"]["matchLabels"].items() <= m["metadata"].get("labels", {}).items()
    ]
    endpoint_ports = {e["port"] for e in monitor["spec"]["endpoints"]}
    components = set()
    for service in selected:
        (port,) = [p for p in service["spec"]["ports"] if p["name"] in endpoint_ports]
        pods = [
            m["spec"]["template"]
            for m in production
            if m["kind"] in ("Deployment", "StatefulSet")
            and service["spec"]["selector"].items() <= m["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert pods, service["metadata"]["name"]
        for pod in pods:
            listening = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
            assert port["port"] in listening, service["metadata"]["name"]
            components.add(pod["metadata"]["labels"]["app.kubernetes.io/component"])
    assert components == {"game-service", "gateway", "worker", "redis"}
