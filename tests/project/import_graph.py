"""The installed package's import graph, read from its source: which module imports which, and how.

Every ``import`` and ``from … import`` counts, at module level or inside a function alike; an import under
``if TYPE_CHECKING:`` is kept apart (it never runs, so it makes no cycle, but it is still a dependency a layer
may not have). A module named as a string constant that is exactly a module's dotted name counts as a runtime
import too: that is how a package's lazy exports and ``importlib.import_module`` name what they load (a dotted
name only: the word ``"plantrail"`` is also a key, a folder's and a pool's name).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ROOT", "Graph", "cycles", "imports_of", "levels", "packages", "read_graph"]


@dataclass
class Graph:
    """Each module's source file, and the modules it imports at run time and only for type checking."""

    files: dict[str, Path] = field(default_factory=dict)
    runtime: dict[str, set[str]] = field(default_factory=dict)
    typing: dict[str, set[str]] = field(default_factory=dict)

    def edges(self, *, with_typing: bool) -> dict[str, set[str]]:
        """Every module's imports: the runtime ones, and with ``with_typing`` the type-checking ones too."""
        if not with_typing:
            return self.runtime
        return {name: self.runtime[name] | self.typing[name] for name in self.files}


ROOT = Path(__file__).resolve().parents[2]


def packages() -> list[str]:
    """The packages the build installs (pyproject.toml lists them: the folders are mapped into ``plantrail``)."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        return list(tomllib.load(file)["tool"]["setuptools"]["packages"])


def _modules() -> Iterator[tuple[str, Path]]:
    """Every module of the installed package with its source file (packages as their ``__init__``)."""
    for name in packages():
        package = importlib.import_module(name)
        yield name, Path(str(package.__file__))
        for info in pkgutil.iter_modules(package.__path__, f"{name}."):
            if not info.ispkg:
                yield info.name, Path(package.__path__[0], f"{info.name.rpartition('.')[2]}.py")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import statement of a tree, and whether it sits under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, typing_only
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), typing_only)
        else:
            yield from _imports(node, typing_only)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement loads (a ``from`` import's names may be modules themselves)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    # A name that is a module loads that module (its package is loaded first whatever is imported, as for any
    # module); any other name loads the package's own module.
    yield from (f"{base}.{alias.name}" for alias in node.names)


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The package module a dotted name belongs to (the longest prefix that is one), or None outside it."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _resolve(names: Iterable[str], module: str, modules: Mapping[str, Path]) -> set[str]:
    found = {_known(name, modules) for name in names}
    return {name for name in found if name is not None and name != module}


def imports_of(
    source: str, module: str, modules: Mapping[str, Path], *, is_package: bool = False
) -> tuple[set[str], set[str]]:
    """The modules of ``modules`` that the source of ``module`` imports: at run time, and only for type checking."""
    tree = ast.parse(source)
    runtime: set[str] = set()
    typing: set[str] = set()
    for node, typing_only in _imports(tree):
        (typing if typing_only else runtime).update(_resolve(_targets(node, module, is_package), module, modules))
    strings = (n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    runtime |= {s for s in strings if "." in s and s in modules and s != module}
    return runtime, typing - runtime


def read_graph() -> Graph:
    """The import graph of the installed ``plantrail`` package."""
    graph = Graph(files=dict(_modules()))
    for module, path in graph.files.items():
        source = path.read_text(encoding="utf-8")
        runtime, typing = imports_of(source, module, graph.files, is_package=path.name == "__init__.py")
        graph.runtime[module], graph.typing[module] = runtime, typing
    return graph


def cycles(edges: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def levels(edges: Mapping[str, set[str]]) -> dict[str, int]:
    """Each module's level: 0 for a module that imports no other, else one above the highest it imports (the
    modules of a cycle share one level)."""
    component_of = {name: frozenset({name}) for name in edges}
    for component in cycles(edges):
        component_of.update(dict.fromkeys(component, component))
    level: dict[frozenset[str], int] = {}

    def of(component: frozenset[str]) -> int:
        if component not in level:
            level[component] = 0  # a placeholder while its imports are measured (cycles are collapsed)
            below = {component_of[t] for m in component for t in edges[m] if t in component_of} - {component}
            level[component] = 1 + max(map(of, below)) if below else 0
        return level[component]

    return {name: of(component_of[name]) for name in edges}
