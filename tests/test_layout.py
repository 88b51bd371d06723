"""The layout shows the architecture (docs/modules.md, "The import direction"), and stays so.

The walks read every module of the portal's packages (tests.helpers.APP_PACKAGES; not tests, bench,
clients or migrations), at module level and inside functions alike, except under `if TYPE_CHECKING:`
(those imports never run). They fail on:

- an import against the direction: a package imports only packages in the layers below its own, so
  no two packages import each other and a layer can be read without those above it;
- a module over 400 lines;
- a function over 60 lines without a one-line reason at its top (`# Long: …`, after its docstring);
- an import of `hitl_portal` from anywhere but Django's entry points: the project package is settings,
  urls and the server entry, and nothing imports it but Django (and the tests and benchmarks, which
  start it by its settings, asgi or wsgi module, as gunicorn does).
"""

import ast
from pathlib import Path

from tests.helpers import APP_PACKAGES
from tests.test_import_circles import import_graph

ROOT = Path(__file__).resolve().parent.parent

# Lowest first. Each package may import those of the layers before its own, never its own layer's
# others or a later layer's (docs/modules.md draws it).
LAYERS: list[tuple[str, ...]] = [
    ("common", "audit"),
    ("workspaces",),
    ("people",),
    ("rules", "passkeys"),
    ("contacts",),
    ("approvals", "push"),
    ("collaboration",),
    ("integrations", "insights", "edge"),
    ("launch",),
    ("hitl_portal",),
]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
REASON = "# Long:"
# What Django, gunicorn, the tests and the benchmarks start the project by.
ENTRY_POINTS = {"hitl_portal.settings", "hitl_portal.urls", "hitl_portal.asgi", "hitl_portal.wsgi"}


def layer_of(layers: list[tuple[str, ...]]) -> dict[str, int]:
    return {package: number for number, layer in enumerate(layers) for package in layer}


def against_the_direction(root: Path, layers: list[tuple[str, ...]]) -> list[str]:
    """Every `module → module` import from a package to one not below it, sorted."""
    layer = layer_of(layers)
    graph = import_graph(root, tuple(layer))
    found = []
    for module, targets in graph.items():
        package = module.partition(".")[0]
        for target in targets:
            other = target.partition(".")[0]
            if other != package and layer[other] >= layer[package]:
                found.append(f"{module} → {target}")
    return sorted(found)


def modules(root: Path, packages: tuple[str, ...]) -> list[Path]:
    return sorted(
        path
        for package in packages
        for path in (root / package).rglob("*.py")
        if "migrations" not in path.relative_to(root).parts
    )


def long_modules(root: Path, packages: tuple[str, ...]) -> list[str]:
    found = []
    for path in modules(root, packages):
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def _reason_given(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A `# Long:` comment between the signature and the first statement after the docstring."""
    body = function.body
    documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    first = body[1] if documented and len(body) > 1 else body[0]
    return any(line.strip().startswith(REASON) for line in lines[function.lineno : first.lineno])


def long_functions(root: Path, packages: tuple[str, ...]) -> list[str]:
    """Functions over MAX_FUNCTION_LINES (decorators not counted) without a reason at their top."""
    found = []
    for path in modules(root, packages):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES and not _reason_given(lines, node):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {length} lines")
    return found


def _imported(tree: ast.AST) -> set[str]:
    """The absolute module names a file imports (at any depth; relative imports stay inside their package)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def project_imports(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Imports of `hitl_portal` from outside it that are not one of Django's entry points, by file."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if path.is_relative_to(root / "hitl_portal"):
                continue
            imported = _imported(ast.parse(path.read_text(), filename=str(path)))
            found += [f"{path.relative_to(root)}: {name}" for name in sorted(imported) if not _entry(name)]
    return found


def _entry(name: str) -> bool:
    """Not the project package, or one of its entry points (or a name in one: `hitl_portal.asgi.application`)."""
    if name.partition(".")[0] != "hitl_portal" or name == "hitl_portal":
        return True
    return any(name == entry or name.startswith(f"{entry}.") for entry in ENTRY_POINTS)


def test_every_package_of_the_portal_has_its_place_in_the_direction():
    assert sorted(layer_of(LAYERS)) == sorted(APP_PACKAGES)


def test_app_imports_follow_one_direction():
    assert against_the_direction(ROOT, LAYERS) == []


def test_no_app_module_is_over_400_lines():
    assert long_modules(ROOT, APP_PACKAGES) == []


def test_no_function_is_over_60_lines_without_a_reason_at_its_top():
    assert long_functions(ROOT, APP_PACKAGES) == []


def test_nothing_imports_the_project_package_but_django():
    assert project_imports(ROOT, (*APP_PACKAGES, "tests", "bench", ".ci")) == []
    assert "hitl_portal.settings" in (ROOT / "manage.py").read_text()  # Django's own way in


def test_every_domain_error_answers_with_a_listed_code():
    """The one error mapper reads each error's status and code off the error (it imports no app)."""
    from django.apps import apps

    from common.errors import ERROR_CODES
    from common.exceptions import DomainError

    assert apps.ready

    def subclasses(cls: type) -> set[type]:
        return {cls} | {sub for child in cls.__subclasses__() for sub in subclasses(child)}

    for module in ("approvals.exceptions", "contacts.exceptions", "passkeys.exceptions", "rules.exceptions"):
        __import__(module)
    answers = {error: (error.status, error.code) for error in subclasses(DomainError)}
    assert len(answers) > 20
    assert {code for _, code in answers.values()} <= set(ERROR_CODES)
    assert {status for status, _ in answers.values()} <= {400, 403, 404, 409, 422}


# The walks can fail: each finds what it is for in a small tree made for it.


def test_the_direction_walk_finds_an_import_upward_and_one_within_a_layer(tmp_path):
    for package, source in {
        "low": "from high import views\n",
        "high": "from low import models\n",
        "side": "def f():\n    from high import views\n",
        "typed": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from high import views\n",
    }.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "models.py").write_text(source)
    (tmp_path / "high" / "views.py").write_text("")

    found = against_the_direction(tmp_path, [("low", "typed"), ("high", "side")])

    assert found == [
        "low.models → high",
        "low.models → high.views",
        "side.models → high",
        "side.models → high.views",
    ]


def test_the_size_walks_find_a_long_module_and_a_long_function_without_a_reason(tmp_path):
    (tmp_path / "app").mkdir()
    body = "".join(f"    x{n} = {n}\n" for n in range(61))
    silent = f'def silent():\n    """Doc."""\n{body}'
    explained = f'def explained():\n    """Doc."""\n    {REASON} one table, row by row.\n{body}'
    (tmp_path / "app" / "long.py").write_text(f"{silent}\n\n{explained}")
    (tmp_path / "app" / "big.py").write_text("x = 1\n" * 401)

    assert long_functions(tmp_path, ("app",)) == ["app/long.py:1 silent: 63 lines"]
    assert long_modules(tmp_path, ("app",)) == ["app/big.py: 401 lines"]


def test_the_project_walk_finds_an_import_of_the_library_it_no_longer_is(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "views.py").write_text(
        "from hitl_portal.errors import json_error\nfrom hitl_portal import settings\nimport hitl_portal.asgi\n"
    )

    assert project_imports(tmp_path, ("app",)) == [
        "app/views.py: hitl_portal.errors",
        "app/views.py: hitl_portal.errors.json_error",
    ]
