"""The plan as a graph: nodes and edges of one plan version, laid out in layers, with its critical path.

Pure functions, no I/O and no layout library. The layout is the classic layered one, small enough to read:
each step's *rank* is the length of the longest dependency chain leading to it (sources at rank 0), and
the steps of a rank are ordered by a few barycentre sweeps (each step moves towards the mean position of its
neighbours in the ranks before, then after), starting from the plan's stable order and breaking every tie
by it, so the same plan always gets the same picture.

The *critical path* is the longest chain of steps not yet completed, counted in steps: the work that still
stands between the run and its goal. Among chains of equal length the one ending first in the stable order
wins, and each step's predecessor on it is the first in the stable order among the longest.

Renderers (:mod:`projections.graph_render`) turn a :class:`PlanGraph` into SVG, DOT or Mermaid text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Final, NamedTuple

from plantrail.projections.model import Orphan, PlanState
from plantrail.projections.repair_edges import edges_of, idle_repairs
from plantrail.projections.views import ready_steps, specs

__all__ = [
    "DEPENDS_ON",
    "ON_FAILURE",
    "GraphEdge",
    "GraphNode",
    "PlanGraph",
    "barycentre_order",
    "critical_path",
    "longest_path_ranks",
    "plan_graph",
]

#: The kind of an ordinary dependency edge.
DEPENDS_ON: Final = "depends_on"
#: The kind of a repair edge (:mod:`projections.repair_edges`): from a step to the step that repairs it when it fails;
#: never critical, and no part of the layout (a repair step runs only after a failure).
ON_FAILURE: Final = "on_failure"
_SWEEPS: Final = 4


class GraphNode(NamedTuple):
    """One step as drawn: its status (the style key), marks, and where the layout put it.

    ``rank`` is its layer (column); ``slot`` its row inside the layer, in half rows, so that a layer with
    fewer steps than the widest one is centred (``slot`` is ``2 * position + widest - len(layer)``).
    ``late`` counts the late results stamped with this version for this step (marks, never nodes).
    """

    id: str
    title: str
    status: str
    ready: bool
    attempt: int
    max_attempts: int | None
    reset: str | None
    invalidated_by: str | None
    late: int
    critical: bool
    rank: int
    slot: int


class GraphEdge(NamedTuple):
    """A dependency: ``source`` must complete before ``target`` starts; ``kind`` is the style key."""

    source: str
    target: str
    kind: str
    critical: bool


class PlanGraph(NamedTuple):
    """One plan version as a layered graph: nodes in the stable order, edges in target-then-dependency order."""

    run: str | None
    version: int
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    ranks: int
    widest: int
    critical: tuple[str, ...]


def longest_path_ranks(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Each id's rank: 0 without dependencies, else one more than its highest-ranked dependency.

    ``order`` is topological (every dependency before its dependents), as a plan's stable order is.
    """
    ranks: dict[str, int] = {}
    for node in order:
        ranks[node] = 1 + max((ranks[d] for d in deps.get(node, ())), default=-1)
    return ranks


def _layers(order: Sequence[str], ranks: Mapping[str, int]) -> list[list[str]]:
    layers: list[list[str]] = [[] for _ in range(1 + max(ranks.values(), default=-1))]
    for node in order:
        layers[ranks[node]].append(node)
    return layers


def _sweep(layer: list[str], neighbours: Mapping[str, Sequence[str]], position: Mapping[str, int]) -> list[str]:
    """The layer sorted by the mean position of each node's neighbours (a node without any keeps its place)."""
    current = {node: i for i, node in enumerate(layer)}

    def key(node: str) -> tuple[float, int]:
        placed = [position[n] for n in neighbours.get(node, ()) if n in position]
        centre = sum(placed) / len(placed) if placed else float(current[node])
        return (centre, current[node])

    return sorted(layer, key=key)


