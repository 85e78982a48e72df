"""What ``ppaux mutate`` mutates: the implementation's module (:func:`resolve`), copied under its
own name into a scratch project beside the conformance tests, and mutmut's table for it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ppaux.mutation.project import MUTANT_PYTEST_ARGS, mutmut_table
from ppaux.testing.impl import ImplementationError, load

__all__ = ["Target", "resolve", "scratch_package_init", "write_config", "write_scratch"]


def resolve(spec: str) -> Target:
    """The module ``spec`` names (a module name or a ``.py`` file), checked as an implementation;
    raises :class:`~ppaux.testing.impl.ImplementationError` with one line for the user."""
    packages: tuple[tuple[str, tuple[str, ...]], ...]
    impl = load(spec)
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        module, source, packages = path.stem, path.resolve(), ()
        if not module.isidentifier():
            raise ImplementationError(f"implementation file {spec!r}: {module!r} is not a module name; rename the file")
        # The loaded module's __file__ is the path as given (``../t.py``): compare where each points.
        defined_here = {
            name
            for name in (impl.add.__module__, impl.pop.__module__)
            if (file := getattr(sys.modules.get(name), "__file__", None)) and Path(file).resolve() == source
        }
    else:
        found = importlib.util.find_spec(spec)
        if found is None or not found.origin or not found.origin.endswith(".py"):
            raise ImplementationError(f"implementation {spec!r} has no Python source to mutate")
        module, source = spec, Path(found.origin)
        parents = [".".join(spec.split(".")[:i]) for i in range(1, len(spec.split(".")))]
        packages = tuple(
            # A parent package of a module that was found is found too.
            (name, tuple(importlib.util.find_spec(name).submodule_search_locations or ()))  # type: ignore[union-attr]
            for name in parents
        )
        defined_here = {impl.add.__module__, impl.pop.__module__} & {spec}
    if not defined_here:
        raise ImplementationError(
            f"implementation {spec!r} defines neither add_auxiliary_output_to_pp_tensors "
            "nor pop_auxiliary_output_from_pp_tensors "
            f"(they come from {impl.add.__module__}); point --impl at the module that defines them"
        )
    return Target(module, source, packages)


@dataclass(frozen=True)
class Target:
    """What ``ppaux mutate`` mutates: ``module`` (the name the suite's ``--ppaux-impl`` and a
    baseline import) from ``source``, inside its parent packages (``(name, their directories)``)."""

    module: str
    source: Path
    packages: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def relative_path(self) -> Path:
        return Path(*self.module.split(".")).with_suffix(".py")


def scratch_package_init(original_dirs: Sequence[str]) -> str:
    """A package ``__init__`` that finds the mutated module in its own directory first and every
    other submodule where the original package has it, then runs the original ``__init__``."""
    inits = [str(Path(d) / "__init__.py") for d in original_dirs if (Path(d) / "__init__.py").is_file()]
    header = [
        "# Written by ppaux mutate: this package holds only the module under mutation; every other",
        "# submodule comes from the original package, whose __init__ runs below.",
    ]
    lines = [*header, f"__path__.extend({list(original_dirs)!r})"]
    if inits:
        lines += [
            f"with open({inits[0]!r}, encoding='utf-8') as _original:",
            f"    exec(compile(_original.read(), {inits[0]!r}, 'exec'))",
            "del _original",
        ]
    return "\n".join(lines) + "\n"


def write_scratch(target: Target, root: Path, *, tests: Sequence[Path], source: bytes | None = None) -> None:
    """The scratch project: the target module under its own name (``source``, or the target's own)
    and a copy of the tests."""
    dest = root / target.relative_path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(target.source.read_bytes() if source is None else source)
    for package, dirs in target.packages:
        (root / Path(*package.split(".")) / "__init__.py").write_text(scratch_package_init(dirs), encoding="utf-8")
    (root / "tests").mkdir(exist_ok=True)
    for test in tests:
        (root / "tests" / test.name).write_bytes(test.read_bytes())


def write_config(target: Target, root: Path, *, pytest_args: Sequence[str]) -> None:
    """mutmut's configuration: mutate the target alone, kill with the tests run with ``pytest_args``."""
    config: dict[str, object] = {
        "source_paths": [target.module.split(".")[0] + ("" if target.packages else ".py")],
        "only_mutate": [target.relative_path.as_posix()],
        "pytest_add_cli_args": [*MUTANT_PYTEST_ARGS, *pytest_args],
        "pytest_add_cli_args_test_selection": ["tests/"],
    }
    # Fork each mutant from a server that has already imported torch and collected the suite.
    config.update({"process_isolation": "forkserver", "forkserver_warmup": "collect"})
    # The [tool.pytest.ini_options] table stops pytest from reading any configuration above this project;
    # ppaux_suite_copies: the copied tests run as the shipped suite's (under the run's tuning and scope, contained).
    (root / "pyproject.toml").write_text(
        mutmut_table(config)
        + '\n[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\nppaux_suite_copies = ["tests"]\n',
        encoding="utf-8",
    )
