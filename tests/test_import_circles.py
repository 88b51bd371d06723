"""No import circle in app code: a circle is the sign that one module does two jobs (STYLE.md).

The walk reads every import statement of the app packages — at module level and inside functions
alike, since an import moved into a function to dodge a circle is still the circle — except those
under `if TYPE_CHECKING:`, which never run. Migrations are left out: Django loads them apart.
"""

import ast
from pathlib import Path

from tests.helpers import APP_PACKAGES

ROOT = Path(__file__).resolve().parent.parent


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module name `tree` imports (absolute; `from x import y` also counts x.y, in case y is a module)."""
    found: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    package = package[: len(package) - (child.level - 1)]
                    base = ".".join(package + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in child.names)
            walk(child)

    walk(tree)
    return found


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """module → the modules of `packages` it imports."""
    files = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")) if (root / package).is_dir() else []:
            if "migrations" not in path.parts:
                files[_module_name(path, root)] = path
    graph = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        names = _imports(tree, module, path.name == "__init__.py")
        graph[module] = {name for name in names if name in files and name != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_module_of_the_app_imports_itself_round_a_circle():
    graph = import_graph(ROOT, APP_PACKAGES)
    assert len(graph) > 100  # the walk found the app (not an empty folder)
    assert "approvals.review.decide" in graph["approvals.review.views"]  # and reads relative imports
    assert circles(graph) == []


def test_the_walk_finds_a_circle_hidden_in_a_function_and_ignores_type_checking(tmp_path):
    app = tmp_path / "shop"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "orders.py").write_text("from .billing import invoice\n")
    (app / "billing.py").write_text("def invoice():\n    from shop import mail\n")
    (app / "mail.py").write_text("from typing import TYPE_CHECKING\nfrom . import orders\n")
    (app / "catalog.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .orders import x\n")
    (app / "orders_typing.py").write_text("import shop.catalog\n")

    assert circles(import_graph(tmp_path, ("shop",))) == [["shop.billing", "shop.mail", "shop.orders"]]