def barycentre_order(
    order: Sequence[str], deps: Mapping[str, Sequence[str]], ranks: Mapping[str, int], sweeps: int = _SWEEPS
) -> list[list[str]]:
    """The layers of ``ranks``, each ordered by ``sweeps`` down-and-up barycentre passes from the stable order."""
    layers = _layers(order, ranks)
    dependents: dict[str, list[str]] = {node: [] for node in order}
    for node in order:
        for dep in deps.get(node, ()):
            dependents[dep].append(node)
    for _ in range(sweeps):
        for passes, neighbours in ((range(1, len(layers)), deps), (range(len(layers) - 2, -1, -1), dependents)):
            for r in passes:
                position = {n: i for layer in layers for i, n in enumerate(layer)}
                layers[r] = _sweep(layers[r], neighbours, position)
    return layers


def critical_path(order: Sequence[str], deps: Mapping[str, Sequence[str]], done: Iterable[str]) -> tuple[str, ...]:
    """The longest chain of ids not in ``done``, first to last (empty when everything is done); see the module."""
    finished = set(done)
    length: dict[str, int] = {}
    before: dict[str, str | None] = {}
    for node in order:
        if node in finished:
            continue
        best: str | None = None
        for dep in deps.get(node, ()):
            if dep in length and (best is None or length[dep] > length[best]):
                best = dep
        length[node] = 1 + (0 if best is None else length[best])
        before[node] = best
    if not length:
        return ()
    end = max(length, key=lambda n: length[n])  # max keeps the first of equals: the stable order's first
    chain = [end]
    while (previous := before[chain[-1]]) is not None:
        chain.append(previous)
    return tuple(reversed(chain))


def _in_order(deps: Iterable[str], order_index: Mapping[str, int]) -> list[str]:
    """Distinct dependencies in the stable order."""
    return sorted(set(deps), key=lambda d: order_index[d])


def plan_graph(state: PlanState, late: Sequence[Orphan] | None = None) -> PlanGraph:
    """The active version of ``state`` as a laid-out graph.

    ``late`` are the late results to mark (default: the state's own orphans); only those stamped with this
    version count, so pass the final state's orphans to mark a replayed version's late arrivals.
    """
    contracts = specs(state)
    order = list(state.steps)
    index = {node: i for i, node in enumerate(order)}
    deps = {node: _in_order(contracts[node].depends_on, index) for node in order}
    ranks = longest_path_ranks(order, deps)
    layers = barycentre_order(order, deps, ranks)
    widest = max((len(layer) for layer in layers), default=0)
    slots = {node: 2 * i + widest - len(layer) for layer in layers for i, node in enumerate(layer)}
    done = [s.id for s in state.steps.values_in_order() if s.status == "completed"]
    path = critical_path(order, deps, [*done, *idle_repairs(state)])  # an idle repair step stands in no way
    on_path = set(path)
    path_edges = set(pairwise(path))
    ready = set(ready_steps(state))
    late_counts: dict[str, int] = {}
    for orphan in state.orphans if late is None else late:
        if orphan.plan_version == state.version:
            late_counts[orphan.step] = late_counts.get(orphan.step, 0) + 1
    nodes = tuple(
        GraphNode(
            id=s.id,
            title=contracts[s.id].title,
            status=s.status,
            ready=s.id in ready,
            attempt=s.attempt,
            max_attempts=s.max_attempts,
            reset=s.reset,
            invalidated_by=s.invalidated_by,
            late=late_counts.get(s.id, 0),
            critical=s.id in on_path,
            rank=ranks[s.id],
            slot=slots[s.id],
        )
        for s in state.steps.values_in_order()
    )
    edges = tuple(
        GraphEdge(source=dep, target=node, kind=DEPENDS_ON, critical=(dep, node) in path_edges)
        for node in order
        for dep in deps[node]
    ) + tuple(
        GraphEdge(source=node, target=repair, kind=ON_FAILURE, critical=False)
        for node, repair in sorted(edges_of(state.plan).items(), key=lambda edge: index[edge[0]])
        if repair in index
    )
    return PlanGraph(state.run, state.version, nodes, edges, len(layers), widest, path)
