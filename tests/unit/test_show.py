"""`lakemeta show` reads catalog tables without a JVM, with time travel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.show import format_table, read_catalog_table


def _runs(rows: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"run_id": pa.array([r[0] for r in rows], pa.int64()), "status": [r[1] for r in rows]})


def test_show_reads_latest_and_earlier_versions(tmp_path: Path):
    write_deltalake(str(tmp_path / "runs"), _runs([(2, "running"), (1, "succeeded")]))
    write_deltalake(str(tmp_path / "runs"), _runs([(2, "succeeded"), (1, "succeeded")]), mode="overwrite")
    assert list(read_catalog_table(tmp_path, "runs").status) == ["succeeded", "succeeded"]
    assert list(read_catalog_table(tmp_path, "runs", version=0).run_id) == [1, 2]
    assert list(read_catalog_table(tmp_path, "runs", version=0).status) == ["succeeded", "running"]


def test_show_names_unknown_and_missing_tables(tmp_path: Path):
    with pytest.raises(KeyError, match="unknown catalog table 'nope'"):
        read_catalog_table(tmp_path, "nope")
    with pytest.raises(FileNotFoundError, match="lakemeta run"):
        read_catalog_table(tmp_path, "tables")


def test_format_table_truncates_with_a_count(tmp_path: Path):
    write_deltalake(str(tmp_path / "runs"), _runs([(i, "succeeded") for i in range(5)]))
    text = format_table(read_catalog_table(tmp_path, "runs"), limit=2)
    assert "... 3 more rows (5 in all)" in text


def test_cli_show_needs_no_jvm(tmp_path: Path):
    write_deltalake(str(tmp_path / "runs"), _runs([(7, "succeeded")]))
    code = (
        "import sys; from lakemeta.cli import main; r = main(sys.argv[1:]); "
        "assert 'pyspark' not in sys.modules or sys.modules['pyspark'].SparkContext._gateway is None; "
        "sys.exit(r)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "show", "--catalog", str(tmp_path), "runs"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "succeeded" in result.stdout and "7" in result.stdout
