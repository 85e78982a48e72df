"""The package's layout: no import cycle inside ppaux/, and dependencies that point one way
(cli -> tooling -> relay -> core and isolation; ppaux_strategies on the core only). Imports are read as text,
at any depth, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterator, Set

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"ppaux": ROOT / "ppaux", "ppaux_strategies": ROOT / "strategies" / "ppaux_strategies"}

# What each layer may import from ppaux itself (beyond its own modules).
LAYERS = {
    "ppaux.core": set(),
    # Supervising code that may hang or crash: beside the core, it knows nothing of the contract.
    "ppaux.isolation": set(),
    "ppaux_strategies": {"ppaux.core"},
    "ppaux.relay": {"ppaux.core", "ppaux.isolation", "ppaux_strategies"},
    "ppaux.testing": {"ppaux.core", "ppaux.isolation", "ppaux.relay", "ppaux_strategies"},
    "ppaux.conformance": {"ppaux.core", "ppaux.testing", "ppaux_strategies"},
    # Regression tests from a run's findings: reads the testing layer's recorded calls.
    "ppaux.regressions": {"ppaux.core", "ppaux.testing", "ppaux_strategies"},
    # The fuzz job drives the shipped suite in rounds: tooling above testing, below the command line.
    "ppaux.fuzz": {"ppaux.core", "ppaux.isolation", "ppaux.testing", "ppaux.regressions"},
    # Mutation testing runs the shipped suite under mutmut: tooling above testing, below the command line.
    "ppaux.mutation": {"ppaux.core", "ppaux.isolation", "ppaux.testing"},
    "ppaux.cli": {"ppaux.core", "ppaux.isolation", "ppaux.relay", "ppaux.testing", "ppaux.conformance", "ppaux.regressions",
                  "ppaux.fuzz", "ppaux.mutation"},
    # A plugin as its author writes it: only the public kit (and its findings, for the broken variants' tests).
    "ppaux.examples": {"ppaux.testing"},
}


def modules() -> Dict[str, Path]:
    found = {}
    for name, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = [name, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported(path: Path, here: str) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = here.split(".") if is_package else here.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


# Parsed once: in mutmut's copy every module holds each function's mutants, a few seconds to read.
@lru_cache(maxsize=None)
def graph() -> Dict[str, Set[str]]:
    mods = modules()
    edges: Dict[str, Set[str]] = {}
    for name, path in mods.items():
        deps = set()
        for target in imported(path, name):
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != name:
                deps.add(target)
        edges[name] = deps
    return edges


def layer(module: str) -> str:
    return next((name for name in LAYERS if module == name or module.startswith(name + ".")), module)


def test_no_import_cycles():
    edges = graph()
    state: Dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_dependencies_point_one_way():
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph().items()
        for dep in deps
        if layer(dep) != layer(module) and layer(module) in LAYERS and layer(dep) not in LAYERS[layer(module)]
    )
    assert wrong == []


def test_every_module_belongs_to_a_layer():
    top = {"ppaux", "ppaux.transport", "ppaux.__main__"}
    assert sorted(m for m in modules() if layer(m) not in LAYERS and m not in top) == []
