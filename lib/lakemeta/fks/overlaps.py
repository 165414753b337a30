"""Tables that are copies, samples, versions or extracts of one another: the catalog's ``table_overlaps``.

In a lake one entity list is kept many times (a table and last month's copy, a sample, an extract of some
columns). Their key columns are included in one another, and Zhang's search would propose each such
inclusion as a foreign key (``web/planets_0001.planet -> web/planets_0005.planet``). What tells them
apart from a reference is that the *other* columns are shared too: a fact table includes its dimension's
key, not its dimension's name, size and colour.

So tables A and B overlap when

* a key of A is included in a key of B (an FK candidate of ``discover``), and one-to-one at least
  ``fks.overlap_share`` of the columns of A are included in distinct columns of B, at least two of them
  and one holding strings. Included means an inclusion estimate of at least θ in
  ``inclusion_estimates``: Many's exact INDs would wait for the validation of every pair of the lake,
  and where |A| is small, as in copies of one list, BML with the exact marginal is within 0.001 of exact.
  The containment of A in B is the size of a maximum matching of A's columns to B's along the
  inclusions, over A's columns (a matching, so that B's one id column holding every small integer does
  not count for each of A's). Columns of numbers alone do not make an overlap: a table of ids fits
  inside any table with larger id columns, and only its rows, which inclusions do not see, would tell a
  copy; or
* each has a key of other values than integers included in the other's (a candidate both ways,
  ``discover``): two copies of one list of names or codes (two tables numbered 1..N are not copies); or
* both have one shape (as many columns, of the same types in the same order) and a column of A is
  included in the key of B at the same place, a key of other values than integers: two samples or
  versions of one table (the demo's ``languages_0055.language`` inside ``languages_0047.language``),
  where a reference would join two tables of different shapes.

A pair is written once, its tables in name order, with the matched columns and the containment each way;
``choice`` accepts no foreign key between the two tables of an overlap.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching

from lakemeta.config import FkConfig
from lakemeta.fks.signals import SAMPLE_COVERAGE, ColumnTypes, both_ways, counts_from_first_values, filled

SCHEMA = pa.schema(
    [
        ("left_table", pa.string()),
        ("right_table", pa.string()),
        ("columns", pa.list_(pa.string())),
        ("left_in_right", pa.float64()),
        ("right_in_left", pa.float64()),
        ("mutual_keys", pa.bool_()),
        ("same_shape", pa.bool_()),
    ]
)


INCLUSIONS_NEEDED = f"(fk_is_key AND coverage >= {SAMPLE_COVERAGE!r}) OR NOT coalesce(pk_is_integer, false)"
"""The candidates (SQL over ``SCORED``) whose table pairs ``find_overlaps`` may match columns for: a key
included in a key covering a share of it (``key_inclusions``), or a key of other values than integers
(``mutual_keys``, ``same_shape``). The inclusions of the other pairs decide nothing, so the executors read
only these pairs' (``fks.in_executors``)."""


