"""The lake model without a JVM: Delta tables written by another engine (delta-rs), found on local disk and
in the S3 server."""

from pathlib import Path

import pyarrow as pa
import pytest

from lakemeta.lake.ingest import IngestError, find_sources
from lakemeta.lake.tables import check_lake, discover_tables, latest_version, table_path
from lakemeta.storage import Location


def _table(path: Location, rows: int = 3) -> None:
    path.write_delta(pa.table({"a": list(range(rows))}))


def test_discover_tables_by_relative_path_skipping_hidden_folders(root: Location):
    _table(root / "tpch" / "orders")
    _table(root / "web" / "deep" / "planets")
    _table(root / "web" / "Städte und Länder")
    _table(root / "_quarantine" / "web" / "bad")
    _table(root / ".hidden" / "x")
    (root / "not_a_table" / "file.csv").write_text("a\n1\n")
    assert discover_tables(root) == ["tpch/orders", "web/Städte und Länder", "web/deep/planets"]


def test_latest_version_reads_the_log(root: Location):
    _table(root / "t")
    (root / "t").write_delta(pa.table({"a": [9]}), mode="append")
    assert latest_version(root / "t") == 1


def test_a_lake_that_is_not_there_or_holds_no_table_is_named(root: Location):
    with pytest.raises(FileNotFoundError, match=f"{root.uri}/lake does not exist"):
        check_lake(root / "lake", new_catalog=True)
    (root / "lake" / "notes.txt").write_text("no table here")
    with pytest.raises(FileNotFoundError, match=f"{root.uri}/lake holds no Delta table"):
        check_lake(root / "lake", new_catalog=True)
    check_lake(root / "lake", new_catalog=False)  # every table of a known lake may have been dropped


@pytest.mark.parametrize("name", ["../outside", "/etc", "a/../../b", "."])
def test_table_names_cannot_leave_the_lake(tmp_path: Path, name: str):
    with pytest.raises(ValueError, match="inside the lake"):
        table_path(Location.parse(tmp_path), name)


def test_table_name_with_spaces_and_unicode_stays_inside(tmp_path: Path):
    inside = Location(f"{tmp_path.resolve()}/web/Städte und Länder")
    assert table_path(Location.parse(tmp_path), "web/Städte und Länder") == inside


def test_sources_are_named_by_stem_or_folder_path(tmp_path: Path):
    (tmp_path / "orders.parquet").write_bytes(b"")
    folder = tmp_path / "wdc"
    (folder / "sub").mkdir(parents=True)
    (folder / "planets.csv").write_text("a\n")
    (folder / "sub" / "moons.CSV").write_text("a\n")
    (folder / "README.md").write_text("ignored")
    found = find_sources([tmp_path / "orders.parquet", folder], prefix="raw")
    assert [(s.table_name, s.file_format) for s in found] == [
        ("raw/orders", "parquet"),
        ("raw/wdc/planets", "csv"),
        ("raw/wdc/sub/moons", "csv"),
    ]


def test_sources_that_collide_or_are_not_data_are_refused(tmp_path: Path):
    (tmp_path / "a.csv").write_text("x\n")
    (tmp_path / "a.parquet").write_bytes(b"")
    (tmp_path / "notes.md").write_text("x")
    with pytest.raises(IngestError, match="same table: a"):
        find_sources([tmp_path / "a.csv", tmp_path / "a.parquet"])
    with pytest.raises(IngestError, match=r"notes\.md: not a CSV or Parquet file"):
        find_sources([tmp_path / "notes.md"])
    with pytest.raises(IngestError, match="no such file"):
        find_sources([tmp_path / "missing.csv"])
