"""The house's rooms: domain and use cases do no I/O of their own; only adapters import boto3; capabilities are
packages whose imports run one way, as their docstrings say."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / "functions" / "shared"
IO_MODULES = ("boto3", "botocore", "functions.shared.adapters", "urllib", "requests", "socket")
LAYERS = ("domain", "usecases")


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports, at run time or for type checking (`from a.b import c` counts as a.b and a.b.c)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SHARED.parents[1]).with_suffix("").parts).removesuffix(".__init__")


def packages(layer: str) -> list[str]:
    """The layer's capability packages, in the order its own docstring gives (each imports only those before it)."""
    declared = ast.get_docstring(ast.parse((SHARED / layer / "__init__.py").read_text())) or ""
    order = re.search(r"order[^:]*:\s*([a-z_ <\n]+)\.", declared)
    assert order, f"functions/shared/{layer}/__init__.py does not give its packages' order"
    return [name.strip() for name in order.group(1).split("<")]


def may_import(layer: str, package: str) -> set[str]:
    """What the package's docstring says it may import, as `layer.package` names (the domain for every use case)."""
    declared = ast.get_docstring(ast.parse((SHARED / layer / package / "__init__.py").read_text())) or ""
    line = re.search(r"May import: (.*?)\.?$", declared, re.MULTILINE | re.DOTALL)
    assert line, f"{layer}/{package}/__init__.py does not say what it may import"
    words = line.group(1).replace("\n", " ")
    if layer == "domain":
        return set() if words.startswith("nothing") else {f"domain.{w.strip()}" for w in words.split(",")}
    allowed = {f"domain.{p}" for p in packages("domain")}
    named = words.split("of the use cases:", 1)[1]
    if "no other use case" not in named:
        allowed |= {f"usecases.{w.strip()}" for w in named.split(",")}
    return allowed


def capability_of(module: str) -> str | None:
    """`domain.capacity` for functions.shared.domain.capacity.selection; None outside the capability packages."""
    parts = module.split(".")
    if len(parts) >= 4 and parts[:2] == ["functions", "shared"] and parts[2] in LAYERS:
        return f"{parts[2]}.{parts[3]}"
    return None


@pytest.mark.parametrize(
    "path",
    sorted(
        [*(SHARED / "usecases").rglob("*.py"), *(SHARED / "domain").rglob("*.py"), *(SHARED / "ports").rglob("*.py")]
    ),
    ids=lambda p: str(p.relative_to(SHARED)),
)
def test_domain_use_cases_and_ports_import_no_aws_sdk_and_no_adapter(path):
    # Given / When
    forbidden = {name for name in imports_of(path) if name.startswith(IO_MODULES)}

    # Then
    assert forbidden == set(), f"{path.name} imports {sorted(forbidden)}"


@pytest.mark.parametrize("path", sorted(SHARED.rglob("*.py")), ids=lambda p: str(p.relative_to(SHARED)))
def test_no_module_of_functions_shared_grows_past_its_room(path):
    # Given / When / Then: a module over ~250 lines is two modules
    assert len(path.read_text().splitlines()) <= 260, f"{path} has grown past 260 lines: split it"


def test_handlers_are_thin():
    # Given every handler module / When counting its lines / Then none holds logic of its own
    for handler in (SHARED.parent).glob("*/handler.py"):
        if handler.parent.name != "api":
            assert len(handler.read_text().splitlines()) <= 40, handler


@pytest.mark.parametrize("layer", LAYERS)
def test_every_module_of_a_layer_lives_in_a_capability_package_its_docstring_names(layer):
    # Given the layer's packages as its docstring orders them, and the modules on disk
    declared = set(packages(layer))
    on_disk = {p.name for p in (SHARED / layer).iterdir() if (p / "__init__.py").exists()}
    loose = sorted(p.name for p in (SHARED / layer).glob("*.py") if p.name != "__init__.py")
    # Then every module is in a package, and every package is in the order
    assert loose == [], f"modules outside a capability package: {loose}"
    assert on_disk == declared, (on_disk, declared)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_package_may_import_only_packages_before_it(layer):
    # Given the layer's packages in their order, and what each says it may import
    order = packages(layer)
    for position, package in enumerate(order):
        same_layer = {name.split(".", 1)[1] for name in may_import(layer, package) if name.startswith(f"{layer}.")}
        # Then it names none after it (imports run one way)
        assert same_layer <= set(order[:position]), f"{layer}.{package} may import {same_layer - set(order[:position])}"


@pytest.mark.parametrize(
    "path",
    sorted(p for layer in LAYERS for p in (SHARED / layer).rglob("*.py") if p.parent != SHARED / layer),
    ids=lambda p: str(p.relative_to(SHARED)),
)
def test_a_module_imports_only_what_its_package_may(path):
    # Given the module's capability package and what its docstring allows
    own = capability_of(module_name(path))
    assert own is not None
    layer, package = own.split(".")
    allowed = may_import(layer, package) | {own}
    # When reading every import of the module / Then each capability it reaches is allowed (never a use case or a
    # port from the domain)
    reached = {capability_of(name) for name in imports_of(path)} - {None}
    assert reached <= allowed, f"{path.relative_to(SHARED)} imports {sorted(reached - allowed)}"
    if layer == "domain":
        assert not {n for n in imports_of(path) if n.startswith("functions.shared.ports")}, path


def test_no_domain_module_imports_one_that_imports_it_back():
    # Given every domain module and the domain modules it imports (at run time or for type checking)
    modules = {module_name(p): p for p in (SHARED / "domain").rglob("*.py") if p.name != "__init__.py"}
    imported = {name: {m for m in imports_of(path) if m in modules} for name, path in modules.items()}

    # When following the imports from each / Then no module is reached from itself
    def reached(start: str) -> set[str]:
        seen, todo = set(), list(imported[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(imported[name])
        return seen

    assert {name for name in imported if name in reached(name)} == set()


@pytest.mark.parametrize("layer", LAYERS)
def test_how_it_works_draws_the_order_the_packages_declare(layer):
    # Given the order drawn in docs/how-it-works.md ("The code by capability")
    page = (SHARED.parents[1] / "docs" / "how-it-works.md").read_text()
    drawn = re.search(rf"^{layer}\s+([a-z_ <]+?)(?:\s{{2,}}|$)", page, re.MULTILINE)
    # Then it is the order the layer's packages declare
    assert drawn and [name.strip() for name in drawn.group(1).split("<")] == packages(layer)
