"""What a mutant is, in words that outlast mutmut's ordinal names.

mutmut names a mutant by its function and a number (``pkg.mod.x_func__mutmut_7``), and its own TODO
says the numbers are not stable: an upgrade that adds an operator, or a line added above, renumbers
them. A :class:`MutantIdentity` is instead the module, the qualified function, the line the mutant
changes (before -> after) and, where the function has several mutants with that same change, which
one of them (``occurrence``, in the function's order); stamped with the function's AST hash
(``sha256(ast.dump(node, annotate_fields=False))``, mutmut's own formula in its function hashes, in full),
so that a judgement made on the function as it was can be told from one on the function as it is.

:func:`identities` is pure: the original and mutated sources of a function in, identities out.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "MutantIdentity",
    "defined_functions",
    "function_hash",
    "identities",
    "identify_all",
    "line_change",
    "split_mutant_name",
]


@dataclass(frozen=True)
class MutantIdentity:
    """A mutant by what it changes: ``module``, qualified ``function`` (``Class.method``), the
    changed lines ``before`` and ``after`` (stripped, several joined by `` / ``), its ``occurrence``
    among the function's mutants with the same change (0 for the first), and the function's AST hash."""

    module: str
    function: str
    before: str
    after: str
    occurrence: int
    function_hash: str

    @property
    def key(self) -> tuple[str, str, str, str, int]:
        """The identity without its stamp: what a judgement and a recorded result are matched by."""
        return (self.module, self.function, self.before, self.after, self.occurrence)

    def describe(self) -> str:
        """``module:function: before -> after`` (and ``#n`` past the first occurrence), for a message."""
        nth = f" #{self.occurrence}" if self.occurrence else ""
        return f"{self.module}:{self.function}: {self.before} -> {self.after}{nth}"


def split_mutant_name(name: str) -> tuple[str, str]:
    """``pkg.mod.xǁClassǁmethod__mutmut_3`` -> ``("pkg.mod", "Class.method")``; a nested class keeps
    its dots (``xǁOuter.Innerǁm`` -> ``Outer.Inner.m``)."""
    parts = name.split(".")
    first = next(i for i, part in enumerate(parts) if part.startswith(("x_", "xǁ")))
    module, mangled = ".".join(parts[:first]), ".".join(parts[first:])
    mangled = mangled.rpartition("__mutmut_")[0]
    if mangled.startswith("xǁ"):
        _, cls, method = mangled.split("ǁ", 2)
        return module, f"{cls}.{method}"
    return module, mangled[len("x_") :]


def function_hash(source: str) -> str:
    """The AST hash of the function defined in ``source`` (indented or not; comments and layout
    do not count): sha256 of ``ast.dump`` of its node, hex."""
    tree = ast.parse(textwrap.dedent(source))
    return _node_hash(next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))))


def _node_hash(node: ast.AST) -> str:
    return hashlib.sha256(ast.dump(node, annotate_fields=False).encode()).hexdigest()


def defined_functions(module_source: str) -> dict[str, tuple[str, list[str]]]:
    """Every function the module whose text is ``module_source`` defines, at its top level and in its
    classes (nested ones too), by qualified name (``f``, ``Class.method``, ``Outer.Inner.method``; of
    two definitions of one name, the first): its AST hash (:func:`function_hash`'s, as mutmut's
    original of it would be stamped, without generating a mutant) and its lines, stripped. The
    module is parsed once for all of them; one that does not parse defines none."""
    try:
        body = ast.parse(module_source).body
    except SyntaxError:
        return {}
    text = module_source.splitlines()
    out: dict[str, tuple[str, list[str]]] = {}

    def walk(body: list[ast.stmt], owner: str) -> None:
        classes: set[str] = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and owner + node.name not in out:
                # The node itself, not its text dedented: dedenting would change a method's multi-line strings.
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                out[owner + node.name] = _node_hash(node), [line.strip() for line in text[first - 1 : node.end_lineno]]
            elif isinstance(node, ast.ClassDef) and node.name not in classes:
                classes.add(node.name)
                walk(node.body, f"{owner}{node.name}.")

    walk(body, "")
    return out


def line_change(original: str, mutated: str) -> tuple[str, str]:
    """The lines ``mutated`` changes in ``original``: ``(before, after)``, each stripped and, where a
    change spans lines, joined by `` / ``."""
    before: list[str] = []
    after: list[str] = []
    for line in difflib.unified_diff(original.splitlines(), mutated.splitlines(), n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        (before if line.startswith("-") else after).append(line[1:].strip())
    return " / ".join(before), " / ".join(after)


def identities(
    module: str, function: str, original: str, mutants: Iterable[tuple[str, str]]
) -> dict[str, MutantIdentity]:
    """Each of the function's ``mutants`` (``(name, mutated source)``, in mutmut's order) by its
    identity; ``original`` is the function's unmutated source."""
    stamp = function_hash(original)
    seen: dict[tuple[str, str], int] = {}
    out = {}
    for name, mutated in mutants:
        change = line_change(original, mutated)
        occurrence = seen.get(change, 0)
        seen[change] = occurrence + 1
        out[name] = MutantIdentity(module, function, *change, occurrence, stamp)
    return out


def identify_all(sources: Mapping[str, tuple[str, str]]) -> dict[str, MutantIdentity]:
    """Every mutant's identity from ``{mutmut name: (original function source, mutated source)}``:
    grouped by function, each function's mutants in mutmut's order (by number)."""
    by_function: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for name in sources:
        by_function.setdefault(split_mutant_name(name), []).append((int(name.rpartition("__mutmut_")[2]), name))
    out: dict[str, MutantIdentity] = {}
    for (module, function), numbered in by_function.items():
        names = [name for _, name in sorted(numbered)]
        out.update(identities(module, function, sources[names[0]][0], ((n, sources[n][1]) for n in names)))
    return out
