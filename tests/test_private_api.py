"""No app code reaches into a private attribute of the libraries we build on (docs/modules.md).

A private attribute (`_name`) of Django, DRF, psycopg, psycopg-pool, uvicorn, uvicorn-worker or
gunicorn can change in any release without a word in its changelog. The walk below reads every app
module (not tests, bench, clients or migrations) and fails on an underscore attribute of an object
that comes from those packages:

- a name imported from them (`connection._prepare_cursor`), and any attribute, call or item of it;
- a class of ours built on one of theirs (our models are Django's `Model`s), and its instances
  where the code says so: a local made from such a name, a parameter annotated with one, a view's
  or middleware's `request`;
- `self` / `super()` in such a class, for a name the library's classes define or use
  (`self._session_key`), and a method of ours overriding a private one of theirs (`_serve`).

There is no allow-list. Django's `Model._meta` is not private: Django documents it as the public
Model _meta API (docs.djangoproject.com/en/5.2/ref/models/meta/) — it is the one underscore name
that API is reached by, so the rule, not an exception, leaves it alone.
"""

import ast
import importlib
import inspect
import re
from functools import cache
from pathlib import Path

import pytest

from tests.helpers import APP_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"django", "rest_framework", "psycopg", "psycopg_pool", "uvicorn", "uvicorn_worker", "gunicorn"}
PUBLIC_BY_DOCUMENTATION = {"_meta"}  # Django's Model _meta API (above)


def app_modules() -> list[Path]:
    return sorted(
        path
        for app in APP_PACKAGES
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts and "tests" not in path.parts
    )


def theirs(obj) -> bool:
    """Whether a runtime object is one of the packages' modules, classes, functions or instances."""
    if inspect.ismodule(obj):
        return obj.__name__.partition(".")[0] in PACKAGES
    if inspect.isclass(obj):
        return any(klass.__module__.partition(".")[0] in PACKAGES for klass in obj.__mro__)
    module = getattr(obj, "__module__", None)
    if isinstance(module, str) and (inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.ismethod(obj)):
        return module.partition(".")[0] in PACKAGES
    return theirs(type(obj))


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC_BY_DOCUMENTATION


@cache
def library_uses(klass: type, name: str) -> bool:
    """Whether a library class defines `name` or its source speaks of it (an instance attribute)."""
    if name in vars(klass):
        return True
    try:
        source = inspect.getsource(klass)
    except (OSError, TypeError):
        return False
    return re.search(rf"\.{re.escape(name)}\b", source) is not None


