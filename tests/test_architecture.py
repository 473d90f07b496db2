"""The package's structure: imports point one way (web -> services -> engine), with no cycles,
counting imports inside functions too; and the engine loads without Flask."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "nistchat"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """Package modules this file imports, anywhere in it (a function-local import is an edge too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            stem = (base + ("." + node.module if node.module else "")) if node.level else node.module
            # `from pkg import sub` depends on the submodule; `from pkg import name`, on pkg itself
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(f) for f in files}
    return {module_name(f): imports(f, modules) for f in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_engine_imports_nothing_from_the_web_layer():
    web = ("nistchat.app", "nistchat.web", "nistchat.extensions", "nistchat.chat", "nistchat.api",
           "nistchat.history", "nistchat.logs", "nistchat.admin", "nistchat.status", "nistchat.topics",
           "nistchat.evals", "nistchat.docs", "nistchat.feedback", "nistchat.commands", "nistchat.cli",
           "nistchat.models", "nistchat.auth")
    for module, targets in import_graph().items():
        if module.startswith("nistchat.engine"):
            assert not [t for t in targets if t.startswith(web)], module


def test_importing_the_engine_loads_no_flask():
    code = "import nistchat.engine, sys; assert 'flask' not in sys.modules, sorted(m for m in sys.modules if 'flask' in m)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-1500:]
