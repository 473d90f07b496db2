"""The package's structure: imports point one way (web -> services -> engine), with no cycles,
counting imports inside functions too; the engine loads without Flask; inside the engine the stages
import only earlier ones (corpus <- index <- retrieval <- verification <- answer <- evaluation),
and the rest of the package reaches a stage only through its public names (its `__init__`)."""
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


def bound_names(init: Path) -> set[str]:
    """Names a package's `__init__` binds itself: `from pkg import name` gets these, even where a
    submodule has the same name (the stage's public function, not its module)."""
    names = set()
    if not init.is_file():
        return names
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


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
            bound = bound_names(REPO.joinpath(*stem.split("."), "__init__.py")) if stem in modules else set()
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules and a.name not in bound else stem
                       for a in node.names]
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


ENGINE = "nistchat.engine"
STAGES = ("corpus", "index", "retrieval", "verification", "answer", "evaluation")  # each may use the earlier ones
SHARED = ("backends",)  # the models and the reader queue: any stage may use them; they use no stage
COMPOSER = ("runtime", "")  # engine/runtime.py and engine/__init__.py wire the stages together


def engine_part(module: str) -> str | None:
    """The stage (or 'backends', or a root module's name) an engine module belongs to; None outside."""
    if module != ENGINE and not module.startswith(ENGINE + "."):
        return None
    rest = module[len(ENGINE) + 1:]
    return rest.split(".", 1)[0]


def stage_violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        part = engine_part(module)
        if part is None or part in COMPOSER:
            continue
        for target in targets:
            other = engine_part(target)
            if other is None or other == part:
                continue
            if other in COMPOSER and part != STAGES[-1]:  # an evaluation drives the whole, wired engine
                found.append(f"{module} -> {target} (a stage may not reach back into the runtime)")
            elif part in STAGES and other in STAGES and STAGES.index(other) > STAGES.index(part):
                found.append(f"{module} -> {target} ({other} comes after {part})")
            elif part not in STAGES and other in STAGES:  # backends and the shared root modules
                found.append(f"{module} -> {target} ({part} is below every stage)")
    return sorted(found)


def test_each_stage_imports_only_earlier_stages_the_backends_and_shared_modules():
    assert stage_violations(import_graph()) == []


def test_the_stage_rule_catches_a_backward_import():
    graph = {"nistchat.engine.retrieval.query": {"nistchat.engine.answer.prompt"},
             "nistchat.engine.backends.queue": {"nistchat.engine.index.store"},
             "nistchat.engine.answer.pipeline": {"nistchat.engine.runtime", "nistchat.engine.retrieval.query"}}
    assert len(stage_violations(graph)) == 3


def test_every_stage_is_a_package_and_the_root_holds_only_shared_modules():
    root = PACKAGE / "engine"
    for stage in STAGES + SHARED:
        assert (root / stage / "__init__.py").is_file(), stage
    assert {p.stem for p in root.glob("*.py")} <= {"__init__", "runtime", "types", "events", "errors", "text",
                                                  "vocabulary", "processes", "background"}


def outside_reaches(graph: dict[str, set[str]]) -> list[str]:
    """Imports from outside the engine of a module inside a stage package (past its public names)."""
    found = []
    for module, targets in graph.items():
        if engine_part(module) is not None:
            continue
        for target in targets:
            part = engine_part(target)
            if part in STAGES + SHARED and target != f"{ENGINE}.{part}":
                found.append(f"{module} -> {target}")
    return sorted(found)


def test_the_rest_of_the_package_uses_only_the_stages_public_names():
    assert outside_reaches(import_graph()) == []
