from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemeta.demo.dense import (
    ID_NAMES,
    MAX_COLUMNS,
    MAX_ROWS,
    MIN_COLUMNS,
    change_dense_tables,
    dense_table,
    write_dense_lake,
)
from lakemeta.hashing import canonical
from lakemeta.lake.tables import discover_tables
from lakemeta.storage import Location

N_TABLES = 30
FORBIDDEN = set(" ,;{}()\n\t=")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("dense") / "lake"
    return root, write_dense_lake(root, N_TABLES, seed=5)


def read(root: Path, name: str) -> pa.Table:
    return DeltaTable(str(root / name)).to_pyarrow_table()


def value_set(column: pa.ChunkedArray) -> set[str]:
    return set(canonical(column.combine_chunks().drop_null()).to_pylist())


def test_a_seed_gives_the_same_lake_and_another_seed_another(lake, tmp_path: Path):
    root, names = lake
    again = write_dense_lake(tmp_path / "again", N_TABLES, seed=5)
    assert again == names
    assert all(read(tmp_path / "again", name).equals(read(root, name)) for name in names)
    other = [dense_table(i, seed=6) for i in range(N_TABLES)]
    assert [name for name, _ in other] != names
    # a smaller lake of the same seed is a prefix of a larger one
    assert [dense_table(i, seed=5)[0] for i in range(10)] == names[:10]


def test_tables_are_small_statistics_datasets_under_package_folders(lake):
    root, names = lake
    assert sorted(names) == discover_tables(Location.parse(root))
    assert len(set(names)) == N_TABLES
    assert all(name.startswith("stats/") and name.count("/") == 2 for name in names)
    assert len({name.split("/")[1] for name in names}) >= 5
    rows = []
    for name in names:
        table = read(root, name)
        rows.append(table.num_rows)
        assert 1 <= table.num_rows <= MAX_ROWS
        assert MIN_COLUMNS <= table.num_columns <= MAX_COLUMNS
        assert {str(t) for t in table.schema.types} <= {"int64", "double", "string"}
        assert not any(set(column) & FORBIDDEN for column in table.column_names)
        assert len({column.lower() for column in table.column_names}) == table.num_columns
    assert np.median(rows) >= 20 and np.mean([20 <= n <= 500 for n in rows]) >= 0.6


def test_row_ids_are_one_to_n_and_decimals_have_at_most_two_decimals(lake):
    root, names = lake
    with_ids = 0
    for name in names:
        table = read(root, name)
        first = table.column_names[0]
        if first in ID_NAMES:
            with_ids += 1
            assert table[first].to_pylist() == list(range(1, table.num_rows + 1))
        for column, kind in zip(table.columns, table.schema.types, strict=True):
            if pa.types.is_float64(kind):
                values = column.drop_null().to_numpy()
                assert np.allclose(values, np.round(values, 2))
    assert with_ids >= N_TABLES // 3


def test_values_overlap_across_tables(lake):
    root, names = lake
    columns = [
        (name, value_set(table[column]))
        for name in names
        for table in [read(root, name)]
        for column in table.column_names
    ]
    columns = [(name, values) for name, values in columns if values]
    # nearly every table has a column included in a column of another table
    included = {
        name
        for name, values in columns
        if any(values <= others for other, others in columns if other != name)
    }
    assert len(included) >= 0.8 * N_TABLES
    # and a large share of all column pairs of different tables share a value
    pairs = [(a, b) for (ta, a), (tb, b) in combinations(columns, 2) if ta != tb]
    assert np.mean([bool(a & b) for a, b in pairs]) >= 0.2


def test_change_dense_tables_gives_exactly_the_changed_tables_a_new_version(tmp_path: Path):
    root = tmp_path / "lake"
    names = write_dense_lake(root, N_TABLES, seed=9)
    before = {name: (DeltaTable(str(root / name)).version(), read(root, name)) for name in names}
    changed = change_dense_tables(root, 6, seed=1)
    assert len(changed) == 6 and set(changed) <= set(names)
    grown = shrunk = 0
    for name in names:
        version, rows = before[name]
        after = read(root, name)
        if name not in changed:
            assert DeltaTable(str(root / name)).version() == version and after.equals(rows)
            continue
        assert DeltaTable(str(root / name)).version() == version + 1
        assert after.schema == rows.schema and after.num_rows >= 1
        grown += after.num_rows > rows.num_rows
        shrunk += after.num_rows < rows.num_rows
        first = rows.column_names[0]
        if first in ID_NAMES:  # ids continue after an append, are a subset after a delete
            ids = sorted(after[first].to_pylist())  # files in any order
            assert len(set(ids)) == len(ids) and set(ids) <= set(range(1, max(ids) + 1))
            if after.num_rows > rows.num_rows:
                assert ids == list(range(1, after.num_rows + 1))
        for column in rows.column_names:  # appended values are drawn from the table's own
            if column != first or first not in ID_NAMES:
                assert value_set(after[column]) <= value_set(rows[column])
    assert grown == 3 and shrunk == 3