def joined_groups(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each table of the pairs and its group's first table, the groups being the connected components of
    the pairs (union-find): overlap groups (``schema_view``), schema graphs (``choice``)."""
    parent: dict[str, str] = {}

    def root(table: str) -> str:
        parent.setdefault(table, table)
        while parent[table] != table:
            parent[table] = parent[parent[table]]
            table = parent[table]
        return table

    for left, right in pairs:
        a, b = root(left), root(right)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {table: root(table) for table in list(parent)}


def matched_columns(inclusions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A maximum one-to-one matching of dependent to referenced columns along the given inclusions."""
    left = sorted({d for d, _ in inclusions})
    right = sorted({r for _, r in inclusions})
    if not left:
        return []
    if len(left) == len(right) == len(inclusions):  # one-to-one already: its own maximum matching
        return sorted(inclusions)
    at_left, at_right = {c: i for i, c in enumerate(left)}, {c: i for i, c in enumerate(right)}
    rows = np.array([at_left[d] for d, _ in inclusions])
    cols = np.array([at_right[r] for _, r in inclusions])
    graph = csr_array((np.ones(len(rows), np.int8), (rows, cols)), shape=(len(left), len(right)))
    matched = maximum_bipartite_matching(graph, perm_type="column")
    return [(left[i], right[j]) for i, j in enumerate(matched) if j >= 0]


def key_inclusions(candidates: pa.Table, prefix_share: float) -> set[tuple[str, str]]:
    """The table pairs (A, B) with a key of A included in a key of B and covering a share of it (a copy,
    a sample, a version; a dozen stores are no sample of 73,049 dates): candidates whose dependent is a
    key, unless it only counts from the key's first values (three rows numbered 1..3 fit any id range)."""
    found = candidates.filter(
        filled(candidates, "fk_is_key", False)
        & _between_tables(candidates)
        & (filled(candidates, "coverage", 0.0) >= SAMPLE_COVERAGE)
        & ~counts_from_first_values(candidates, prefix_share)
    )
    return set(zip(found["fk_table"].to_pylist(), found["pk_table"].to_pylist(), strict=True))


def _between_tables(candidates: pa.Table) -> np.ndarray:
    return pc.not_equal(candidates["fk_table"], candidates["pk_table"]).to_numpy(zero_copy_only=False)


def same_shape(candidates: pa.Table, types: ColumnTypes) -> set[frozenset[str]]:
    """The table pairs of one shape with a candidate from a column of one to the key at the same place in
    the other, a key of other values than integers (two tables of ids 1..N are not versions)."""
    single = pc.list_value_length(candidates["fk_columns"]).to_numpy(zero_copy_only=False) == 1
    found = candidates.filter(
        _between_tables(candidates) & single & ~filled(candidates, "pk_is_integer", False)
    )
    return {
        frozenset((r["fk_table"], r["pk_table"]))
        for r in found.select(["fk_table", "fk_columns", "pk_table", "pk_columns"]).to_pylist()
        if types.shape.get(r["fk_table"]) == types.shape.get(r["pk_table"])
        and types.ordinal.get((r["fk_table"], r["fk_columns"][0]))
        == types.ordinal.get((r["pk_table"], r["pk_columns"][0]))
    }


def mutual_keys(candidates: pa.Table) -> set[frozenset[str]]:
    """The table pairs each of which has a key included in a key of the other, keys of other values than
    integers (two tables of N rows numbered 1..N are not copies of one another)."""
    # a key's reverse candidate is among these too, and whether a key is of integers is the key's own
    found = candidates.filter(both_ways(candidates) & _between_tables(candidates)).to_pylist()
    integer = {(r["pk_table"], tuple(r["pk_columns"])) for r in found if r["pk_is_integer"]}
    return {
        frozenset((r["fk_table"], r["pk_table"]))
        for r in found
        if (r["fk_table"], tuple(r["fk_columns"])) not in integer
        and (r["pk_table"], tuple(r["pk_columns"])) not in integer
    }


def find_overlaps(inclusions: pa.Table, types: ColumnTypes, scored: pa.Table, config: FkConfig) -> pa.Table:
    """The overlapping table pairs (module docstring): ``inclusions`` the column pairs (dep_table,
    dep_column, ref_table, ref_column) taken as included, ``types`` the lake's columns, ``scored`` the FK
    candidates with their signals (``discover``)."""
    column_counts = {table: len(columns) for table, columns in types.columns.items()}
    key_inclusion = key_inclusions(scored, config.prefix_share)
    mutual, shaped_pairs = mutual_keys(scored), same_shape(scored, types)
    share = config.overlap_share
    by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for row in inclusions.select(["dep_table", "dep_column", "ref_table", "ref_column"]).to_pylist():
        if row["dep_table"] != row["ref_table"]:
            by_pair.setdefault((row["dep_table"], row["ref_table"]), []).append(
                (row["dep_column"], row["ref_column"])
            )

    # Matched only where a pair's outcome needs it (a key inclusion, or a row written): the matchings of
    # the thousands of other pairs a lake of many small tables has cost time and decide nothing
    # (docs/performance.md, "Measurements behind the code").
    @functools.cache
    def matched(pair: tuple[str, str]) -> list[tuple[str, str]]:
        return matched_columns(by_pair.get(pair, []))

    def containment(a: str, b: str) -> float:
        return len(matched((a, b))) / column_counts[a] if column_counts.get(a) else 0.0

    pairs = {tuple(sorted(pair)) for pair in by_pair} | {tuple(sorted(p)) for p in mutual | shaped_pairs}
    rows = []
    for left, right in sorted(pairs):
        both = frozenset((left, right)) in mutual
        shaped = frozenset((left, right)) in shaped_pairs
        contained = any(
            (a, b) in key_inclusion
            and len(matched((a, b))) >= 2
            and containment(a, b) >= share
            and any(types.family.get((a, column)) == "string" for column, _ in matched((a, b)))
            for a, b in ((left, right), (right, left))
        )
        if not (both or shaped or contained):
            continue
        columns = matched((left, right)) or [(l_, r_) for r_, l_ in matched((right, left))]
        rows.append(
            {
                "left_table": left,
                "right_table": right,
                "columns": [f"{a}={b}" for a, b in sorted(columns)],
                "left_in_right": containment(left, right),
                "right_in_left": containment(right, left),
                "mutual_keys": both,
                "same_shape": shaped,
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)
