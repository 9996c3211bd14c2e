"""The code's shape, checked on its source (no processes): the import graph of the project has no
cycle, type-only imports included; no module of the platform is over 500 lines; and nothing
reaches a dependency's private names (reading them, or overriding a base class's private
method) outside the modules pinned to the release they were written for,
services/runtime/redis_private.py and gateway/granian_private.py (tests/test_redis_private.py,
tests/test_granian_private.py)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from services.catalog import GAME_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("services", "gateway", "clients", "deploy", "bench")
MAX_LINES = 500
PRIVATE_HOOKS = ("services/runtime/redis_private.py", "gateway/granian_private.py")
# Underscored names the standard library documents as public (namedtuple's methods).
DOCUMENTED_PUBLIC = {"_replace", "_asdict", "_fields", "_make"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports, anywhere in it (``if TYPE_CHECKING:`` included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            parts = target.split(".")
            # The longest prefix that is a project module: ``from a.b import c`` imports a.b.c
            # when c is a module, else a.b.
            for end in range(len(parts), 0, -1):
                if ".".join(parts[:end]) in MODULES:
                    found.add(".".join(parts[:end]))
                    break
    found.discard(name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_the_import_graph_has_no_cycle() -> None:
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    assert graph["services.runtime.store"], "the graph found no import at all"
    assert _cycles(graph) == []


def test_the_cycle_finder_sees_a_type_only_import(tmp_path: Path) -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from services.engine import GameState\n",
        encoding="utf-8",
    )
    assert _imports("services.probe", probe) == {"services.engine"}


def _platform() -> list[Path]:
    engines = set(GAME_PACKAGES.values())
    return [
        path
        for name, path in MODULES.items()
        if not any(name == engine or name.startswith(engine + ".") for engine in engines)
    ]


def test_no_platform_module_is_over_500_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in _platform()}
    assert sizes["services/runtime/matches.py"], "the platform's modules were not found"
    assert {path: lines for path, lines in sizes.items() if lines > MAX_LINES} == {}


# The dependencies whose private names the code could reach, as installed.
DEPENDENCIES = ("redis", "grpc", "msgspec", "structlog", "prometheus_client", "google.protobuf", "granian")
# The project's own private attributes that some dependency also uses privately, read on an
# object other than ``self``: each checked by hand to be the project's.
OWN_ALSO_IN_DEPENDENCIES = {"_executor"}  # services/runtime/bot_pool.py's pool


def _dependency_privates() -> set[str]:
    """Every private attribute or method name the dependencies use on themselves."""
    names: set[str] = set()
    for dependency in DEPENDENCIES:
        module = importlib.import_module(dependency)
        for root in getattr(module, "__path__", []):
            for path in Path(root).rglob("*.py"):
                source = path.read_text(encoding="utf-8", errors="ignore")
                names.update(re.findall(r"\bself\.(_[A-Za-z]\w*)", source))
                names.update(re.findall(r"\bdef (_[A-Za-z]\w*)", source))
    return names


def _private(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and not dunder and name not in DOCUMENTED_PUBLIC


def _foreign_names(tree: ast.Module) -> set[str]:
    """Names bound by importing from outside the project (a class's base among them)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] not in PACKAGES:
                names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in PACKAGES:
                    names.add((alias.asname or alias.name).split(".")[0])
    return names


def _resolved(tree: ast.Module, base: ast.expr) -> object:
    """The object a class's base names, imported as ``tree`` imports it (None if it cannot
    be: a project class, or a name bound otherwise)."""
    parts = ast.unparse(base).split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == parts[0] and node.module.split(".")[0] not in PACKAGES:
                    found = getattr(importlib.import_module(node.module), alias.name, None)
                    for part in parts[1:]:
                        found = getattr(found, part, None)
                    return found
    return None


def _set_in(node: ast.ClassDef) -> set[str]:
    """The attributes and methods a class sets or defines itself."""
    names = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(inner.name)
        elif isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store):
            names.add(inner.attr)
    return names


def _private_uses(path: Path, theirs: set[str], shown: str = "") -> list[str]:
    """Where ``path`` imports a dependency's private module or name; reads, on another object
    than ``self``, a private name a dependency uses; or, in a subclass of a dependency's class,
    reads a private name of the base (one the class does not set itself)."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    foreign = _foreign_names(tree)

    def where(node: ast.AST) -> str:
        return f"{shown or path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] in PACKAGES:
                continue
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"{where(node)} imports {node.module}")
            found += [f"{where(node)} imports {node.module}.{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] not in PACKAGES and any(_private(part) for part in parts):
                    found.append(f"{where(node)} imports {alias.name}")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _private(node.attr):
            receiver = node.value
            on_self = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
            on_super = isinstance(receiver, ast.Call) and ast.unparse(receiver.func) == "super"
            if on_self or on_super or node.attr in OWN_ALSO_IN_DEPENDENCIES:
                continue
            if node.attr in theirs:
                found.append(f"{where(node)} reads .{node.attr}")
        elif isinstance(node, ast.ClassDef):
            if not {ast.unparse(base).split(".")[0] for base in node.bases} & foreign:
                continue
            own = _set_in(node)
            bases = [_resolved(tree, base) for base in node.bases]
            for method in node.body:
                if (
                    isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
                    and _private(method.name)
                    and any(hasattr(base, method.name) for base in bases)
                ):
                    found.append(f"{where(method)} overrides .{method.name} of {node.name}'s base")
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.ctx, ast.Load)
                    and _private(inner.attr)
                    and inner.attr in theirs
                    and inner.attr not in own
                ):
                    found.append(f"{where(inner)} reads .{inner.attr} of {node.name}'s base")
    return found


def test_nothing_reaches_a_dependencys_private_names_outside_the_pinned_module() -> None:
    theirs = _dependency_privates()
    assert {"_reader", "_writer", "_available_connections"} <= theirs
    found = [use for path in MODULES.values() for use in _private_uses(path, theirs)]
    assert [use for use in found if not use.startswith(PRIVATE_HOOKS)] == []
    for pinned in PRIVATE_HOOKS:
        assert [use for use in found if use.startswith(pinned)], (
            f"{pinned} reaches nothing private: fold it away"
        )


def test_the_private_name_check_sees_each_kind_of_reach(tmp_path: Path) -> None:
    source = (
        "from redis._parsers.base import BaseParser\n"
        "import redis._parsers\n"
        "from redis.asyncio.connection import ConnectionPool, _ssl\n"
        "def f(connection):\n"
        "    return connection._writer\n"
        "class Pool(ConnectionPool):\n"
        "    def g(self):\n"
        "        self._mine = 1\n"
        "        return self._available_connections, self._mine\n"
    )
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    theirs = {"_writer", "_available_connections", "_mine"}
    uses = _private_uses(probe, theirs, shown="probe.py")
    kinds = [use.split(" ", 1)[1] for use in uses]
    assert sorted(kinds) == sorted(
        [
            "imports redis._parsers.base",
            "imports redis._parsers",
            "imports redis.asyncio.connection._ssl",
            "reads ._writer",
            "reads ._available_connections of Pool's base",
        ]
    )
