"""The IND graph of tables (Many §6, Figs. 16-17): tables are vertices, INDs directed edges dep → ref.

Every table taking part in an IND becomes a vertex; each IND R.A ⊆ S.B adds an edge R → S labelled
"A ⊆ B". The graph is grouped into its (weakly) connected components (scipy.sparse.csgraph). A second edge
kind, accepted foreign keys, can be added beside the INDs and is drawn in another style.

The renderer draws what Fig. 17 shows: all components as circles sized by their number of tables, and one
component's tables with labelled edges, plus the list of its tables and edges. It writes either a
self-contained HTML page (inline SVG, no scripts) or a PNG (matplotlib, table names also stored in the PNG
"Description" text chunk).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

IND = "ind"
FK = "fk"
EDGE_STYLES = {IND: {"color": "#1f5fa8", "dash": None}, FK: {"color": "#c0392b", "dash": (6, 3)}}


@dataclass(frozen=True)
class EdgeSet:
    """Directed table-level edges of one kind (``IND`` or ``FK``), one label per edge."""

    dep_tables: Sequence[str]
    ref_tables: Sequence[str]
    labels: Sequence[str]
    kind: str = IND

    def __post_init__(self) -> None:
        if self.kind not in EDGE_STYLES:
            raise ValueError(f"edge kind must be one of {sorted(EDGE_STYLES)}, got {self.kind!r}")
        if not len(self.dep_tables) == len(self.ref_tables) == len(self.labels):
            raise ValueError("dep_tables, ref_tables and labels must have equal length")

    @classmethod
    def from_columns(
        cls,
        dep_tables: Sequence[str],
        dep_columns: Sequence[str],
        ref_tables: Sequence[str],
        ref_columns: Sequence[str],
        kind: str = IND,
    ) -> EdgeSet:
        """Edges from column pairs (an IND or FK per row), labelled "dep_column ⊆ ref_column"."""
        labels = [f"{d} \u2286 {r}" for d, r in zip(dep_columns, ref_columns, strict=True)]
        return cls(list(dep_tables), list(ref_tables), labels, kind)


@dataclass(frozen=True)
class TableGraph:
    """Tables (sorted), edges as index arrays, and each table's component (0 = largest component)."""

    tables: list[str]
    src: np.ndarray
    dst: np.ndarray
    labels: list[str]
    kinds: list[str]
    component: np.ndarray

    @classmethod
    def build(cls, *edge_sets: EdgeSet) -> TableGraph:
        tables = sorted({t for es in edge_sets for t in (*es.dep_tables, *es.ref_tables)})
        position = {t: i for i, t in enumerate(tables)}
        src = np.array([position[t] for es in edge_sets for t in es.dep_tables], dtype=np.int64)
        dst = np.array([position[t] for es in edge_sets for t in es.ref_tables], dtype=np.int64)
        labels = [label for es in edge_sets for label in es.labels]
        kinds = [es.kind for es in edge_sets for _ in es.labels]
        n = len(tables)
        adjacency = coo_matrix((np.ones(src.shape[0]), (src, dst)), shape=(n, n)).tocsr()
        _, raw = connected_components(adjacency, directed=True, connection="weak")
        # Renumber: largest component first, ties by the smallest table name (tables are sorted).
        sizes = np.bincount(raw, minlength=raw.max() + 1 if n else 0)
        first = np.full(sizes.shape[0], n, dtype=np.int64)
        np.minimum.at(first, raw, np.arange(n))
        order = np.lexsort((first, -sizes))
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        return cls(tables, src, dst, labels, kinds, rank[raw] if n else raw)

    @property
    def n_components(self) -> int:
        return int(self.component.max()) + 1 if self.tables else 0

    def components(self) -> list[list[str]]:
        """Table names of each component, largest first."""
        groups: list[list[str]] = [[] for _ in range(self.n_components)]
        for table, c in zip(self.tables, self.component.tolist(), strict=True):
            groups[c].append(table)
        return groups

    def component_edges(self, component: int) -> list[tuple[str, str, str, str]]:
        """(dep_table, ref_table, label, kind) of every edge inside one component."""
        inside = self.component[self.src] == component
        pairs = zip(self.src.tolist(), self.dst.tolist(), strict=True)
        return [
            (self.tables[s], self.tables[d], self.labels[i], self.kinds[i])
            for i, (s, d) in enumerate(pairs)
            if inside[i]
        ]


# ---- rendering: a scene of primitives (shared by the SVG and matplotlib back ends) -----------------------

_OVERVIEW = 360.0  # side of the components panel
_DETAIL = 640.0  # side of the one-component panel
_NODE_R = 16.0


@dataclass(frozen=True)
class _Scene:
    bubbles: list[tuple[float, float, float, str, str]]  # x, y, r, text, hover (table names)
    nodes: list[tuple[float, float, str]]  # x, y, table
    edges: list[tuple[float, float, float, float, str, str, bool]]  # x1, y1, x2, y2, label, kind, loop
    title: str


