"""`lakemeta ingest`: CSV dialects and line endings, Parquet, quarantine of malformed and misencoded records,
and the awkward inputs a lake receives (empty files, mixed types, huge cells, wide tables), the last
through the whole pipeline."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakemeta import crash_points
from lakemeta.config import Config, IngestConfig
from lakemeta.lake.ingest import IngestError, find_sources, ingest
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.show import read_catalog_table

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


def test_malformed_records_go_to_quarantine_with_reason_and_line_numbers(spark, tmp_path: Path):
    source = tmp_path / "ragged.csv"
    good = "".join(f"{i},n{i}\n" for i in range(10, 60))
    source.write_text(f"id,name\n1,a\n2,b,EXTRA\n3\n\n4,d\n2,b,EXTRA\n{good}5,e,f,g\n")
    lake = tmp_path / "lake"
    # Splits of 64 bytes: the file is read by many tasks, and line numbers still count from the top.
    spark.conf.set("spark.sql.files.maxPartitionBytes", "64b")
    try:
        results = ingest(spark, lake, find_sources([source]), IngestConfig())
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert [(r.rows, r.quarantined) for r in results] == [(52, 4)]
    assert _rows(spark, lake, "ragged")[:2] == [(1, "a"), (4, "d")]
    bad = spark.read.format("delta").load(str(lake / "_quarantine" / "ragged")).collect()
    # Line 1 is the header, line 5 blank; the same bad text on two lines names both.
    assert sorted((r.raw_record, r.line_numbers) for r in bad) == [
        ("2,b,EXTRA", [3, 7]),
        ("2,b,EXTRA", [3, 7]),
        ("3", [4]),
        ("5,e,f,g", [58]),
    ]
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


def _quarantined(spark, lake: Path, name: str) -> list[tuple]:
    frame = spark.read.format("delta").load(str(lake / "_quarantine" / name))
    return sorted((r.raw_record, r.reason) for r in frame.collect())


def test_bytes_that_are_not_utf8_are_quarantined_naming_the_column(spark, tmp_path: Path):
    source = tmp_path / "cafes.csv"
    source.write_bytes(b"id,name,city\n1,caf\xe9,K\xf6ln\n2,bar,Bonn\n3,\xff,Ulm\n")
    lake = tmp_path / "lake"
    results = ingest(spark, lake, find_sources([source]), IngestConfig())
    assert [(r.rows, r.quarantined) for r in results] == [(1, 2)]
    assert _rows(spark, lake, "cafes") == [(2, "bar", "Bonn")]
    assert _quarantined(spark, lake, "cafes") == [
        ("1,caf\ufffd,K\ufffdln", "bytes that are not UTF-8 (read as U+FFFD) in column name, city"),
        ("3,\ufffd,Ulm", "bytes that are not UTF-8 (read as U+FFFD) in column name"),
    ]


def test_a_crash_after_the_quarantine_and_a_retry_record_each_bad_record_once(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    source = tmp_path / "ragged.csv"
    source.write_text("id,name\n1,a\n2,b,EXTRA\n")
    lake = tmp_path / "lake"

    def crash(label: str) -> None:
        if label == "after quarantine of ragged":
            raise KeyboardInterrupt(label)  # a BaseException, as a kill: nothing may catch it

    monkeypatch.setattr(crash_points, "on_reach", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest(spark, lake, find_sources([source]), IngestConfig(), parallel=1)
    assert not (lake / "ragged").exists()
    monkeypatch.setattr(crash_points, "on_reach", lambda label: None)
    ingest(spark, lake, find_sources([source]), IngestConfig())
    assert _rows(spark, lake, "ragged") == [(1, "a")]
    assert [raw for raw, _ in _quarantined(spark, lake, "ragged")] == ["2,b,EXTRA"]


def test_an_empty_file_is_an_error_and_a_header_alone_an_empty_table(spark, tmp_path: Path):
    empty, header = tmp_path / "empty.csv", tmp_path / "header.csv"
    empty.write_text("")
    header.write_text("id,name\n")
    lake = tmp_path / "lake"
    with pytest.raises(IngestError, match=r"empty\.csv: no columns found"):
        ingest(spark, lake, find_sources([empty]), IngestConfig())
    results = ingest(spark, lake, find_sources([header]), IngestConfig())
    assert [(r.table_name, r.rows, r.quarantined) for r in results] == [("header", 0, 0)]
    assert spark.read.format("delta").load(str(lake / "header")).columns == ["id", "name"]


def test_mixed_types_duplicates_an_all_null_column_a_1_mb_cell_and_1000_columns_go_through_the_pipeline(
    spark, tmp_path: Path
):
    mixed, wide = tmp_path / "mixed.csv", tmp_path / "wide.csv"
    big = "x" * (1 << 20)
    mixed.write_text(f"id,value,nothing\n1,12,\n1,12,\n2,twelve,\n3,1.5e3,\n4,{big},\n")
    header = ",".join(f"c{i}" for i in range(1000))
    wide.write_text(
        f"{header}\n" + "\n".join(",".join(str(r * i) for i in range(1000)) for r in range(3)) + "\n"
    )
    lake = tmp_path / "lake"
    results = ingest(spark, lake, find_sources([mixed, wide]), IngestConfig())
    assert [(r.table_name, r.rows, r.quarantined) for r in results] == [("mixed", 5, 0), ("wide", 3, 0)]
    # A column of numbers and words is text, every value as written; duplicate rows stay two rows; a
    # column without a value is all null.
    assert _rows(spark, lake, "mixed") == [
        (1, "12", None),
        (1, "12", None),
        (2, "twelve", None),
        (3, "1.5e3", None),
        (4, big, None),
    ]
    frame = spark.read.format("delta").load(str(lake / "wide"))
    assert frame.columns == header.split(",")
    assert sorted(tuple(r) for r in frame.collect()) == [tuple(r * i for i in range(1000)) for r in range(3)]

    # The whole pipeline over them: every state component and discovery, and the quality gate.
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    pipeline.run()
    assert pipeline.audit().success
    tables = read_catalog_table(pipeline.catalog.root, "tables")
    assert list(zip(tables.table_name, tables.n_rows, tables.n_columns, strict=True)) == [
        ("mixed", 5, 3),
        ("wide", 3, 1000),
    ]
    columns = read_catalog_table(pipeline.catalog.root, "columns")
    distinct = {(r.table_name, r.column_name): r.n_distinct_estimate for r in columns.itertuples()}
    assert len(distinct) == 1003 and distinct["mixed", "value"] == 4  # "12", "twelve", "1.5e3", big
    nulls = {(r.table_name, r.column_name): r.n_nulls for r in columns.itertuples()}
    assert (distinct["mixed", "nothing"], nulls["mixed", "nothing"]) == (0, 5)
    assert distinct["wide", "c0"] == 1 and all(distinct["wide", f"c{i}"] == 3 for i in range(1, 1000))
    # One posting-list item per cell, the 1 MB one too.
    items = deltalake.DeltaTable(str(tmp_path / "catalog" / "state" / "posting_lists")).to_pyarrow_table()
    assert items.num_rows == 3010 and big in items.column("value").to_pylist()
    # c0 holds only 0, which every other column of wide holds; nothing else is included anywhere.
    inds = read_catalog_table(pipeline.catalog.root, "inclusion_dependencies")
    assert sorted(zip(inds.dep_column, inds.ref_column, strict=True)) == sorted(
        ("c0", f"c{i}") for i in range(1, 1000)
    )


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_quoted_fields_with_line_breaks_are_read_as_rfc_4180_has_them(spark, tmp_path: Path, newline: str):
    source = tmp_path / "notes.csv"
    records = ["id,note,n", '1,"first line', 'second line",10', '2,"a ""quoted"" word, and a comma",20']
    records += ['3,"ends in a break', '",30', "4,plain,40", "5,too few", ""]
    source.write_bytes(newline.join(records).encode())
    lake = tmp_path / "lake"
    results = ingest(spark, lake, find_sources([source]), IngestConfig())
    assert [(r.rows, r.quarantined) for r in results] == [(4, 1)]
    # Spark's parser (univocity) turns a CRLF inside quotes into LF: the text, not the line break, is kept.
    assert _rows(spark, lake, "notes") == [
        (1, "first line\nsecond line", 10),
        (2, 'a "quoted" word, and a comma', 20),
        (3, "ends in a break\n", 30),
        (4, "plain", 40),
    ]
    # The malformed record after the multi-line ones still gets its line: 1 header, 2-3 record 1, ...
    bad = spark.read.format("delta").load(str(lake / "_quarantine" / "notes")).collect()
    assert [(r.raw_record, r.line_numbers) for r in bad] == [("5,too few", [8])]


TYPED = (
    "zip,phone,amount,price,n,flag,day\n"
    "01234,+4930,1.50,2.25,7,true,2026-11-18\n"
    "10115,4940,2.0,0.5,8,false,\n"
)


def test_a_column_whose_values_would_not_come_back_as_written_stays_text(spark, tmp_path: Path):
    source = tmp_path / "shops.csv"
    source.write_text(TYPED)
    lake = tmp_path / "lake"
    ingest(spark, lake, find_sources([source]), IngestConfig())
    frame = spark.read.format("delta").load(str(lake / "shops"))
    # Leading zeros, a plus sign, a trailing zero: text. Values that come back as written keep their type.
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("zip", "string"),
        ("phone", "string"),
        ("amount", "string"),
        ("price", "double"),
        ("n", "int"),
        ("flag", "boolean"),
        ("day", "date"),
    ]
    assert _rows(spark, lake, "shops") == [
        ("01234", "+4930", "1.50", 2.25, 7, True, date(2026, 11, 18)),
        ("10115", "4940", "2.0", 0.5, 8, False, None),
    ]


def test_all_text_reads_every_column_as_written(spark, tmp_path: Path):
    source = tmp_path / "shops.csv"
    source.write_text(TYPED)
    lake = tmp_path / "lake"
    ingest(spark, lake, find_sources([source]), IngestConfig(all_text=True))
    frame = spark.read.format("delta").load(str(lake / "shops"))
    assert {f.dataType.simpleString() for f in frame.schema.fields} == {"string"}
    assert _rows(spark, lake, "shops") == [
        ("01234", "+4930", "1.50", "2.25", "7", "true", "2026-11-18"),
        ("10115", "4940", "2.0", "0.5", "8", "false", None),
    ]


def test_a_retried_append_of_a_file_appends_it_once(spark, tmp_path: Path):
    source = tmp_path / "events.csv"
    source.write_text("id,kind\n1,a\n2,b,EXTRA\n3,c\n")
    lake = tmp_path / "lake"
    first = ingest(spark, lake, find_sources([source]), IngestConfig(), mode="append")
    retry = ingest(spark, lake, find_sources([source]), IngestConfig(), mode="append")
    assert [(r.rows, r.quarantined, r.already_appended) for r in first + retry] == [
        (2, 1, False),
        (0, 0, True),
    ]
    assert _rows(spark, lake, "events") == [(1, "a"), (3, "c")]
    assert [raw for raw, _ in _quarantined(spark, lake, "events")] == ["2,b,EXTRA"]
    assert deltalake.DeltaTable(str(lake / "events")).version() == 0  # the retry committed nothing
    # Other content at the same path is another append, made once too.
    source.write_text("id,kind\n4,d\n")
    for _ in range(2):
        ingest(spark, lake, find_sources([source]), IngestConfig(), mode="append")
    assert _rows(spark, lake, "events") == [(1, "a"), (3, "c"), (4, "d")]
