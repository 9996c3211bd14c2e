"""Rules engines are pure: no grpc, redis, asyncio, logging or protobuf, at any depth of import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from services.catalog import GAME_PACKAGES

FORBIDDEN = {
    "grpc",
    "grpc_status",
    "grpc_health",
    "redis",
    "asyncio",
    "logging",
    "structlog",
    "google",
    "mogames",
}
ROOT = Path(__file__).resolve().parent.parent / "services"


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def engine_files(package: str) -> list[Path]:
    return sorted((ROOT.parent / package.replace(".", "/")).glob("*.py"))


@pytest.mark.parametrize("package", sorted(GAME_PACKAGES.values()))
def test_rules_engine_imports_nothing_impure(package):
    files = [*engine_files(package), ROOT / "engine.py"]
    assert any(f.name == "rules.py" for f in files)
    for path in files:
        for module in imported_modules(path):
            top = module.split(".")[0]
            assert top not in FORBIDDEN, f"{path.relative_to(ROOT.parent)} imports {module}"
            if top == "services":
                assert module == "services.engine" or module.startswith(package), (
                    f"{path.name} imports {module}: an engine may use only services.engine and itself"
                )
