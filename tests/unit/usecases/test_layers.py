"""The house's rooms: domain and use cases do no I/O of their own; only adapters import boto3."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / "functions" / "shared"
IO_MODULES = ("boto3", "botocore", "functions.shared.adapters", "urllib", "requests", "socket")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize(
    "path",
    sorted([*(SHARED / "usecases").glob("*.py"), *(SHARED / "domain").glob("*.py"), *SHARED.glob("ports*.py")]),
    ids=lambda p: f"{p.parent.name}/{p.name}",
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


def test_selection_runs_one_way_no_domain_module_imports_one_that_imports_it_back():
    # Given every domain module and the domain modules it imports (at run time or for type checking)
    domain = {path.stem: path for path in (SHARED / "domain").glob("*.py")}
    imported = {
        name: {m.rsplit(".", 1)[-1] for m in imports_of(path) if m.startswith("functions.shared.domain.")}
        for name, path in domain.items()
    }

    # When following the imports from each / Then no module is reached from itself: selection imports ranking and
    # band, and neither imports selection back
    def reached(start: str) -> set[str]:
        seen, todo = set(), list(imported[start])
        while todo:
            name = todo.pop()
            if name not in seen and name in imported:
                seen.add(name)
                todo.extend(imported[name])
        return seen

    assert {name for name in imported if name in reached(name)} == set()
    assert {"ranking", "band", "fit"} <= reached("selection") and "selection" not in reached("ranking")
