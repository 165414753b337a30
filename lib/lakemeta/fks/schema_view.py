"""The lake's schemas as a page a person can read: ``lakemeta graph``.

One circle of every table with every IND and FK on it is a hairball (156 tables and 15,723 edges on the
demo lake). A person reads a lake by schema, and a schema by its references. So the page holds:

* a **lake overview**: per schema (a folder of the lake unless ``fks.schemas`` maps it), its tables, its
  accepted foreign keys, the groups of overlapping tables, and the views below;
* **one view per schema graph**: the connected components of a schema's tables joined by accepted foreign
  keys (or, with ``inds``, by INDs too), each drawn on its own. Tables that are copies, samples or
  extracts of one another (``table_overlaps``) are collapsed into one node named by the first table and
  the number of the others. A table with no accepted FK is counted in the overview, not drawn;
* a **layered layout** (Sugiyama's scheme): tables that reference others above the tables they reference,
  each table in the layer of its longest chain of references down to a table that references none (cycles
  broken at the edges that close them, self-references drawn as loops), and within a layer the tables
  ordered by the mean position of their neighbours (barycentres), sweeping down and up a few times so
  that edges cross less;
* **zoom and search** without a library: the wheel zooms a view around the pointer and dragging pans it;
  the search box marks every table whose name holds the text and dims the others.

The page is self-contained (inline SVG, CSS and a few lines of script), read from the catalog with delta-rs.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lakemeta.fks.overlaps import joined_groups
from lakemeta.storage import Location

_LAYER_GAP = 110.0
_NODE_GAP = 40.0
_NODE_HEIGHT = 30.0
_CHAR_WIDTH = 7.0
_MARGIN = 30.0
_SWEEPS = 4
_MAX_WIDTH = 1300.0


@dataclass(frozen=True)
class Edge:
    """A reference between two drawn nodes: an accepted FK (``fk``) or an IND (``ind``)."""

    dep: str
    ref: str
    label: str
    kind: str


@dataclass
class SchemaView:
    """One schema graph: its nodes (a node names a table or a collapsed group of overlapping tables),
    their members, the edges between them, and where the layout puts each node."""

    schema: str
    nodes: list[str]
    members: dict[str, list[str]]
    edges: list[Edge]
    position: dict[str, tuple[float, float]] = field(default_factory=dict)
    width: dict[str, float] = field(default_factory=dict)


def _components(nodes: list[str], edges: list[Edge]) -> list[list[str]]:
    """The connected components of the nodes joined by the edges, each sorted, largest first."""
    group = joined_groups([(n, n) for n in nodes] + [(e.dep, e.ref) for e in edges])
    members: dict[str, list[str]] = defaultdict(list)
    for node in sorted(nodes):
        members[group[node]].append(node)
    return sorted(members.values(), key=lambda c: (-len(c), c[0]))


def layers(nodes: list[str], edges: list[Edge]) -> dict[str, int]:
    """Each node's layer: the length of its longest chain of references down to a node that references
    none (0), over the edges left once those that close a cycle are dropped (depth-first, in name order)."""
    out: dict[str, list[str]] = defaultdict(list)
    for edge in edges:
        if edge.dep != edge.ref:
            out[edge.dep].append(edge.ref)
    state: dict[str, int] = {}  # 1 on the path, 2 done
    kept: dict[str, list[str]] = defaultdict(list)

    def visit(node: str) -> None:
        state[node] = 1
        for ref in sorted(set(out[node])):
            if state.get(ref) == 1:
                continue  # closes a cycle: not a layering edge
            kept[node].append(ref)
            if ref not in state:
                visit(ref)
        state[node] = 2

    for node in sorted(nodes):
        if node not in state:
            visit(node)
    layer: dict[str, int] = {}

    def depth(node: str) -> int:
        if node not in layer:
            layer[node] = 1 + max((depth(ref) for ref in kept[node]), default=-1)
        return layer[node]

    for node in nodes:
        depth(node)
    return layer


def order_layers(layer: dict[str, int], edges: list[Edge]) -> list[list[str]]:
    """The nodes of each layer (top layer first) in the order that barycentre sweeps give them."""
    rows: dict[int, list[str]] = defaultdict(list)
    for node in sorted(layer):
        rows[layer[node]].append(node)
    ordered = [rows[level] for level in sorted(rows, reverse=True)]
    neighbours: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        if edge.dep != edge.ref:
            neighbours[edge.dep].add(edge.ref)
            neighbours[edge.ref].add(edge.dep)
    for sweep in range(_SWEEPS):
        sequence = range(1, len(ordered)) if sweep % 2 == 0 else range(len(ordered) - 2, -1, -1)
        for i in sequence:
            fixed = ordered[i - 1] if sweep % 2 == 0 else ordered[i + 1]
            at = {node: k for k, node in enumerate(fixed)}

            def barycentre(node: str, at: dict[str, int] = at, row: list[str] = ordered[i]) -> float:
                placed = [at[n] for n in neighbours[node] if n in at]
                return sum(placed) / len(placed) if placed else float(row.index(node))

            ordered[i] = sorted(ordered[i], key=lambda n: (barycentre(n), n))
    return ordered


def place(view: SchemaView) -> None:
    """Set each node's centre and width: layers top to bottom, each layer's nodes side by side, centred."""
    view.width = {node: _CHAR_WIDTH * len(_label(node, view)) + 20 for node in view.nodes}
    rows = order_layers(layers(view.nodes, view.edges), view.edges)
    spans = [sum(view.width[n] for n in row) + _NODE_GAP * (len(row) - 1) for row in rows]
    widest = max(spans, default=0.0)
    for i, (row, span) in enumerate(zip(rows, spans, strict=True)):
        x = _MARGIN + (widest - span) / 2
        for node in row:
            view.position[node] = (x + view.width[node] / 2, _MARGIN + _NODE_HEIGHT / 2 + i * _LAYER_GAP)
            x += view.width[node] + _NODE_GAP


def _label(node: str, view: SchemaView) -> str:
    name = node.removeprefix(f"{view.schema}/") if view.schema else node
    others = len(view.members[node]) - 1
    return f"{name} (+{others})" if others else name


def schema_views(
    fks: list[dict],
    overlaps: list[tuple[str, str]],
    inds: list[dict] | None,
    schema_of: Callable[[str], str],
) -> tuple[dict[str, dict], list[SchemaView]]:
    """The lake overview (per schema: tables seen, accepted FKs, overlap groups) and the laid-out views of
    every schema graph, from the accepted FKs (rows of ``fk_candidates``), the overlapping table pairs and,
    when given, the INDs (rows of ``inclusion_dependencies``) within a schema (``schema_of``:
    ``FkConfig.schema_of``)."""
    group = joined_groups(overlaps)
    node_of = lambda table: group.get(table, table)  # noqa: E731
    by_schema: dict[str, list[Edge]] = defaultdict(list)
    overview: dict[str, dict] = defaultdict(lambda: {"fks": 0, "tables": set(), "overlap_groups": set()})
    for row in fks:
        label = f"({', '.join(row['fk_columns'])}) \u2192 ({', '.join(row['pk_columns'])})"
        schema = schema_of(row["fk_table"])
        overview[schema]["fks"] += 1
        if schema_of(row["pk_table"]) == schema:
            by_schema[schema].append(Edge(node_of(row["fk_table"]), node_of(row["pk_table"]), label, "fk"))
    for row in inds or []:
        schema = schema_of(row["dep_table"])
        if schema_of(row["ref_table"]) == schema and row["dep_table"] != row["ref_table"]:
            label = f"{row['dep_column']} \u2286 {row['ref_column']}"
            by_schema[schema].append(Edge(node_of(row["dep_table"]), node_of(row["ref_table"]), label, "ind"))
    for table, head in group.items():
        overview[schema_of(table)]["overlap_groups"].add(head)
    views = []
    for schema in sorted(by_schema):
        edges = by_schema[schema]
        nodes = sorted({e.dep for e in edges} | {e.ref for e in edges})
        for component in _components(nodes, edges):
            members = {n: sorted(t for t, h in group.items() if h == n) or [n] for n in component}
            inside = [e for e in edges if e.dep in members]
            view = SchemaView(schema, component, members, inside)
            place(view)
            views.append(view)
            overview[schema]["tables"].update(t for ts in members.values() for t in ts)
    return overview, views


def _svg(view: SchemaView, index: int) -> str:
    e = html.escape
    height = max(y for _, y in view.position.values()) + _NODE_HEIGHT / 2 + _MARGIN
    width = max(x + view.width[n] / 2 for n, (x, _) in view.position.items()) + _MARGIN
    scale = min(1.0, _MAX_WIDTH / width)  # a wide view starts fitted to the page; zoom brings it closer
    parts = [
        f'<svg id="view{index}" class="view" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width * scale:.0f}" height="{height * scale:.0f}">'
    ]
    merged: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for edge in view.edges:
        merged[(edge.dep, edge.ref, edge.kind)].append(edge.label)
    for (dep, ref, kind), labels in sorted(merged.items()):
        (x1, y1), (x2, y2) = view.position[dep], view.position[ref]
        title = e("; ".join(labels))
        if dep == ref:
            parts.append(
                f'<path class="{kind}" d="M{x1 - 10:.1f},{y1 - _NODE_HEIGHT / 2:.1f} '
                f'c-20,-40 40,-40 20,0" marker-end="url(#arrow-{kind})"><title>{title}</title></path>'
            )
            continue
        y1e = y1 + (_NODE_HEIGHT / 2 if y2 > y1 else -_NODE_HEIGHT / 2 if y2 < y1 else 0)
        y2e = y2 - (_NODE_HEIGHT / 2 if y2 > y1 else -_NODE_HEIGHT / 2 if y2 < y1 else 0)
        bend = 0.0 if y1 != y2 else -40.0  # a reference within one layer arcs over it
        parts.append(
            f'<path class="{kind}" d="M{x1:.1f},{y1e:.1f} Q{(x1 + x2) / 2:.1f},{(y1e + y2e) / 2 + bend:.1f} '
            f'{x2:.1f},{y2e:.1f}" marker-end="url(#arrow-{kind})"><title>{title}</title></path>'
        )
    for node, (x, y) in view.position.items():
        w = view.width[node]
        members = view.members[node]
        names = " ".join(members)
        parts.append(
            f'<g class="table" data-name="{e(names.lower())}"><title>{e(chr(10).join(members))}</title>'
            f'<rect x="{x - w / 2:.1f}" y="{y - _NODE_HEIGHT / 2:.1f}" width="{w:.1f}" '
            f'height="{_NODE_HEIGHT:.0f}" rx="6" class="{"group" if len(members) > 1 else "single"}"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}">{e(_label(node, view))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


_STYLE = """
body{font-family:sans-serif;margin:12px} h2,h3{margin:14px 0 4px} td,th{padding:2px 8px;text-align:left}
.section{display:inline-block;vertical-align:top;margin-right:18px}
.view{border:1px solid #ccc;cursor:grab;display:block} path{fill:none;stroke-width:1.4}
path.fk{stroke:#c0392b} path.ind{stroke:#1f5fa8;stroke-dasharray:5,3}
rect.single{fill:#fdd49e;stroke:#7f2704} rect.group{fill:#c7e9c0;stroke:#238b45}
text{font-size:12px;text-anchor:middle;pointer-events:none}
g.hit rect{stroke:#000;stroke-width:3} g.dim{opacity:.25} #search{font-size:15px;width:22em}
"""

_SCRIPT = """
const svgs=[...document.querySelectorAll('svg.view')];
for(const svg of svgs){
  let [x,y,w,h]=svg.getAttribute('viewBox').split(' ').map(Number), drag=null;
  const set=()=>svg.setAttribute('viewBox',`${x} ${y} ${w} ${h}`);
  svg.addEventListener('wheel',ev=>{ev.preventDefault();const r=svg.getBoundingClientRect();
    const px=x+(ev.clientX-r.left)/r.width*w, py=y+(ev.clientY-r.top)/r.height*h, f=ev.deltaY>0?1.2:1/1.2;
    x=px-(px-x)*f; y=py-(py-y)*f; w*=f; h*=f; set();});
  svg.addEventListener('pointerdown',ev=>{drag=[ev.clientX,ev.clientY];svg.setPointerCapture(ev.pointerId);});
  svg.addEventListener('pointermove',ev=>{if(!drag)return;const r=svg.getBoundingClientRect();
    x-=(ev.clientX-drag[0])/r.width*w; y-=(ev.clientY-drag[1])/r.height*h;
    drag=[ev.clientX,ev.clientY]; set();});
  svg.addEventListener('pointerup',()=>{drag=null;});
}
document.getElementById('search').addEventListener('input',ev=>{
  const q=ev.target.value.trim().toLowerCase(); let first=null, n=0;
  for(const g of document.querySelectorAll('g.table')){
    const hit=q!==''&&g.dataset.name.includes(q);
    g.classList.toggle('hit',hit); g.classList.toggle('dim',q!==''&&!hit);
    if(hit){n++; first=first||g;}
  }
  document.getElementById('found').textContent=q?`${n} found`:'';
  if(first)first.closest('svg').scrollIntoView({block:'center'});
});
"""


def render_page(overview: dict[str, dict], views: list[SchemaView], title: str) -> str:
    """The self-contained page of the module docstring."""
    e = html.escape
    links = defaultdict(list)
    for i, view in enumerate(views):
        links[view.schema].append(f'<a href="#view{i}">{i}</a>')
    rows = "".join(
        f"<tr><td>{e(schema or '(lake root)')}</td><td>{len(info['tables'])}</td><td>{info['fks']}</td>"
        f"<td>{len(info['overlap_groups'])}</td><td>{' '.join(links[schema])}</td></tr>"
        for schema, info in sorted(overview.items())
    )
    sections = []
    for i, view in enumerate(views):
        listed = "".join(
            f"<tr><td>{e(edge.dep)}</td><td>{e(edge.ref)}</td><td>{e(edge.label)}</td><td>{edge.kind}</td></tr>"
            for edge in view.edges
        )
        sections.append(
            f'<div class="section"><h3>{e(view.schema or "(lake root)")}: view {i}, '
            f"{sum(len(m) for m in view.members.values())} tables, "
            f"{sum(edge.kind == 'fk' for edge in view.edges)} foreign keys</h3>{_svg(view, i)}"
            f"<details><summary>edges</summary><table><tr><th>dependent</th><th>referenced</th><th>columns"
            f"</th><th>kind</th></tr>{listed}</table></details></div>"
        )
    legend = (
        "Red: accepted foreign key, from the dependent table to the referenced one (above to below); "
        "dashed blue: inclusion dependency; green: tables that are copies, samples or extracts of one "
        "another, drawn as one. Wheel: zoom; drag: pan; hover: names and columns."
    )
    arrows = "".join(
        f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{color}" stroke="none"/></marker>'
        for kind, color in (("fk", "#c0392b"), ("ind", "#1f5fa8"))
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{e(title)}</title><style>{_STYLE}</style>'
        f"</head><body><h1>{e(title)}</h1><p>{legend}</p>"
        '<p><input id="search" type="search" placeholder="find a table"> <span id="found"></span></p>'
        f'<svg width="0" height="0"><defs>{arrows}</defs></svg>'
        "<h2>Lake overview</h2><table><tr><th>schema</th><th>tables drawn</th><th>accepted FKs</th>"
        f"<th>overlap groups</th><th>views</th></tr>{rows}</table>{''.join(sections)}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_catalog_page(
    catalog: Location, path: Path, schema_of: Callable[[str], str], inds: bool = False
) -> tuple[dict[str, dict], list[SchemaView]]:
    """Read the catalog's accepted FKs, overlaps and (``inds``) INDs with delta-rs, write the page to
    ``path``, and return what it shows (``schema_of`` as ``schema_views``')."""

    def read(name: str) -> list[dict]:
        return (catalog / name).delta_dataset().to_table().to_pylist()

    fks = [row for row in read("fk_candidates") if row["accepted"]]
    overlaps = [(row["left_table"], row["right_table"]) for row in read("table_overlaps")]
    overview, views = schema_views(fks, overlaps, read("inclusion_dependencies") if inds else None, schema_of)
    title = f"Schemas of {catalog}: {len(fks)} accepted foreign keys, {len(overlaps)} overlapping table pairs"
    path.write_text(render_page(overview, views, title), encoding="utf-8")
    return overview, views
