"""Replacing a result with ``changed_tables`` (``lakemeta.catalog.relationships.replace_relationships``):
comparing only the changed tables' relationships writes the same result, first runs and recorded changes
as comparing every one, whether the others come in their stored order (compared by position) or not (then
compared by key); the relationships touching the changed tables (``touching``) are those with one on
either side. On delta-rs, no Spark."""

from __future__ import annotations

import tempfile

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.relationships import CHANGES, replace_relationships, touching
from lakemeta.storage import Location

RESULTS = "inclusion_dependencies"
TABLES = [f"t{i}" for i in range(5)]
COLUMNS = ["a", "b"]
IND = tuple[str, str, str, str]
ALL_INDS = [
    (dep_table, dep, ref_table, ref)
    for dep_table in TABLES
    for dep in COLUMNS
    for ref_table in TABLES
    for ref in COLUMNS
    if (dep_table, dep) != (ref_table, ref)
]


def _rows(inds: list[IND], first_runs: list[int] | None = None) -> pa.Table:
    """Rows of ``inclusion_dependencies`` for ``inds`` in their order, their numbers made up."""
    columns = ["dep_table", "dep_column", "ref_table", "ref_column"]
    rows = {name: pa.array([ind[i] for ind in inds], pa.string()) for i, name in enumerate(columns)}
    rows |= {
        "dep_distinct": pa.array([len(ind[0]) for ind in inds], pa.int64()),
        "ref_distinct": pa.array([len(ind[2]) for ind in inds], pa.int64()),
        "coverage": pa.array([1.0] * len(inds), pa.float64()),
    }
    if first_runs is not None:
        rows["first_run"] = pa.array(first_runs, pa.int64())
    return pa.table(rows)


def _replaced(stored: pa.Table, rows: pa.Table, changed: set[str] | None) -> tuple[list, list]:
    """The result and the recorded changes after replacing ``stored`` with ``rows`` in a new catalog."""
    with tempfile.TemporaryDirectory() as folder:
        catalog = Catalog(None, Location.parse(folder))
        ensure_tables(catalog)
        catalog.replace_small(RESULTS, stored)
        replace_relationships(catalog, RESULTS, rows, "s", 7, changed_tables=changed)
        result = catalog.read_small(RESULTS).to_pylist()
        recorded = catalog.read_small(CHANGES).drop_columns(["previous_discovery_at"]).to_pylist()
        return result, sorted(recorded, key=lambda row: (row["change"], row["dep_table"], row["dep_columns"]))


@settings(max_examples=40, deadline=None)
@given(
    st.sets(st.sampled_from(ALL_INDS)),
    st.sets(st.sampled_from(TABLES), min_size=1, max_size=2),
    st.sets(st.sampled_from(ALL_INDS)),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_comparing_the_changed_tables_alone_writes_what_comparing_all_does(
    before: set[IND], changed: set[str], found: set[IND], stored_shuffled: bool, random
) -> None:
    def touched(ind: IND) -> bool:
        return ind[0] in changed or ind[2] in changed

    stored_inds = sorted(before)
    if stored_shuffled:  # stored in another order than the new result's: compared by key
        random.shuffle(stored_inds)
    stored = _rows(stored_inds, [random.randint(1, 6) for _ in stored_inds])
    # the step's new result: the stored INDs of unchanged tables as they were, those of changed ones anew
    after = sorted({ind for ind in before if not touched(ind)} | {ind for ind in found if touched(ind)})
    rows = _rows(after)
    narrowed = _replaced(stored, rows, changed)
    assert narrowed == _replaced(stored, rows, None)
    result, recorded = narrowed
    first_run = dict(zip(stored_inds, stored["first_run"].to_pylist(), strict=True))
    assert [row["first_run"] for row in result] == [first_run.get(ind, 7) for ind in after]
    assert {(row["change"], row["dep_table"], row["ref_table"]) for row in recorded} == {
        *(("appeared", ind[0], ind[2]) for ind in set(after) - before),
        *(("disappeared", ind[0], ind[2]) for ind in before - set(after)),
    }


@given(st.lists(st.sampled_from(ALL_INDS), max_size=20), st.sets(st.sampled_from(TABLES), max_size=3))
def test_a_relationship_touches_the_tables_on_either_of_its_sides(inds: list[IND], tables: set[str]) -> None:
    assert touching(_rows(inds), RESULTS, tables).tolist() == [
        ind[0] in tables or ind[2] in tables for ind in inds
    ]
