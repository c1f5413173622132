"""Imports point down: each package imports only the layers beneath it (docs/architecture.md).

Every `import lantern...` and `from lantern... import` in the package is read, including those
inside functions and under TYPE_CHECKING, since a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "lantern"

LEAVES = {"lantern.errors", "lantern.validation", "lantern.loading", "lantern.boundary"}
"""Modules any layer may import."""

SEMANTIC = {"lantern.semantic", "lantern.embeddings"}
"""Vectors: stored and searched (`semantic`), made (`embeddings`)."""

ALLOWED: dict[str, set[str]] = {
    "lantern.errors": set(),
    "lantern.loading": set(),
    "lantern.validation": {"lantern.errors"},
    "lantern.boundary": {"lantern.errors"},
    "lantern.retrieval": set(),
    "lantern.embeddings": LEAVES,
    "lantern.store": LEAVES,
    "lantern.entities": LEAVES | {"lantern.store"},
    "lantern.semantic": LEAVES | {"lantern.store", "lantern.retrieval", "lantern.embeddings"},
    "lantern.memory": LEAVES
    | {"lantern.store", "lantern.retrieval", "lantern.entities", *SEMANTIC},
    "lantern.evidence": LEAVES
    | {"lantern.store", "lantern.retrieval", "lantern.entities", *SEMANTIC},
    "lantern.maintenance": LEAVES
    | {
        "lantern.store",
        "lantern.retrieval",
        "lantern.entities",
        "lantern.memory",
        "lantern.evidence",
        *SEMANTIC,
    },
    "lantern.transfer": LEAVES
    | {
        "lantern.store",
        "lantern.retrieval",
        "lantern.entities",
        "lantern.memory",
        "lantern.evidence",
        *SEMANTIC,
    },
    "lantern.api": LEAVES
    | {
        "lantern.store",
        "lantern.retrieval",
        "lantern.entities",
        "lantern.memory",
        "lantern.evidence",
        "lantern.maintenance",
        "lantern.transfer",
        *SEMANTIC,
    },
}
"""For each unit (a package or a top-level module), the units it may import besides itself."""

BELOW_SURFACES = set(ALLOWED) | {"lantern"}
SURFACES = {
    # The surfaces sit on the facade; they may also name the records, errors and constants below
    # it that they render or validate against. `lantern mcp` starts the server, so the CLI may
    # import the server package, never the other way round; `lantern ui` likewise starts the web
    # view, which renders the facade's records and never calls the CLI.
    "lantern.cli": BELOW_SURFACES | {"lantern.mcpserver", "lantern.ui"},
    "lantern.mcpserver": BELOW_SURFACES,
    "lantern.ui": BELOW_SURFACES,
}


def _unit(module: str) -> str:
    """The package or top-level module a dotted module name belongs to."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _module_name(path: Path) -> str:
    relative = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_submodule(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name).is_dir()


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "lantern":
                # `from lantern import x`: a submodule, or a name the package root exports.
                found.update(
                    f"lantern.{alias.name}" if _is_submodule(alias.name) else "lantern"
                    for alias in node.names
                )
            else:
                found.add(node.module)
    return {name for name in found if name == "lantern" or name.startswith("lantern.")}


def test_imports_point_down() -> None:
    rules = {**ALLOWED, **SURFACES}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        unit = _unit(module)
        if unit in ("lantern", "lantern.__main__"):
            continue  # the package root exposes the public names; __main__ runs the CLI
        assert unit in rules, f"{module} belongs to no layer: add its package to tests/test_layers"
        for imported in sorted(_imports(path)):
            target = _unit(imported)
            if target != unit and target not in rules[unit]:
                wrong.append(f"{module} imports {imported}")
    assert wrong == []


def test_the_rules_name_only_packages_that_exist() -> None:
    units = {_unit(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert set(ALLOWED) | set(SURFACES) <= units
