"""The layers of the package, kept by its import graph: no import cycle, and no import from a layer below to a
layer above.

The layers, bottom to top (docs/development.md draws them):

0. the vocabulary: plan drafts and their validation, events, the contract's value types, errors;
1. the pure reducers and views (``plantrail.projections``): no I/O, no store, no API;
2. the rules: one module per feature, deciding commands into events;
3. the stores: a run's records kept and read back, and the file store's own machinery;
4. the library API: ``Ledger``, the audit reads, verify, fork, the runs of a store;
5. the agents' adapters: transcript importers and live capture, writing through the library;
6. the facades: ``plantrail`` and ``plantrail.ledger`` themselves, which re-export the library's names lazily;
7. the front doors: the ``plantrail`` command and its servers.

A module may import its own layer and the layers below it; an import only for type checking counts too. So
nothing below the front doors imports the command line, and nothing below the facades imports a facade.

The allow-lists below hold what the code did before the layers were drawn; they only shrink. A cycle or an edge
that is fixed fails the test until it is taken off its list, and a new one fails it at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.project.import_graph import Graph, cycles, imports_of, read_graph

VOCABULARY, REDUCERS, RULES, STORES, LIBRARY, ADAPTERS, FACADES, FRONT_DOORS = range(8)

#: Where each module belongs, by its longest listed prefix.
LAYERS: dict[str, int] = {
    "plantrail._version": VOCABULARY,
    "plantrail.ledger.vocabulary": VOCABULARY,
    "plantrail.projections": REDUCERS,
    "plantrail.ledger.rules": RULES,
    "plantrail.ledger.stores": STORES,
    "plantrail.ledger": LIBRARY,
    "plantrail.ledger.importers": ADAPTERS,
    "plantrail.ledger.capture": ADAPTERS,
    "plantrail.cli": FRONT_DOORS,
}

#: Modules whose layer is not their package's: the facades (their packages' other modules are not), the old names
#: of moved modules, and ``python -m plantrail``.
MODULE_LAYERS: dict[str, int] = {
    "plantrail": FACADES,
    "plantrail._moved": FACADES,
    "plantrail.ledger": FACADES,
    "plantrail.__main__": FRONT_DOORS,
}

#: Import cycles the code had when this test was written (module-level and function-level imports).
KNOWN_CYCLES: list[frozenset[str]] = []

#: Imports from a layer below to a layer above that the code had when this test was written.
KNOWN_UPWARD_EDGES: frozenset[tuple[str, str]] = frozenset()


@pytest.fixture(scope="module")
def graph() -> Graph:
    return read_graph()


def layer_of(module: str) -> int:
    """The layer a module belongs to: its own, or the one of its longest listed prefix."""
    if module in MODULE_LAYERS:
        return MODULE_LAYERS[module]
    name = module
    while name not in LAYERS:
        if "." not in name:
            raise AssertionError(f"{module} is in no layer: add its package to LAYERS and to docs/development.md")
        name = name.rpartition(".")[0]
    return LAYERS[name]


def upward_edges(edges: Mapping[str, set[str]]) -> set[tuple[str, str]]:
    """Every import of a module from a higher layer."""
    return {
        (module, target)
        for module, targets in edges.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    }


def test_every_module_is_in_a_layer(graph: Graph) -> None:
    """Each module of the package belongs to one of the listed layers."""
    for module in graph.files:
        layer_of(module)


def test_no_new_import_cycle(graph: Graph) -> None:
    """No import cycle beyond the known ones, and a known one that is gone is taken off the list."""
    found = cycles(graph.edges(with_typing=False))
    new = [sorted(c) for c in found if not any(c <= known for known in KNOWN_CYCLES)]
    assert not new, f"new import cycles: {new}"
    gone = [sorted(known) for known in KNOWN_CYCLES if not any(c <= known for c in found)]
    assert not gone, f"these cycles are broken: take them off KNOWN_CYCLES: {gone}"
    shrunk = [sorted(known - set().union(*(c for c in found if c <= known))) for known in KNOWN_CYCLES]
    shrunk = [names for names in shrunk if names]
    assert not shrunk, f"these modules left their cycle: take them off KNOWN_CYCLES: {shrunk}"


def test_no_import_from_a_layer_above(graph: Graph) -> None:
    """No module imports a module of a higher layer (type-checking imports counted), beyond the known ones."""
    found = upward_edges(graph.edges(with_typing=True))
    assert not found - KNOWN_UPWARD_EDGES, f"imports from a layer above: {sorted(found - KNOWN_UPWARD_EDGES)}"
    gone = KNOWN_UPWARD_EDGES - found
    assert not gone, f"these edges are gone: take them off KNOWN_UPWARD_EDGES: {sorted(gone)}"


def test_the_graph_sees_what_it_must() -> None:
    """The reader itself: module-level, function-level, type-checking and lazy (named) imports all count, and a
    ``from`` import of a name that is no module counts as its package's."""
    modules = dict.fromkeys(["p", "p.a", "p.b", "p.c", "p.d", "p.e", "p.f"], Path("."))
    source = (
        "from typing import TYPE_CHECKING\n"
        "import p.a\n"
        "from p import b, NAME\n"
        "def f():\n"
        "    from p.c import thing\n"
        "if TYPE_CHECKING:\n"
        "    from p.d import Kind\n"
        "LAZY = {'x': 'p.e'}\n"
        "WORD = 'p'\n"
    )
    runtime, typing = imports_of(source, "p.f", modules)
    assert (runtime, typing) == ({"p", "p.a", "p.b", "p.c", "p.e"}, {"p.d"})
    assert "plantrail.ledger.api" in read_graph().runtime["plantrail.ledger"]  # the facade's lazy exports
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


#: The functions that tell what a name is (a file, a database, a run id in a store): the stores' own.
TARGET_PARSERS = frozenset({"is_database_url", "locate", "run_in_store", "require_file", "parse_location"})
#: Modules outside the stores that may still import them: the earlier releases' reading functions, kept for
#: callers (they re-export ``is_database_url`` and use nothing of it).
TARGET_PARSERS_ALLOWED = frozenset({"plantrail.ledger.reading"})


def test_no_module_outside_the_stores_parses_a_target(graph: Graph) -> None:
    """Only the stores turn what names a run into a run object (``plantrail.ledger.stores.opener``): no module
    outside them imports a function that tells a file from a database by its name."""
    import ast

    found = []
    for module, path in graph.files.items():
        if module.startswith("plantrail.ledger.stores") or module in TARGET_PARSERS_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plantrail.ledger.stores"):
                found += [f"{module}: {alias.name}" for alias in node.names if alias.name in TARGET_PARSERS]
    assert not found, f"modules outside the stores that parse a target: {found}"


#: What the pure layer may not import: files, processes, sockets, descriptors, the package's own data files.
IO_MODULES = frozenset(
    {"os", "io", "pathlib", "shutil", "tempfile", "subprocess", "socket", "fcntl", "mmap", "importlib.resources"}
)


def test_the_reducers_and_views_do_no_io(graph: Graph) -> None:
    """No module of ``plantrail.projections`` imports a module that reads or writes outside the process, nor calls
    ``open``: the reducers and views take values and give values."""
    import ast

    found = []
    for module, path in graph.files.items():
        if not module.startswith("plantrail.projections"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [f"{module}: import {a.name}" for a in node.names if a.name in IO_MODULES]
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
                found += [f"{module}: from {node.module} import …" for _ in names & IO_MODULES][:1]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                found.append(f"{module}: open(…) at line {node.lineno}")
    assert not found, f"I/O in the pure layer: {found}"
