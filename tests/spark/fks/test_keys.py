"""FK key candidates: those checked exactly in tables without agree-set state equal each table's smallest
minimal unique column combinations with FK candidates found by brute force, and equal those the agree-set
state gives."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import AgreeSetConfig, Config
from lakemeta.fks.keys import Key, find_keys
from lakemeta.orchestration.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark


def random_table(rng: np.random.Generator) -> pa.Table:
    """Rows of a shuffled grid (a, b) beside columns of small domains, one with nulls, and a copy of a."""
    width, height = int(rng.integers(3, 7)), int(rng.integers(3, 7))
    grid = rng.permutation([(a, b) for a in range(width) for b in range(height)])
    n = len(grid)
    return pa.table(
        {
            "a": grid[:, 0],
            "b": [f"b{v}" for v in grid[:, 1]],
            "c": rng.integers(0, 3, n),
            "d": rng.integers(0, n, n) * 1.5,
            "e": [None if rng.random() < 0.3 else int(v) for v in rng.integers(0, n, n)],
            "f": grid[:, 0],
        }
    )


def referenced(key: Key) -> bool:
    """Other tables would reference every column but ``id``."""
    return "id" not in key.columns


def minimal_keys(name: str, table: pa.Table, max_columns: int) -> set[Key]:
    """Brute force: of the minimal combinations of null-free columns whose tuples are all distinct, the
    smallest of those with candidates."""
    columns = [c for c in table.column_names if table[c].null_count == 0]
    values = {c: table[c].to_pylist() for c in columns}
    unique = [
        combination
        for size in range(1, max_columns + 1)
        for combination in itertools.combinations(columns, size)
        if len(set(zip(*(values[c] for c in combination), strict=True))) == table.num_rows
    ]
    minimal = [c for c in unique if not any(set(smaller) < set(c) for smaller in unique)]
    wanted = [c for c in minimal if referenced(Key(name, c))]
    return {Key(name, c) for c in wanted if len(c) == min(map(len, wanted))}  # the smallest


@pytest.mark.parametrize("max_rows, max_task_rows", [(0, 1_000_000), (0, 5)])
def test_checked_keys_equal_brute_force_and_the_agree_set_keys(
    spark, tmp_path: Path, max_rows: int, max_task_rows: int
) -> None:
    # each table is written in three commits: with 5 rows a task, the checks read it in groups of files
    rng = np.random.default_rng(11)
    lake = tmp_path / "lake"
    tables = {f"t{i}": random_table(rng) for i in range(4)}
    # Unique columns: "g", which others reference, makes the table's multi-column keys no FK targets;
    # "id", which none references, does not.
    with_g = random_table(rng)
    tables["t_g"] = with_g.append_column("g", pa.array(rng.permutation(with_g.num_rows)))
    with_id = random_table(rng)
    tables["t_id"] = with_id.append_column("id", pa.array(rng.permutation(with_id.num_rows)))
    for name, table in tables.items():
        for part in np.array_split(np.arange(table.num_rows), 3):
            write_deltalake(str(lake / name), table.slice(part[0], len(part)), mode="append")
    config = Config(lake=lake, catalog=tmp_path / "catalog", agree_sets=AgreeSetConfig(max_rows=max_rows))
    pipeline = Pipeline(spark, config)
    process(pipeline, "column_profile", "hll_counters", "column_values", "agree_sets")
    found, checks = find_keys(
        pipeline.catalog, lake, config.fks, config.sketches.precision, referenced, max_task_rows
    )
    expected = set().union(
        *(minimal_keys(name, table, config.fks.max_key_columns) for name, table in tables.items())
    )
    assert Key("t_g", ("g",)) in expected
    assert not any(key.table == "t_g" and len(key.columns) > 1 for key in expected)
    assert any(key.table == "t_id" and len(key.columns) > 1 for key in expected)
    assert set(found) == expected
    # The same checks asked again are answered from the kept ones: no table is read (there is none here).
    precision = config.sketches.precision
    again, _ = find_keys(
        pipeline.catalog, tmp_path / "no lake", config.fks, precision, referenced, max_task_rows, checks
    )
    assert len(checks) and again == found
