"""The column profile's merge on the driver (``profile.state.updated_counts``) against the shared MERGE's
rules written out per row: replaced tables take the delta's rows, other tables add counts per column."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from lakemeta.profile.state import SCHEMA, updated_counts

COLUMNS = SCHEMA.fieldNames()


def profile_rows(rows: list[tuple]) -> pa.Table:
    return pa.table(
        dict(zip(COLUMNS, map(list, zip(*rows, strict=True)), strict=True))
        if rows
        else {c: [] for c in COLUMNS},
        schema=to_arrow_schema(SCHEMA),
    )


def by_rules(stored: list[tuple], delta: list[tuple], replaced: set[str]) -> list[tuple]:
    merged = {(t, c): row for t, c, *row in stored if t not in replaced}
    for t, c, ordinal, kind, n_rows, n_nulls in delta:
        if (t, c) in merged and t not in replaced:
            _, _, old_rows, old_nulls = merged[(t, c)]
            merged[(t, c)] = [ordinal, kind, old_rows + n_rows, old_nulls + n_nulls]
        else:
            merged[(t, c)] = [ordinal, kind, n_rows, n_nulls]
    return sorted(((t, c, *row) for (t, c), row in merged.items()), key=lambda r: (r[0], r[2]))


@pytest.mark.parametrize("seed", range(20))
def test_updated_counts_follow_the_merge_of_counts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tables = ["a", "b 2", "c'd", "e"]
    stored, delta = [], []
    for table in tables:
        width = int(rng.integers(0, 4))
        n_rows = int(rng.integers(0, 9))
        stored += [(table, f"c{i}", i, "bigint", n_rows, int(rng.integers(0, 3))) for i in range(width)]
        if rng.random() < 0.7:  # in the batch; its columns may differ (a replaced table's new schema)
            width = int(rng.integers(0, 5))
            change = int(rng.integers(-2, 5))
            kind = str(rng.choice(["bigint", "string"]))
            delta += [(table, f"c{i}", i, kind, change, int(rng.integers(-1, 2))) for i in range(width)]
    replaced = {t for t in tables if rng.random() < 0.4}
    merged = updated_counts(profile_rows(stored), profile_rows(delta), sorted(replaced))
    assert [tuple(row.values()) for row in merged.to_pylist()] == by_rules(stored, delta, replaced)


def test_a_dropped_table_loses_its_rows_and_others_keep_theirs() -> None:
    stored = [("gone", "x", 0, "bigint", 4, 1), ("kept", "y", 0, "string", 2, 0)]
    merged = updated_counts(profile_rows(stored), profile_rows([]), ["gone"])
    assert merged.to_pylist() == [dict(zip(COLUMNS, ("kept", "y", 0, "string", 2, 0), strict=True))]
