"""`lakemeta show` reads catalog tables without a JVM, with time travel, on local disk and in the S3
server, and prints them as a table, JSON or CSV."""

from __future__ import annotations

import base64
import csv
import io
import json
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from lakemeta.cli import main
from lakemeta.show import format_table, read_catalog_table
from lakemeta.storage import Location


def _runs(rows: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"run_id": pa.array([r[0] for r in rows], pa.int64()), "status": [r[1] for r in rows]})


def test_show_reads_latest_and_earlier_versions(root: Location):
    (root / "runs").write_delta(_runs([(2, "running"), (1, "succeeded")]))
    (root / "runs").write_delta(_runs([(2, "succeeded"), (1, "succeeded")]), mode="overwrite")
    assert list(read_catalog_table(root, "runs").status) == ["succeeded", "succeeded"]
    assert list(read_catalog_table(root, "runs", version=0).run_id) == [1, 2]
    assert list(read_catalog_table(root, "runs", version=0).status) == ["succeeded", "running"]


def test_any_delta_reader_finds_the_version_the_gate_passed_not_a_later_write(root: Location, capsys) -> None:
    assert main(["show", "--catalog", root.uri, "published-versions", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing published yet
    passed = _runs([(1, "succeeded")])
    (root / "runs").write_delta(passed)  # version 0, audited and published
    published_at = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    record = {"table_name": ["runs"], "version": [0], "published_at": [published_at], "audit": ["a.json"]}
    (root / "published").write_delta(pa.table(record, schema=pa.schema([
        ("table_name", pa.string()), ("version", pa.int64()), ("published_at", pa.timestamp("us", "UTC")),
        ("audit", pa.string()),
    ])))  # fmt: skip
    (root / "runs").write_delta(_runs([(1, "written after the audit")]), mode="overwrite")  # not published

    assert main(["show", "--catalog", root.uri, "published-versions", "--format", "json"]) == 0
    (where,) = json.loads(capsys.readouterr().out)
    assert (where["table_name"], where["version"], where["path"]) == ("runs", 0, (root / "runs").uri)
    # delta-rs at that path and version: what the gate passed (pandas, Polars and DuckDB read it as Arrow)
    assert Location.parse(where["path"]).delta_table(where["version"]).to_pyarrow_table().equals(passed)
    assert main(["show", "--catalog", root.uri, "runs", "--format", "json"]) == 0  # the published one
    assert [row["status"] for row in json.loads(capsys.readouterr().out)] == ["succeeded"]


def test_show_names_unknown_and_missing_tables(root: Location):
    with pytest.raises(ValueError, match="unknown catalog table 'nope'"):
        read_catalog_table(root, "nope")
    with pytest.raises(FileNotFoundError, match="lakemeta run"):
        read_catalog_table(root, "tables")


def test_format_table_truncates_with_a_count(root: Location):
    (root / "runs").write_delta(_runs([(i, "succeeded") for i in range(5)]))
    text = format_table(read_catalog_table(root, "runs"), limit=2)
    assert "... 3 more rows (5 in all)" in text


def _typed_runs() -> pa.Table:
    """Two runs with a value of every kind JSON and CSV need a rendering for."""
    started = datetime(2026, 11, 18, 10, 30, tzinfo=UTC)
    return pa.table(
        {
            "run_id": pa.array([2, 1], pa.int64()),
            "started_at": pa.array([started, None], pa.timestamp("us", "UTC")),
            "day": pa.array([date(2026, 11, 18), date(2026, 11, 17)], pa.date32()),
            "digest": pa.array([b"\x00\xff", b""], pa.binary()),
            "tables": pa.array([["a", "b"], []], pa.list_(pa.string())),
            "mapping": pa.array([[("id", "key")], None], pa.map_(pa.string(), pa.string())),
            "score": pa.array([float("nan"), 0.25], pa.float64()),
            "status": ["running", 'said "done", then\nfailed'],
        }
    )


def _show(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert main(["show", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_show_json_is_one_document_of_row_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    Location.parse(tmp_path / "runs").write_delta(_typed_runs())
    out, _ = _show(capsys, "--catalog", str(tmp_path), "runs", "--format", "json")
    assert json.loads(out) == [
        {
            "run_id": 1,
            "started_at": None,
            "day": "2026-11-17",
            "digest": "",
            "tables": [],
            "mapping": None,
            "score": 0.25,
            "status": 'said "done", then\nfailed',
        },
        {
            "run_id": 2,
            "started_at": "2026-11-18T10:30:00+00:00",
            "day": "2026-11-18",
            "digest": base64.b64encode(b"\x00\xff").decode(),
            "tables": ["a", "b"],
            "mapping": {"id": "key"},
            "score": None,
            "status": "running",
        },
    ]


def test_show_csv_has_a_header_and_quotes_as_rfc_4180(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    Location.parse(tmp_path / "runs").write_delta(_typed_runs())
    out, _ = _show(capsys, "--catalog", str(tmp_path), "runs", "--format", "csv")
    assert list(csv.reader(io.StringIO(out))) == [
        ["run_id", "started_at", "day", "digest", "tables", "mapping", "score", "status"],
        ["1", "", "2026-11-17", "", "[]", "", "0.25", 'said "done", then\nfailed'],
        [
            "2",
            "2026-11-18T10:30:00+00:00",
            "2026-11-18",
            "AP8=",
            '["a", "b"]',
            '{"id": "key"}',
            "",
            "running",
        ],
    ]


def test_show_json_and_csv_print_every_row_unless_limited(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    Location.parse(tmp_path / "runs").write_delta(_runs([(i, "succeeded") for i in range(60)]))
    everything, _ = _show(capsys, "--catalog", str(tmp_path), "runs", "--format", "json")
    assert [row["run_id"] for row in json.loads(everything)] == list(range(60))
    table, _ = _show(capsys, "--catalog", str(tmp_path), "runs")
    assert "... 10 more rows (60 in all)" in table
    first, note = _show(capsys, "--catalog", str(tmp_path), "runs", "--format", "csv", "--limit", "2")
    assert first.splitlines() == ["run_id,status", "0,succeeded", "1,succeeded"]
    assert note.strip() == "58 more rows not printed (60 in all)"


def test_cli_show_needs_no_jvm(root: Location):
    (root / "runs").write_delta(_runs([(7, "succeeded")]))
    code = (
        "import sys; from lakemeta.cli import main; r = main(sys.argv[1:]); "
        "assert 'pyspark' not in sys.modules or sys.modules['pyspark'].SparkContext._gateway is None; "
        "sys.exit(r)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "show", "--catalog", str(root), "runs"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "succeeded" in result.stdout and "7" in result.stdout
