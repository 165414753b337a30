"""The lake model without a JVM: Delta tables written by another engine (delta-rs)."""

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.lake.ingest import IngestError, find_sources
from lakemeta.lake.tables import discover_tables, latest_version, table_path


def _table(path: Path, rows: int = 3) -> None:
    write_deltalake(str(path), pa.table({"a": list(range(rows))}))


def test_discover_tables_by_relative_path_skipping_hidden_folders(tmp_path: Path):
    _table(tmp_path / "tpch" / "orders")
    _table(tmp_path / "web" / "deep" / "planets")
    _table(tmp_path / "_quarantine" / "web" / "bad")
    _table(tmp_path / ".hidden" / "x")
    (tmp_path / "not_a_table").mkdir()
    (tmp_path / "not_a_table" / "file.csv").write_text("a\n1\n")
    assert discover_tables(tmp_path) == ["tpch/orders", "web/deep/planets"]


def test_latest_version_reads_the_log(tmp_path: Path):
    _table(tmp_path / "t")
    write_deltalake(str(tmp_path / "t"), pa.table({"a": [9]}), mode="append")
    assert latest_version(tmp_path / "t") == 1


@pytest.mark.parametrize("name", ["../outside", "/etc", "a/../../b", "."])
def test_table_names_cannot_leave_the_lake(tmp_path: Path, name: str):
    with pytest.raises(ValueError, match="inside the lake"):
        table_path(tmp_path, name)


def test_table_name_with_spaces_and_unicode_stays_inside(tmp_path: Path):
    assert table_path(tmp_path, "web/Städte und Länder") == tmp_path.resolve() / "web" / "Städte und Länder"


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
