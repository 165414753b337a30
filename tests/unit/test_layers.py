"""The layers of docs/architecture.md hold: imports run downward only, the papers' cores are free of Spark,
and nothing on a production path imports the references and baselines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "lib"
PACKAGES = {"profile", "sketches", "values", "agreesets", "joinsearch", "inds", "fks"}
# Lowest first; a module may import from its own layer and the ones below it.
LAYERS = [
    {"hashing", "arrays", "config", "logs", "crash_points", "storage", "ports"},
    {"spark"},
    {"catalog"},
    {"lake"},
    {"scan"},
    {"component", "quality"},
    PACKAGES,
    {"reference"},
    {"registry"},
    {"orchestration"},
    {"cli", "demo", "show", "export"},
]


def modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted((LIB / "lakemeta").rglob("*.py")):
        name = ".".join(path.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def imported(tree: ast.Module) -> set[str]:
    """The modules ``tree`` imports: ``from lakemeta.orchestration import steps`` counts as importing
    ``lakemeta.orchestration.steps`` too (a name that is not a module is no module of MODULES, and it
    lies in its package's layer)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            if node.module.split(".")[0] == "lakemeta":
                names.update(
                    f"{node.module}.{alias.name}" for alias in node.names if alias.name != "__version__"
                )
    return names


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return next(i for i, members in enumerate(LAYERS) if top in members) if top else len(LAYERS)


MODULES = modules()


def test_a_module_imported_from_the_package_counts_as_imported():
    tree = ast.parse("from lakemeta import show, __version__\nfrom lakemeta.orchestration import steps")
    assert imported(tree) == {
        "lakemeta",
        "lakemeta.show",
        "lakemeta.orchestration",
        "lakemeta.orchestration.steps",
    }


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "lakemeta"))
def test_imports_run_downward(module: str):
    upward = sorted(
        target
        for target in imported(MODULES[module])
        if target.startswith("lakemeta.") and layer(target) > layer(module)
    )
    assert upward == [], f"{module} (layer {layer(module)}) imports from above: {upward}"


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph`` (module -> the modules it imports): its strongly connected components of
    more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_import_circles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    """No module imports, directly or through others, a module that imports it: counting the imports
    inside functions too, which hide a circle from Python but not from a reader."""
    graph = {
        module: {target for target in imported(tree) if target in MODULES and target != module}
        for module, tree in MODULES.items()
    }
    assert import_circles(graph) == []


def is_core(module: str) -> bool:
    """A package's paper-core module: not its Spark adapters (state.py, discover.py, and the modules
    those read tables with), not its package file."""
    parts = module.split(".")
    return len(parts) == 3 and parts[1] in PACKAGES and parts[2] not in SPARK_ADAPTERS.get(parts[1], set())


SPARK_ADAPTERS = {
    package: {"state", "discover"} | extra
    for package, extra in {
        "profile": set(),
        "sketches": set(),
        "values": {"inclusion"},
        "agreesets": set(),
        "joinsearch": set(),
        "inds": {"columns"},
        "fks": {"keys", "in_executors"},
    }.items()
}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if is_core(m)))
def test_the_papers_cores_are_free_of_spark(module: str):
    spark = sorted(name for name in imported(MODULES[module]) if name.split(".")[0] in {"pyspark", "delta"})
    assert spark == [], f"{module} is a paper's core but imports {spark}"


def test_production_code_does_not_import_the_references():
    importers = sorted(
        module
        for module, tree in MODULES.items()
        if not module.startswith("lakemeta.reference")
        and any(name.startswith("lakemeta.reference") for name in imported(tree))
    )
    assert importers == []
