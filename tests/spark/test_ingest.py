"""`lakemeta ingest`: CSV dialects and line endings, Parquet, quarantine of malformed records."""

from __future__ import annotations

from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakemeta.config import IngestConfig
from lakemeta.lake.ingest import IngestError, find_sources, ingest

pytestmark = pytest.mark.spark


def _rows(spark, lake: Path, name: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(lake / name)).collect())


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_csv_line_endings(spark, tmp_path: Path, newline: bytes):
    source = tmp_path / "planets.csv"
    source.write_bytes(newline.join([b"planet,moons", b"Earth,1", b'"Mars, red",2', b"Jupiter,95", b""]))
    ingest(spark, tmp_path / "lake", find_sources([source]), IngestConfig())
    assert _rows(spark, tmp_path / "lake", "planets") == [("Earth", 1), ("Jupiter", 95), ("Mars, red", 2)]


def test_csv_separator_no_header_quoting_and_encoding(spark, tmp_path: Path):
    source = tmp_path / "cities.csv"
    source.write_bytes('Köln;"a ""quoted"" name"\nMünchen;plain\n'.encode("latin-1"))
    options = IngestConfig(separator=";", header=False, encoding="ISO-8859-1")
    ingest(spark, tmp_path / "lake", find_sources([source]), options)
    assert _rows(spark, tmp_path / "lake", "cities") == [("Köln", 'a "quoted" name'), ("München", "plain")]
    assert spark.read.format("delta").load(str(tmp_path / "lake" / "cities")).columns == ["_c0", "_c1"]


def test_tables_get_change_feed_and_row_tracking(spark, tmp_path: Path):
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "name": ["a", None, "c"]}), source)
    results = ingest(spark, tmp_path / "lake", find_sources([source]), IngestConfig())
    assert [(r.table_name, r.rows, r.quarantined) for r in results] == [("t", 3, 0)]
    configuration = deltalake.DeltaTable(str(tmp_path / "lake" / "t")).metadata().configuration
    assert configuration["delta.enableChangeDataFeed"] == "true"
    assert configuration["delta.enableRowTracking"] == "true"
    assert _rows(spark, tmp_path / "lake", "t") == [(1, "a"), (2, None), (3, "c")]


def test_malformed_records_go_to_quarantine_with_reason(spark, tmp_path: Path):
    source = tmp_path / "ragged.csv"
    source.write_text("id,name\n1,a\n2,b,EXTRA\n3\n4,d\n")
    lake = tmp_path / "lake"
    results = ingest(spark, lake, find_sources([source]), IngestConfig())
    assert [(r.rows, r.quarantined) for r in results] == [(2, 2)]
    assert _rows(spark, lake, "ragged") == [(1, "a"), (4, "d")]
    bad = spark.read.format("delta").load(str(lake / "_quarantine" / "ragged")).collect()
    assert sorted(r.raw_record for r in bad) == ["2,b,EXTRA", "3"]
    assert all(r.source_file == str(source) and "2 columns" in r.reason for r in bad)


def test_existing_table_is_an_error_naming_the_file_and_nothing_changes(spark, tmp_path: Path):
    source = tmp_path / "t.csv"
    source.write_text("a\n1\n")
    lake = tmp_path / "lake"
    ingest(spark, lake, find_sources([source]), IngestConfig())
    source.write_text("a\n2\n")
    with pytest.raises(IngestError, match=r"t\.csv: could not write table t"):
        ingest(spark, lake, find_sources([source]), IngestConfig())
    assert _rows(spark, lake, "t") == [(1,)]
    ingest(spark, lake, find_sources([source]), IngestConfig(), mode="overwrite")
    assert _rows(spark, lake, "t") == [(2,)]


def test_invalid_column_names_are_made_valid(spark, tmp_path: Path):
    source = tmp_path / "names.csv"
    source.write_text("first name,a;b,x=y\n1,2,3\n")
    ingest(spark, tmp_path / "lake", find_sources([source]), IngestConfig())
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / "names"))
    assert frame.columns == ["first_name", "a_b", "x_y"]
