"""The plan graph: layered layout, barycentre ordering, critical path, and the marks of each step."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.reads import read_state, rebuild_version
from plantrail.projections.graph import barycentre_order, critical_path, longest_path_ranks, plan_graph
from tests.conftest import SAMPLES
from tests.pictures import record_replanned_run


def test_ranks_are_longest_dependency_chains() -> None:
    """A step's rank is one more than its highest-ranked dependency, so a shortcut edge never pulls it left."""
    deps = {"a": [], "b": ["a"], "c": ["b"], "d": ["a", "c"]}
    assert longest_path_ranks(["a", "b", "c", "d"], deps) == {"a": 0, "b": 1, "c": 2, "d": 3}


def test_barycentre_uncrosses_a_crossed_pair() -> None:
    """Two chains listed crosswise end up side by side: each child sits in its parent's row."""
    order = ["p", "q", "y", "x"]
    deps = {"x": ["p"], "y": ["q"]}
    layers = barycentre_order(order, deps, longest_path_ranks(order, deps))
    assert layers == [["p", "q"], ["x", "y"]]


def test_barycentre_order_is_deterministic_and_keeps_every_node() -> None:
    """The same plan always gets the same layers, each holding exactly its rank's nodes."""
    order = [f"n{i}" for i in range(12)]
    deps = {f"n{i}": sorted({f"n{i // 2}", f"n{i // 3}"}) if i else [] for i in range(12)}
    ranks = longest_path_ranks(order, deps)
    first = barycentre_order(order, deps, ranks)
    assert first == barycentre_order(order, deps, ranks)
    assert sorted(n for layer in first for n in layer) == sorted(order)
    assert all(ranks[n] == r for r, layer in enumerate(first) for n in layer)


def test_critical_path_is_the_longest_chain_not_completed() -> None:
    """Completed steps are off the path; the longest remaining chain, by count, is it."""
    deps = {"a": [], "b": ["a"], "c": ["a"], "d": ["c"], "e": ["d"], "f": ["b"]}
    order = ["a", "b", "c", "d", "e", "f"]
    assert critical_path(order, deps, done=["a"]) == ("c", "d", "e")
    assert critical_path(order, deps, done=order) == ()


def test_critical_path_ties_go_to_the_stable_order() -> None:
    """Of two chains of equal length the one ending first in the stable order wins, and so does each link."""
    deps = {"a": [], "b": [], "c": ["a", "b"], "d": ["b"]}
    assert critical_path(["a", "b", "c", "d"], deps, done=[]) == ("a", "c")


def test_graph_nodes_and_edges_are_the_plan() -> None:
    """Every step is a node and every dependency an edge, nothing more (the replans sample's active version)."""
    state = read_state(str(SAMPLES / "login-fix-replans.jsonl")).state
    graph = plan_graph(state)
    assert state.plan is not None
    assert [n.id for n in graph.nodes] == list(state.steps)
    assert {(e.source, e.target) for e in graph.edges} == {(d, s.id) for s in state.plan.steps for d in s.depends_on}
    assert graph.version == state.version and graph.critical == ()  # the run is complete


def test_graph_marks_ready_reset_late_and_critical(make_ledger: Callable[..., Ledger]) -> None:
    """After the replan: a (reworded) is ready, b reset by lineage from a, c superseded, and the chain
    a-b-d-e critical (b wins the tie with c by the stable order)."""
    ledger = record_replanned_run(make_ledger)
    graph = plan_graph(ledger.state)
    nodes = {n.id: n for n in graph.nodes}
    assert nodes["a"].ready and nodes["a"].reset == "contract_changed"
    assert nodes["b"].invalidated_by == "a" and nodes["b"].reset == "upstream_invalidated"
    assert nodes["c"].reset == "superseded" and not nodes["c"].ready
    assert graph.critical == ("a", "b", "d", "e")
    on_path = {("a", "b"), ("b", "d"), ("d", "e")}
    assert {(e.source, e.target) for e in graph.edges if e.critical} == on_path
    assert all(n.critical for n in graph.nodes if n.id != "c") and not nodes["c"].critical
    assert all(n.late == 0 for n in graph.nodes)  # the late result was stamped v1


def test_a_past_version_carries_its_late_results(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """Version 1 drawn with the final state's orphans marks c with the late result stamped v1."""
    ledger = record_replanned_run(make_ledger)
    state, superseded_at, _ = rebuild_version(str(tmp_path / "run.jsonl"), 1)
    graph = plan_graph(state, ledger.state.orphans)
    nodes = {n.id: n for n in graph.nodes}
    assert superseded_at is not None and nodes["c"].late == 1
    assert nodes["b"].attempt == 2 and nodes["b"].status == "completed"
    assert [n.rank for n in graph.nodes] == [0, 1, 1, 2, 3]


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """A random DAG in topological order (each node depends on some earlier ones) and a set of done nodes."""
    size = draw(st.integers(min_value=0, max_value=9))
    order = [f"n{i}" for i in range(size)]
    deps = {n: sorted(draw(st.sets(st.sampled_from(order[:i]), max_size=3))) if i else [] for i, n in enumerate(order)}
    done = draw(st.sets(st.sampled_from(order))) if order else set()
    return order, deps, done


def _chains(order: list[str], deps: dict[str, list[str]], done: set[str]) -> list[tuple[str, ...]]:
    """Every dependency chain of not-done nodes, by brute force."""
    chains: list[tuple[str, ...]] = []
    for node in order:
        if node not in done:
            chains.append((node,))
            chains += [(*c, node) for c in list(chains) if c[-1] in deps[node]]
    return chains


@settings(max_examples=200, deadline=None)
@given(dags())
def test_layout_and_critical_path_hold_for_any_dag(dag: tuple[list[str], dict[str, list[str]], set[str]]) -> None:
    """Ranks put every step right of its dependencies, layers partition the steps, and the critical path is a
    chain of steps not done as long as the longest one brute force finds."""
    order, deps, done = dag
    ranks = longest_path_ranks(order, deps)
    assert all(ranks[n] > ranks[d] for n in order for d in deps[n])
    layers = barycentre_order(order, deps, ranks)
    assert sorted(n for layer in layers for n in layer) == sorted(order)
    path = critical_path(order, deps, done)
    assert not set(path) & done
    assert all(a in deps[b] for a, b in itertools.pairwise(path))
    assert len(path) == max((len(c) for c in _chains(order, deps, done)), default=0)