def _scene(graph: TableGraph, component: int, max_components: int) -> _Scene:
    groups = graph.components()
    shown = groups[:max_components]
    bubbles = []
    if shown:
        per_row = math.ceil(math.sqrt(len(shown)))
        cell = _OVERVIEW / per_row
        largest = len(shown[0])
        for i, tables in enumerate(shown):
            r = max(3.0, 0.45 * cell * math.sqrt(len(tables) / largest))
            x, y = cell * (i % per_row + 0.5), cell * (i // per_row + 0.5)
            bubbles.append((x, y, r, str(len(tables)), f"component {i}: " + ", ".join(tables)))
    tables = groups[component] if 0 <= component < len(groups) else []
    centre, radius = _DETAIL / 2, _DETAIL / 2 - 90
    at = {}
    for i, table in enumerate(tables):
        angle = 2 * math.pi * i / len(tables) - math.pi / 2
        spread = radius if len(tables) > 1 else 0.0
        at[table] = (centre + spread * math.cos(angle), centre + spread * math.sin(angle))
    nodes = [(x, y, t) for t, (x, y) in at.items()]
    merged: dict[tuple[str, str, str], list[str]] = {}
    for dep, ref, label, kind in graph.component_edges(component):
        merged.setdefault((dep, ref, kind), []).append(label)
    edges = []
    for (dep, ref, kind), labels in sorted(merged.items()):
        (x1, y1), (x2, y2) = at[dep], at[ref]
        edges.append((x1, y1, x2, y2, "; ".join(labels), kind, dep == ref))
    title = f"component {component} of {len(groups)} ({len(tables)} tables)"
    return _Scene(bubbles, nodes, edges, title)


def _edge_geometry(x1: float, y1: float, x2: float, y2: float, kind: str) -> tuple[float, ...]:
    """Endpoints trimmed to the node circles, shifted sideways so both directions and both kinds of edge
    between one pair of tables stay apart; plus the label position."""
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    shift = 4.0 if kind == IND else 10.0
    nx, ny = -uy * shift, ux * shift
    sx, sy = x1 + ux * _NODE_R + nx, y1 + uy * _NODE_R + ny
    ex, ey = x2 - ux * _NODE_R + nx, y2 - uy * _NODE_R + ny
    return sx, sy, ex, ey, (sx + ex) / 2 + nx, (sy + ey) / 2 + ny


def _svg(scene: _Scene) -> str:
    e = html.escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_OVERVIEW:.0f}" height="{_OVERVIEW:.0f}">']
    for x, y, r, text, hover in scene.bubbles:
        parts.append(
            f'<g><title>{e(hover)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" '
            f'fill="#9ecae1" stroke="#3182bd"/><text x="{x:.1f}" y="{y + 4:.1f}" '
            f'text-anchor="middle" font-size="11">{e(text)}</text></g>'
        )
    parts.append("</svg>")
    parts.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{_DETAIL:.0f}" height="{_DETAIL:.0f}">')
    parts.append(
        "<defs>"
        + "".join(
            f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="10" refY="5" '
            'markerWidth="7" markerHeight="7" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{style["color"]}"/></marker>'
            for kind, style in EDGE_STYLES.items()
        )
        + "</defs>"
    )
    for x1, y1, x2, y2, label, kind, loop in scene.edges:
        style = EDGE_STYLES[kind]
        dash = f' stroke-dasharray="{style["dash"][0]},{style["dash"][1]}"' if style["dash"] else ""
        if loop:
            parts.append(
                f'<circle cx="{x1:.1f}" cy="{y1 - _NODE_R - 10:.1f}" r="10" fill="none" '
                f'stroke="{style["color"]}"{dash}/>'
            )
            lx, ly = x1, y1 - _NODE_R - 24
        else:
            sx, sy, ex, ey, lx, ly = _edge_geometry(x1, y1, x2, y2, kind)
            parts.append(
                f'<line x1="{sx:.1f}" y1="{sy:.1f}" x2="{ex:.1f}" y2="{ey:.1f}" '
                f'stroke="{style["color"]}"{dash} marker-end="url(#arrow-{kind})"/>'
            )
        parts.append(
            f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="10" text-anchor="middle" '
            f'fill="{style["color"]}">{e(label)}</text>'
        )
    for x, y, table in scene.nodes:
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{_NODE_R:.0f}" fill="#fdd49e" stroke="#7f2704"/>'
            f'<text x="{x:.1f}" y="{y + _NODE_R + 12:.1f}" font-size="11" '
            f'text-anchor="middle">{e(table)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _html(graph: TableGraph, scene: _Scene, component: int) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(d)}</td><td>{e(r)}</td><td>{e(label)}</td><td>{kind}</td></tr>"
        for d, r, label, kind in graph.component_edges(component)
    )
    tables = "".join(f"<li>{e(t)}</li>" for t in graph.components()[component]) if graph.tables else ""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>IND graph</title>'
        "<style>body{font-family:sans-serif} svg{border:1px solid #ccc;margin:4px;vertical-align:top}"
        "td,th{padding:2px 8px;text-align:left}</style></head><body>"
        f"<h1>IND graph: {len(graph.tables)} tables, {graph.n_components} components</h1>"
        f"<p>{e(scene.title)}. Solid blue: inclusion dependency; dashed red: foreign key.</p>"
        f"{_svg(scene)}<h2>Tables</h2><ul>{tables}</ul>"
        f"<h2>Edges</h2><table><tr><th>dependent table</th><th>referenced table</th>"
        f"<th>columns</th><th>kind</th></tr>{rows}</table></body></html>\n"
    )