def root_name(node: ast.AST) -> str | None:
    """The name an expression of attributes, calls and items starts from (`a` of `a.b(c)[d].e`)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


class Module:
    """One app module: what its names are, resolved through its imports without importing it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(), filename=str(path))
        inside = path.is_relative_to(ROOT)
        self.package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1]) if inside else "common"
        self.imported: dict[str, object] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.tainted: set[str] = set()  # module globals made from their objects
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.bind_import(alias.asname or alias.name.partition(".")[0], alias.name.partition(".")[0])
            elif isinstance(node, ast.ImportFrom):
                base = self.absolute(node)
                for alias in node.names:
                    self.bind_import(alias.asname or alias.name, base, alias.name)
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for node in self.tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and self.comes_from_them(node.value, set()):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self.tainted |= {t.id for t in targets if isinstance(t, ast.Name)}

    def absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        return ".".join([*parts, node.module] if node.module else parts)

    def bind_import(self, name: str, module: str, attribute: str | None = None) -> None:
        try:
            obj = importlib.import_module(module)
            if attribute is not None:
                submodule = f"{module}.{attribute}"
                obj = getattr(obj, attribute) if hasattr(obj, attribute) else importlib.import_module(submodule)
        except ImportError:
            return
        self.imported[name] = obj

    def class_is_theirs(self, name: str) -> bool:
        return bool(self.library_bases(name))

    def library_bases(self, name: str) -> list[type]:
        """The library classes in the ancestry of a class defined in this module."""
        node = self.classes.get(name)
        if node is None:
            return []
        found: list[type] = []
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                found += self.library_bases(base.id)
                continue
            obj = self.evaluate(base)
            if inspect.isclass(obj):
                found += [k for k in obj.__mro__ if k.__module__.partition(".")[0] in PACKAGES]
        return found

    def evaluate(self, node: ast.AST):
        """A module-level name or dotted attribute of an imported one, at run time; None if unknown."""
        if isinstance(node, ast.Name):
            return self.imported.get(node.id)
        if isinstance(node, ast.Attribute):
            obj = self.evaluate(node.value)
            return getattr(obj, node.attr, None) if obj is not None else None
        return None

    def comes_from_them(self, node: ast.AST | None, local_taint: set[str]) -> bool:
        if node is None:
            return False
        name = root_name(node)
        if name is None:
            return False
        if name in local_taint or name in self.tainted or self.class_is_theirs(name):
            return True
        obj = self.imported.get(name)
        return obj is not None and theirs(obj)

    def own_names(self, class_name: str) -> set[str]:
        """Attributes our classes in this class's ancestry define: class attributes, methods, self.x = …"""
        names: set[str] = set()
        node = self.classes.get(class_name)
        if node is None:
            return names
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                names |= self.own_names(base.id)
        for item in ast.walk(node):
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(item.name)
            elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
                names.add(item.id)
            elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store):
                if isinstance(item.value, ast.Name) and item.value.id in ("self", "cls"):
                    names.add(item.attr)
        return names

    def findings(self) -> list[str]:
        found: list[str] = []
        self.visit(self.tree, None, set(), found)
        return found

    def visit(self, node: ast.AST, klass: str | None, taint: set[str], found: list[str]) -> None:
        if isinstance(node, ast.ClassDef):
            klass = node.name if node.name in self.classes else klass
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            taint = set(taint)
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for arg in args:
                if arg.arg == "request" or self.comes_from_them(arg.annotation, taint):
                    taint.add(arg.arg)
            if klass and private(node.name):
                bases = self.library_bases(klass)
                if any(node.name in vars(base) for base in bases):
                    found.append(f"{self.where(node)}: overrides {bases[0].__qualname__}.{node.name}")
            for statement in node.body:
                self.visit(statement, klass, taint, found)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            self.taint_targets(node, taint)
        if isinstance(node, ast.Attribute) and private(node.attr):
            self.judge(node, klass, taint, found)
        for child in ast.iter_child_nodes(node):
            self.visit(child, klass, taint, found)

    def taint_targets(self, node: ast.AST, taint: set[str]) -> None:
        pairs: list[tuple[ast.AST, ast.AST | None]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign):
            pairs = [(node.target, node.value if node.value is not None else node.annotation)]
            if self.comes_from_them(node.annotation, taint):
                pairs.append((node.target, node.annotation))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            pairs = [(node.target, node.iter)]
        else:
            pairs = [(item.optional_vars, item.context_expr) for item in node.items if item.optional_vars]
        for target, value in pairs:
            if self.comes_from_them(value, taint):
                taint |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}

    def judge(self, node: ast.Attribute, klass: str | None, taint: set[str], found: list[str]) -> None:
        value = node.value
        is_self = isinstance(value, ast.Name) and value.id in ("self", "cls")
        is_super = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
        if (is_self or is_super) and klass:
            bases = self.library_bases(klass)
            if not bases:
                return
            if is_super or node.attr not in self.own_names(klass) or any(library_uses(b, node.attr) for b in bases):
                found.append(f"{self.where(node)}: {ast.unparse(node)} ({bases[0].__qualname__}'s)")
            return
        if self.comes_from_them(value, taint):
            found.append(f"{self.where(node)}: {ast.unparse(node)}")

    def where(self, node: ast.AST) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path.name
        return f"{path}:{node.lineno}"


def private_uses() -> list[str]:
    return [finding for path in app_modules() for finding in Module(path).findings()]


def test_no_private_attribute_of_the_libraries():
    uses = private_uses()
    assert not uses, "private attributes of Django, DRF, psycopg, psycopg-pool, uvicorn or gunicorn:\n" + "\n".join(
        uses
    )


SAMPLES = {
    "connection._prepare_cursor(cursor)": "from django.db import connection\n\ndef f(cursor):\n    return {}\n",
    "pool._check = check": (
        "from django.db import connections\n\ndef f(check):\n    pool = connections['default'].pool\n    {}\n"
    ),
    "self._session_key = None": (
        "from django.contrib.sessions.backends.db import SessionStore\n\n"
        "class Kept(SessionStore):\n    def load(self):\n        {}\n"
    ),
    "request._stream": "def view(request):\n    return {}\n",
    "approval._state.adding": (
        "from django.db import models\n\nclass A(models.Model):\n    pass\n\ndef f(approval: A):\n    return {}\n"
    ),
}


@pytest.mark.parametrize("expression", sorted(SAMPLES))
def test_the_walk_finds_what_it_looks_for(tmp_path, expression):
    """The walk is not vacuous: each form of reaching in is found (and our own `_name`s are not)."""
    path = tmp_path / "probe.py"
    path.write_text(SAMPLES[expression].format(expression))
    assert Module(path).findings(), expression


def test_our_own_private_names_are_ours(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "import threading\n\nclass Cache:\n    def __init__(self):\n        self._lock = threading.Lock()\n\n"
        "    def get(self):\n        with self._lock:\n            return self._items\n\n"
        "cache = Cache()\n\ndef f():\n    return cache._lock\n"
    )
    assert Module(path).findings() == []
