"""Reading a table's columns at a version (``lake.snapshots``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from lakemeta.lake import snapshots
from lakemeta.storage import Location


def test_a_scope_opens_each_version_once_and_reads_what_an_unscoped_read_does(tmp_path: Path, monkeypatch):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1, 2, 3], "b": list("xyz")}))
    write_deltalake(path, pa.table({"a": [4], "b": ["w"]}), mode="append")
    opened = []
    open_table = Location.delta_table

    def counted(self: Location, version: int | None = None):
        opened.append(version)
        return open_table(self, version)

    monkeypatch.setattr(Location, "delta_table", counted)
    unscoped = [snapshots.read_columns(path, 1, ["b", "a"]) for _ in range(3)]
    assert opened == [1, 1, 1]
    opened.clear()
    scoped = [snapshots.read_columns(path, version, ["b", "a"], scope="s1") for version in (1, 1, 0, 1)]
    assert opened == [1, 0]  # each version once in the scope
    assert all(s[0].equals(u[0]) and s[1].equals(u[1]) for s, u in zip(scoped[:2], unscoped, strict=False))
    assert scoped[2][1].to_pylist() == [1, 2, 3] and sorted(scoped[0][1].to_pylist()) == [1, 2, 3, 4]
    snapshots.read_columns(path, 1, ["a"], scope="s2")  # another scope opens it again
    assert opened == [1, 0, 1]
