"""The storage layer (lakemeta.storage): locations parsed as users give them, and every object operation
the library uses, on local disk and in the S3 server (the ``root`` fixture runs each test on both)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from lakemeta.storage import Location, StorageError


def test_a_location_is_parsed_as_users_give_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Location.parse("lake").uri == str(tmp_path / "lake")
    assert Location.parse(f"file://{tmp_path}/lake/").uri == str(tmp_path / "lake")
    assert Location.parse(tmp_path / "lake") == Location.parse("lake")
    assert Location.parse("s3a://bucket/lake/").uri == "s3://bucket/lake"
    assert Location.parse("S3://bucket").uri == "s3://bucket"
    with pytest.raises(ValueError, match=r"'hdfs://n/lake'.*local paths, file://, s3://"):
        Location.parse("hdfs://n/lake")
    with pytest.raises(ValueError, match="names no bucket"):
        Location.parse("s3:///")


def test_paths_below_a_location() -> None:
    lake = Location.parse("s3://bucket/lake")
    table = lake / "tpch/" / "/orders"
    assert table.uri == "s3://bucket/lake/tpch/orders"
    assert (table.name, table.parent.parent) == ("orders", lake)
    assert lake.contains(table) and not table.contains(lake)
    assert not lake.contains(Location.parse("s3://bucket/lake2/x"))
    assert lake.relative(table) == "tpch/orders"
    assert Location.parse("s3://bucket").parent == Location.parse("s3://bucket")
    with pytest.raises(ValueError, match="not inside"):
        table.relative(lake)
    with pytest.raises(ValueError, match="not a local folder"):
        lake.local_path()


def test_files_are_written_listed_and_removed(root: Location) -> None:
    assert not root.exists() and root.children() == [] and root.files() == set()
    (root / "a/b/one.json").write_text("1")
    (root / "a/two.bin").write_bytes(b"\x00\x02")
    (root / "top.txt").write_text("top")
    assert root.exists() and (root / "a").exists() and (root / "top.txt").exists()
    assert not (root / "a/b/none").exists()
    assert root.children() == [("a", True), ("top.txt", False)]
    assert root.files() == {"a/b/one.json", "a/two.bin", "top.txt"}
    assert (root / "a/b/one.json").read_text() == "1"
    assert (root / "a/two.bin").read_bytes() == b"\x00\x02"
    (root / "a").delete(["two.bin", "never-written"])  # a name already gone is not an error
    assert root.files() == {"a/b/one.json", "top.txt"}
    (root / "a").remove_tree()
    assert root.files() == {"top.txt"}
    (root / "nothing-here").remove_tree()


def test_a_missing_file_is_named(root: Location) -> None:
    missing = root / "absent.json"
    with pytest.raises(FileNotFoundError, match=f"{missing.uri}: not found"):
        missing.read_text()


def test_create_text_writes_only_the_first_time(root: Location) -> None:
    record = root / "leases/x/0001.json"
    assert record.create_text("first")
    assert not record.create_text("second")
    assert record.read_text() == "first"


def test_copy_tree_copies_every_file_byte_for_byte(root: Location, tmp_path: Path) -> None:
    source = Location.parse(tmp_path / "source")
    files = {"t/_delta_log/00000000000000000000.json": b"{}\n", "t/part-0.parquet": bytes(range(256))}
    for name, data in files.items():
        (source / name).write_bytes(data)
    source.copy_tree(root / "copy")
    assert (root / "copy").files() == set(files)
    assert all((root / "copy" / name).read_bytes() == data for name, data in files.items())


def test_delta_tables_are_read_by_pyarrows_own_file_system(root: Location) -> None:
    # delta-rs's default file system (Python called from pyarrow's threads) aborts a process at exit now
    # and then after reading an object store; Location.delta_dataset gives pyarrow its own client.
    (root / "t").write_delta(pa.table({"id": [1, 2, 3], "part": ["a", "b", "b"]}), partition_by=["part"])
    (root / "t").write_delta(pa.table({"id": [4], "part": ["a"]}), mode="append", partition_by=["part"])
    table = (root / "t").delta_table(version=0)
    dataset = (root / "t").delta_dataset(table, file_pruning_predicate=[("part", "in", ["a"])])
    assert isinstance(dataset.filesystem, pafs.SubTreeFileSystem)
    assert type(dataset.filesystem.base_fs) is type(root.filesystem)  # not a PyFileSystem
    assert dataset.to_table().to_pylist() == [{"id": 1, "part": "a"}]  # version 0, files of part a only


def test_delta_tables_are_found_below_a_lake(root: Location) -> None:
    rows = pa.table({"id": [1, 2]})
    for name in ("tpch/orders", "web/a", "web/nested/b", "_quarantine/bad", ".spark/x"):
        (root / name).write_delta(rows)
    (root / "web/notes.txt").write_text("not a table")
    assert [root.relative(t) for t in root.walk_tables()] == ["tpch/orders", "web/a", "web/nested/b"]
    assert (root / "web/a").is_delta_table() and not (root / "web").is_delta_table()
    assert (root / "web/a").delta_dataset().to_table() == rows
    (root / "empty").create_delta(rows.schema)
    (root / "empty").create_delta(pa.schema([("other", pa.string())]))  # one there: left as it is
    assert (root / "empty").delta_table().schema().to_arrow().names == ["id"]


def test_a_refused_request_names_the_location_not_the_secret(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = "wrong-secret-never-shown"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    location = Location.parse(s3.prefix("refused")) / "file.txt"
    with pytest.raises(StorageError) as raised:
        location.write_text("x")
    assert str(raised.value).startswith(f"{location.uri}: ") and wrong not in str(raised.value)


def test_directory_markers_are_not_files(s3) -> None:
    """Hadoop's S3A marks a folder it creates with an empty ``folder/`` object, which listings show as an
    empty ``folder``; it is no file (reading it fails), an empty file is one."""
    location = Location.parse(s3.prefix("markers"))
    (location / "table/part-0.parquet").write_bytes(b"PAR1")
    (location / "empty.txt").write_bytes(b"")
    location.filesystem.create_dir(f"{location.fs_path}/_warehouse/lakemeta.db")  # puts the marker
    assert location.files() == {"table/part-0.parquet", "empty.txt"}