def _png(scene: _Scene, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch

    figure = Figure(figsize=(14, 8))
    FigureCanvasAgg(figure)
    overview, detail = figure.subplots(1, 2, gridspec_kw={"width_ratios": [_OVERVIEW, _DETAIL]})
    for ax, side in ((overview, _OVERVIEW), (detail, _DETAIL)):
        ax.set_xlim(0, side)
        ax.set_ylim(side, 0)
        ax.set_aspect("equal")
        ax.axis("off")
    overview.set_title("components (circle area ~ tables)")
    for x, y, r, text, _ in scene.bubbles:
        overview.add_patch(Circle((x, y), r, facecolor="#9ecae1", edgecolor="#3182bd"))
        overview.text(x, y, text, ha="center", va="center", fontsize=7, parse_math=False)
    detail.set_title(scene.title)
    for x1, y1, x2, y2, label, kind, loop in scene.edges:
        style = EDGE_STYLES[kind]
        linestyle = (0, style["dash"]) if style["dash"] else "solid"
        if loop:
            detail.add_patch(
                Circle((x1, y1 - _NODE_R - 10), 10, fill=False, edgecolor=style["color"], linestyle=linestyle)
            )
            lx, ly = x1, y1 - _NODE_R - 24
        else:
            sx, sy, ex, ey, lx, ly = _edge_geometry(x1, y1, x2, y2, kind)
            detail.add_patch(
                FancyArrowPatch(
                    (sx, sy),
                    (ex, ey),
                    arrowstyle="-|>",
                    mutation_scale=10,
                    color=style["color"],
                    linestyle=linestyle,
                )
            )
        detail.text(
            lx, ly, label, ha="center", va="center", fontsize=7, color=style["color"], parse_math=False
        )
    for x, y, table in scene.nodes:
        detail.add_patch(Circle((x, y), _NODE_R, facecolor="#fdd49e", edgecolor="#7f2704", zorder=3))
        detail.text(x, y + _NODE_R + 10, table, ha="center", va="center", fontsize=8, parse_math=False)
    names = "; ".join(t for _, _, t in scene.nodes)
    figure.savefig(path, format="png", dpi=80, metadata={"Title": scene.title, "Description": names})


def render(graph: TableGraph, path: str | Path, component: int = 0, max_components: int = 100) -> Path:
    """Draw all components (at most ``max_components``, largest first) and one component's tables and
    edges into ``path``: a self-contained page if it ends in .html, a PNG if it ends in .png."""
    path = Path(path)
    if graph.tables and not 0 <= component < graph.n_components:
        raise ValueError(f"component must be in [0, {graph.n_components}), got {component}")
    scene = _scene(graph, component, max_components)
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        path.write_text(_html(graph, scene, component), encoding="utf-8")
    elif suffix == ".png":
        _png(scene, path)
    else:
        raise ValueError(f"render writes .html or .png, not {path.suffix!r}")
    return path


def catalog_graph(catalog: Path) -> TableGraph:
    """The IND graph of a catalog's ``inclusion_dependencies``, with its accepted ``fk_candidates`` as the
    second edge kind (read with delta-rs: no JVM)."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(catalog / "inclusion_dependencies")).to_pyarrow_table()
    columns = [rows[name].to_pylist() for name in ("dep_table", "dep_column", "ref_table", "ref_column")]
    fks = [
        row
        for row in DeltaTable(str(catalog / "fk_candidates")).to_pyarrow_table().to_pylist()
        if row["accepted"]
    ]
    foreign_keys = EdgeSet(
        [row["fk_table"] for row in fks],
        [row["pk_table"] for row in fks],
        [f"({', '.join(row['fk_columns'])}) \u2192 ({', '.join(row['pk_columns'])})" for row in fks],
        kind=FK,
    )
    return TableGraph.build(EdgeSet.from_columns(*columns), foreign_keys)
