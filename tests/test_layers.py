"""Imports point down: each package imports only the layers beneath it, and the surfaces only
the facade and the public names below it (docs/architecture.md).

Every `import lantern...` and `from lantern... import` in the package is read, including those
inside functions and under TYPE_CHECKING, since a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
import importlib
import re
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
    "lantern.indexes": LEAVES | {"lantern.store", "lantern.retrieval", "lantern.embeddings"},
    "lantern.semantic": LEAVES
    | {"lantern.store", "lantern.retrieval", "lantern.embeddings", "lantern.indexes"},
    "lantern.memory": LEAVES
    | {"lantern.store", "lantern.retrieval", "lantern.entities", "lantern.indexes", *SEMANTIC},
    "lantern.evidence": LEAVES
    | {"lantern.store", "lantern.retrieval", "lantern.entities", *SEMANTIC},
    "lantern.maintenance": LEAVES
    | {
        "lantern.store",
        "lantern.retrieval",
        "lantern.entities",
        "lantern.memory",
        "lantern.evidence",
        "lantern.indexes",
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
        "lantern.indexes",
        "lantern.memory",
        "lantern.evidence",
        "lantern.maintenance",
        "lantern.transfer",
        *SEMANTIC,
    },
}
"""For each unit (a package or a top-level module), the units it may import besides itself."""

FACADE = {"lantern", "lantern.api"}
"""What the surfaces are built on: the facade, and the public names of the package root."""

PUBLIC: dict[str, frozenset[str] | None] = {
    # The leaves: errors, field rules and vocabularies, the pause while code loads.
    "lantern.errors": None,
    "lantern.validation": None,
    "lantern.loading": None,
    # The frozen records the facade returns, which the surfaces render.
    "lantern.memory.records": None,
    "lantern.evidence.records": None,
    "lantern.entities.records": None,
    # The reports of whole-store operations, defined beside the code that makes them.
    "lantern.semantic.backfill": frozenset({"EmbedReport", "EmbedSummary"}),
    "lantern.transfer.jsonl": frozenset({"TransferReport"}),
    "lantern.transfer.foreign": frozenset({"ForeignImport"}),
    # Vocabularies and limits a surface reads its arguments and help texts by.
    "lantern.retrieval.modes": None,
    # The memory filters, said once: each surface makes its options, schema or fields of them.
    "lantern.memory.filterspec": None,
    "lantern.evidence.sourcekinds": frozenset({"KNOWN_SOURCE_KINDS"}),
    "lantern.evidence.files": frozenset({"MAX_FILE_BYTES"}),  # to read standard input
    # What `Lantern.open` takes and `Lantern.location` gives: a scope policy, and where a
    # store is (so that a client's configuration is printed without opening the store).
    "lantern.memory.scopes": frozenset({"ScopePolicy", "UNRESTRICTED"}),
    "lantern.store.location": frozenset({"StoreLocation", "resolve", "ENV_VAR"}),
}
"""What a surface may import besides the facade, by module: every name of the module (None),
or only the names given, where the module also holds machinery. Never a repository's parts,
the engine or the models: what a surface needs of those, the facade gives."""

SURFACES: dict[str, set[str]] = {
    # `lantern mcp` starts the server, so the CLI may import the server package, never the
    # other way round; `lantern ui` likewise starts the web view, which renders the facade's
    # records and never calls the CLI.
    "lantern.cli": {"lantern.mcpserver", "lantern.ui"},
    "lantern.mcpserver": {"lantern.serving"},
    "lantern.ui": {"lantern.serving"},
    # What the two HTTP servers share (their connections' guard): imported by them only.
    "lantern.serving": set(),
    # Lantern behind other frameworks' interfaces (LangGraph's store): built on the facade like
    # the other surfaces, and started by none of them.
    "lantern.integrations": set(),
}
"""For each surface, the other surfaces it may import."""


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


def _imported_names(path: Path) -> set[tuple[str, str | None]]:
    """`(module, name)` for each name imported from a Lantern module, `(module, None)` for a
    whole module (`import lantern.x`, or a submodule named in `from lantern.x import y`)."""
    found: set[tuple[str, str | None]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule.startswith("lantern.") and _is_submodule(
                    submodule.removeprefix("lantern.").replace(".", "/")
                ):
                    found.add((submodule, None))
                else:
                    found.add((node.module, alias.name))
    return {
        (module, name)
        for module, name in found
        if module == "lantern" or module.startswith("lantern.")
    }


def _imports(path: Path) -> set[str]:
    return {module for module, _name in _imported_names(path)}


def _rules() -> dict[str, set[str]]:
    """The units each unit may import: `ALLOWED` below the surfaces; for a surface, the
    facade, the units of its public names and the surfaces it starts."""
    public = FACADE | {_unit(module) for module in PUBLIC}
    return {**ALLOWED, **{unit: public | others for unit, others in SURFACES.items()}}


def test_imports_point_down() -> None:
    rules = _rules()
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


def test_surfaces_import_only_the_facade_and_the_public_names() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        unit = _unit(module)
        if unit not in SURFACES:
            continue
        for imported, name in sorted(_imported_names(path), key=str):
            if imported in FACADE or _unit(imported) in {unit, *SURFACES[unit]}:
                continue
            if imported not in PUBLIC:
                wrong.append(f"{module} imports {imported}")
            elif (names := PUBLIC[imported]) is not None and name not in names:
                wrong.append(f"{module} imports {imported}.{name or '*'}")
    assert wrong == []


def _declared(package: str) -> set[str] | None:
    """The units the package's docstring says it imports (its `Imports:` sentence), or None
    without one: names in backquotes, plus the leaves or the public names where it says so."""
    init = PACKAGE / package.removeprefix("lantern.") / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    found = re.search(r"\bImports:\s(.*?)\.(?:\s|$)", docstring, re.DOTALL)
    if found is None:
        return None
    sentence = " ".join(found.group(1).split())
    units = {_unit(name) for name in re.findall(r"`(lantern(?:\.\w+)*)`", sentence)}
    if "the leaves" in sentence:
        units |= LEAVES
    if "the public names" in sentence:
        units |= {_unit(module) for module in PUBLIC}
    return units


def test_each_package_says_what_it_imports() -> None:
    """The `Imports:` sentence of each package's docstring names what the rules allow it."""
    rules = _rules()
    packages = sorted(unit for unit in rules if (PACKAGE / unit.removeprefix("lantern.")).is_dir())
    said = {package: _declared(package) for package in packages}
    assert {package: rules[package] for package in packages} == said


def test_the_rules_name_only_packages_that_exist() -> None:
    units = {_unit(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert set(ALLOWED) | set(SURFACES) <= units
    for module, names in PUBLIC.items():
        loaded = importlib.import_module(module)
        assert all(hasattr(loaded, name) for name in names or ()), module
