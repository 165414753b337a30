import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.inds.graph import FK, EdgeSet, TableGraph, render

names = st.sampled_from([f"t{i}" for i in range(12)] + ["sales/orders", "ä<b>&c"])


def union_find_components(edges):
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    groups = {}
    for x in list(parent):
        groups.setdefault(find(x), set()).add(x)
    return {frozenset(g) for g in groups.values()}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(names, names), max_size=25), st.lists(st.tuples(names, names), max_size=5))
def test_components_equal_union_find(ind_edges, fk_edges):
    inds = EdgeSet([a for a, _ in ind_edges], [b for _, b in ind_edges], ["c \u2286 d"] * len(ind_edges))
    fks = EdgeSet([a for a, _ in fk_edges], [b for _, b in fk_edges], ["k"] * len(fk_edges), kind=FK)
    graph = TableGraph.build(inds, fks)
    all_edges = ind_edges + fk_edges
    assert graph.tables == sorted({t for e in all_edges for t in e})
    components = graph.components()
    assert {frozenset(c) for c in components} == union_find_components(all_edges)
    sizes = [len(c) for c in components]
    assert sizes == sorted(sizes, reverse=True)
    for i, group in enumerate(components):
        inside = [e for e in all_edges if e[0] in group]
        assert sorted((d, r) for d, r, _, _ in graph.component_edges(i)) == sorted(inside)


def example_graph():
    inds = EdgeSet.from_columns(
        ["orders", "orders", "items", "x<y>", "x<y>"],
        ["cust", "item", "sku", "a", "a"],
        ["customers", "items", "skus", "x<y>", "z&w"],
        ["id", "id", "code", "b", "c"],
    )
    fks = EdgeSet.from_columns(["orders"], ["cust"], ["customers"], ["id"], kind=FK)
    return TableGraph.build(inds, fks)


def test_graph_from_columns_and_edge_kinds():
    graph = example_graph()
    assert graph.components() == [["customers", "items", "orders", "skus"], ["x<y>", "z&w"]]
    assert graph.component.tolist() == [0, 0, 0, 0, 1, 1]
    edges = graph.component_edges(0)
    assert ("orders", "customers", "cust \u2286 id", "fk") in edges
    assert ("orders", "customers", "cust \u2286 id", "ind") in edges
    assert len(edges) == 4
    with pytest.raises(ValueError):
        EdgeSet(["a"], ["b"], ["l"], kind="other")
    with pytest.raises(ValueError):
        EdgeSet(["a"], ["b"], [])


def png_text(data: bytes) -> str:
    """Concatenated tEXt / zTXt / iTXt payloads of a PNG, read with the PNG chunk layout."""
    text, pos = [], 8
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"tEXt":
            text.append(body.decode("latin-1"))
        elif kind == b"zTXt":
            text.append(zlib.decompress(body[body.index(b"\0") + 2 :]).decode("latin-1"))
        elif kind == b"iTXt":
            text.append(body.decode("utf-8", "replace"))
        pos += 12 + length
    return "\n".join(text)


def test_render_html_contains_the_tables(tmp_path):
    graph = example_graph()
    page = render(graph, tmp_path / "g.html").read_text(encoding="utf-8")
    for table in ("orders", "customers", "items", "skus"):
        assert f">{table}<" in page
    assert "stroke-dasharray" in page  # the FK edge is drawn dashed
    assert "cust \u2286 id" in page
    second = render(graph, tmp_path / "g2.html", component=1).read_text(encoding="utf-8")
    assert "x&lt;y&gt;" in second and "z&amp;w" in second and "x<y>" not in second


def test_render_png_is_an_image_naming_the_tables(tmp_path):
    graph = example_graph()
    data = render(graph, tmp_path / "g.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    text = png_text(data)
    for table in ("orders", "customers", "items", "skus"):
        assert table in text
    # names are drawn literally, not as matplotlib mathtext (an odd "$" would otherwise fail to parse)
    odd = TableGraph.build(EdgeSet(["price$usd"], ["fx_$rates"], ["amount$ \u2286 usd"]))
    assert "price$usd" in png_text(render(odd, tmp_path / "odd.png").read_bytes())


def test_render_rejects_bad_arguments_and_handles_empty_graph(tmp_path):
    graph = example_graph()
    with pytest.raises(ValueError):
        render(graph, tmp_path / "g.svg")
    with pytest.raises(ValueError):
        render(graph, tmp_path / "g.html", component=2)
    empty = TableGraph.build(EdgeSet([], [], []))
    assert empty.n_components == 0 and empty.components() == []
    assert "0 tables" in render(empty, tmp_path / "e.html").read_text(encoding="utf-8")
    assert np.array_equal(empty.component, np.zeros(0))
