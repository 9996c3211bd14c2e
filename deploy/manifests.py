"""The Kubernetes variants as ``kubectl kustomize`` renders them, and checkov's verdict on them.

``python -m deploy.manifests`` renders every variant (with made-up secrets) and runs checkov
(``CHECKOV``, else ``.venv-checkov/bin/checkov``, which ``make checkov`` installs, pinned) on
each: it exits 1 naming every failed check that docs/operations.md does not justify in its
table of accepted checkov failures, else prints one line of totals.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

PROJECT = Path(__file__).resolve().parents[1]
DEPLOY = PROJECT / "deploy"
# Each variant: where its kustomization is, under deploy/.
VARIANTS = {
    "default": "kubernetes",
    "redis-cluster": "variants/redis-cluster",
    "production": "variants/production",
}
# What `make k8s-secrets` writes (values made up here).
MADE_UP_SECRETS = (
    "token-secret=0123456789abcdef0123456789\nredis-password=pw-0123\nwebhook-secret=hook-0123456789abcdef\n"
)
OPERATIONS_DOC = PROJECT / "docs" / "operations.md"
# A row of the doc's table of accepted checkov failures: | `CKV_K8S_43` | resources | why |
_ACCEPTED_ROW = re.compile(r"^\| `(CKV2?_K8S_\d+)` \| ([^|]+) \|", re.MULTILINE)


def copy_tree(into: Path) -> Path:
    """deploy/kubernetes and deploy/variants copied under ``into`` with made-up secrets;
    returns the copy's deploy folder."""
    deploy = into / "deploy"
    for part in ("kubernetes", "variants"):
        shutil.copytree(DEPLOY / part, deploy / part, ignore=shutil.ignore_patterns("secrets.env"))
    (deploy / "kubernetes" / "secrets.env").write_text(MADE_UP_SECRETS)
    return deploy


def render(deploy: Path, variant: str) -> str:
    """``kubectl kustomize`` of ``variant`` in the copy ``deploy``."""
    done = subprocess.run(
        ["kubectl", "kustomize", str(deploy / VARIANTS[variant])],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def objects(rendered: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def accepted_failures(doc: Path = OPERATIONS_DOC) -> dict[str, set[str]]:
    """The checkov checks docs/operations.md accepts, each for the resources it names
    (``Kind.name``, or ``*`` for every resource)."""
    accepted: dict[str, set[str]] = {}
    for check, resources in _ACCEPTED_ROW.findall(doc.read_text()):
        names = {name.strip().strip("`") for name in resources.split(",")}
        accepted.setdefault(check, set()).update(names)
    return accepted


def checkov_executable() -> str:
    found = os.environ.get("CHECKOV") or str(PROJECT / ".venv-checkov" / "bin" / "checkov")
    if not os.access(found, os.X_OK):
        sys.exit(f"checkov not found at {found}: run `make checkov` (it installs it) or set CHECKOV")
    return found


def checkov_failures(checkov: str, manifest: Path) -> tuple[int, list[tuple[str, str]]]:
    """checkov's passed count and failed (check id, ``Kind.name``) pairs on one manifest file."""
    done = subprocess.run(
        [
            checkov,
            "--file",
            str(manifest),
            "--framework",
            "kubernetes",
            "--output",
            "json",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"checkov failed to run ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    results = report["results"]
    failed = []
    for check in results["failed_checks"]:
        kind, _, name = check["resource"].partition(".")
        failed.append((check["check_id"], f"{kind}.{name.rpartition('.')[2]}"))
    return len(results["passed_checks"]), failed


def unjustified(failed: list[tuple[str, str]], accepted: dict[str, set[str]]) -> list[tuple[str, str]]:
    return [
        (check, resource) for check, resource in failed if not ({"*", resource} & accepted.get(check, set()))
    ]


def main() -> None:
    checkov = checkov_executable()
    accepted = accepted_failures()
    problems: list[str] = []
    totals = []
    with tempfile.TemporaryDirectory(prefix="mogames-manifests-") as workdir:
        deploy = copy_tree(Path(workdir))
        for variant in VARIANTS:
            manifest = Path(workdir) / f"{variant}.yaml"
            manifest.write_text(render(deploy, variant))
            passed, failed = checkov_failures(checkov, manifest)
            totals.append(f"{variant}: {passed} checks passed and {len(failed)} accepted failures")
            problems += [
                f"{variant}: {check} on {resource}" for check, resource in unjustified(failed, accepted)
            ]
    if problems:
        sys.exit(
            "checkov failures that docs/operations.md does not justify:\n  "
            + "\n  ".join(sorted(set(problems)))
        )
    print("checkov: " + "; ".join(totals))


if __name__ == "__main__":
    main()
