"""The CLI's and the local cloud's rooms: imports among gpupilot's modules run one way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gpupilot"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imported_modules(path: Path) -> set[str]:
    """The gpupilot modules a module names in its imports, wherever they are (at the top, in a function, or only
    for type checking): each is an edge, since any of them would close a cycle one day."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # `from gpupilot.cli import jobs` imports the module gpupilot.cli.jobs; `from gpupilot.cli import main`
            # imports the package itself.
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in MODULES else node.module)
    return {name for name in found if name in MODULES}


def cycles() -> list[list[str]]:
    """Each import cycle among gpupilot's modules, as the modules along it."""
    imports = {name: imported_modules(path) - {name} for name, path in MODULES.items()}
    found: list[list[str]] = []
    for start in sorted(imports):
        todo = [[start]]
        seen: set[str] = set()
        while todo:
            path = todo.pop()
            for name in sorted(imports[path[-1]]):
                if name == start and min(path) == start:  # each cycle once, from its first module by name
                    found.append([*path, start])
                elif name not in seen:
                    seen.add(name)
                    todo.append([*path, name])
    return found


def test_no_two_modules_of_gpupilot_import_each_other_directly_or_around_a_cycle():
    # Given every module of gpupilot/ and the gpupilot modules it imports (at run time or for type checking)
    # When following the imports from each module
    found = cycles()

    # Then no module is reached from itself
    assert found == [], "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_the_cycle_check_sees_the_import_in_a_function_and_the_one_for_type_checking(tmp_path):
    # Given a module that imports another only inside a function, and one that imports it only for type checking
    source = tmp_path / "gpupilot" / "probe.py"
    source.parent.mkdir()
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gpupilot.openapi import render\n"
        "def later():\n    import gpupilot.snapshots\n"
    )

    # When / Then: both count as imports
    assert imported_modules(source) == {"gpupilot.openapi", "gpupilot.snapshots"}


ADAPTATIONS = PACKAGE / "localcloud" / "moto_adaptations"


def test_every_moto_adaptation_is_indexed_by_number_to_the_module_whose_docstring_holds_it():
    # Given the package docstring's index: "N. what: module.py" (or "module.py and module.py")
    index = ast.get_docstring(ast.parse((ADAPTATIONS / "__init__.py").read_text())) or ""
    entries = re.findall(r"(?m)^(\d+)\. [^\n]*?: ((?:\w+\.py)(?: and \w+\.py)*)$", index)

    # When reading each module it names
    numbers = [int(number) for number, _ in entries]
    unheld = [
        f"{number}: {module}"
        for number, modules in entries
        for module in modules.split(" and ")
        if not (ADAPTATIONS / module).exists()
        or f"{number}. " not in (ast.get_docstring(ast.parse((ADAPTATIONS / module).read_text())) or "")
    ]

    # Then the adaptations are numbered 1, 2, ... without a gap, and each module named holds its adaptation's text
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 16
    assert unheld == []


def test_every_function_that_applies_a_numbered_moto_adaptation_is_in_a_module_the_index_names_for_it():
    # Given the index's modules by number, and each function whose docstring starts with the number it applies
    index = ast.get_docstring(ast.parse((ADAPTATIONS / "__init__.py").read_text())) or ""
    modules = {
        int(n): set(m.split(" and "))
        for n, m in re.findall(r"(?m)^(\d+)\. [^\n]*?: ((?:\w+\.py)(?: and \w+\.py)*)$", index)
    }
    applied = [
        (int(said.group(1)), path.name, node.name)
        for path in sorted(ADAPTATIONS.glob("*.py"))
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
        and (said := re.match(r"(\d+)\. ", ast.get_docstring(node) or ""))
    ]

    # When looking each up / Then the index sends a reader of that number to the module holding the function
    misplaced = [
        f"{name} ({number}.) in {module}" for number, module, name in applied if module not in modules.get(number, ())
    ]
    assert applied and misplaced == []
