"""The package's layout. Its layers and the cycles between a package's modules are import-linter's contracts in
pyproject.toml (`lint-imports`, in .ci/run); what is here checks what those contracts cannot see: a new
subpackage outside every layer, and a cycle through a package's own __init__."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import grimp

from tests.support import tomllib

ROOT = Path(__file__).resolve().parent.parent
# Above every layer: the package's own re-exports and `python -m ppaux`.
TOP = {"ppaux", "ppaux.transport", "ppaux.__main__"}


# Built once, without grimp's cache directory in the checkout: in mutmut's copy every module holds its
# mutants, seconds to read.
@cache
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("ppaux", "ppaux_strategies", cache_dir=None)


def layered() -> set:
    """Every module the layers contract names; an optional one, "(ppaux.x)", included."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return {name.strip().strip("()") for layer in layers for name in layer.split("|")}


def test_every_subpackage_is_in_a_layer():
    # A module the layers contract does not name is held by no rule of it.
    packages = graph().find_children("ppaux") | {"ppaux_strategies"}
    assert sorted(packages - TOP - layered()) == []


def test_no_import_cycles():
    # import-linter's acyclic_siblings contract compares a package's children, and a package's __init__
    # is not one of its own children: `import ppaux.core` in ppaux/core/clauses.py escapes it, not this.
    g = graph()
    cycles = sorted(
        (importer, *g.find_shortest_chain(importer=imported, imported=importer))
        for importer in g.modules
        for imported in g.find_modules_directly_imported_by(importer)
        if g.chain_exists(importer=imported, imported=importer)
    )
    assert cycles == []
