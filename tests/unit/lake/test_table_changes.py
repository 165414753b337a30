"""A batch read in an executor (delta-rs): its signed rows net out to the difference of the two snapshots,
for every source, in slices of at most the budget's rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import lakemeta.lake.table_changes as table_changes
from lakemeta.lake.table_changes import SIGN, BatchRead, TableChange


def rows(ids: list[int | None], names: list[str | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})


def net(change: TableChange) -> Counter:
    counted: Counter = Counter()
    for part in change.signed_slices():
        assert part.num_rows <= change.slice_rows
        for row in part.to_pylist():
            counted[(row["id"], row["name"])] += row[SIGN]
    return +counted - -counted  # zeros dropped, negative kept


def multiset(table: pa.Table) -> Counter:
    return Counter((row["id"], row["name"]) for row in table.to_pylist())


@pytest.mark.parametrize("feed", [True, False])
def test_incremental_batches_net_out_to_the_snapshot_difference(tmp_path: Path, feed: bool) -> None:
    path = str(tmp_path / "t")
    configuration = {"delta.enableChangeDataFeed": "true"} if feed else None
    write_deltalake(path, rows([1, 1, 2, None, 3], ["a", "a", None, "b", "c"]), configuration=configuration)
    table = DeltaTable(path)
    table.delete("id = 2")
    table.update(predicate="id = 1", updates={"name": "'z'"})
    write_deltalake(path, rows([1, 4, 4], ["a", "d", "d"]), mode="append")
    batch = BatchRead("t", path, "incremental", "cdf" if feed else "diff", 0, 3)
    change = TableChange(batch, max_rows=2)
    before, after = multiset(DeltaTable(path, version=0).to_pyarrow_table()), multiset(change.after)
    expected = Counter(after)
    expected.subtract(before)
    assert net(change) == +expected - -expected
    assert change.before_rows == 5 and change.snapshot_rows == 7
    assert [f.name for f in change.schema.fields] == ["id", "name"]


def test_a_full_batch_is_the_snapshot_with_sign_plus_one(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, rows([1, 2, 2], ["a", None, None]))
    write_deltalake(path, rows([3], ["c"]), mode="append")
    change = TableChange(BatchRead("t", path, "full", "snapshot", None, 1), max_rows=3)
    assert change.replaces_state and change.before is None and change.before_rows is None
    assert net(change) == Counter({(1, "a"): 1, (2, None): 2, (3, "c"): 1})
    assert [part.num_rows for part in change.signed_slices()] == [3, 1]


def test_a_wide_table_comes_in_slices_of_bounded_cells(tmp_path: Path, monkeypatch) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, rows(list(range(9)), list("abcdefghi")))
    monkeypatch.setattr(table_changes, "_SLICE_CELLS", 6)  # two columns: three rows a slice
    change = TableChange(BatchRead("t", path, "full", "snapshot", None, 0), max_rows=1000)
    assert [part.num_rows for part in change.signed_slices()] == [3, 3, 3]
    assert net(change) == multiset(change.after)
