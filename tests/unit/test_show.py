"""`lakemeta show` reads catalog tables without a JVM, with time travel, on local disk and in the S3
server."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

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


def test_show_names_unknown_and_missing_tables(root: Location):
    with pytest.raises(ValueError, match="unknown catalog table 'nope'"):
        read_catalog_table(root, "nope")
    with pytest.raises(FileNotFoundError, match="lakemeta run"):
        read_catalog_table(root, "tables")


def test_format_table_truncates_with_a_count(root: Location):
    (root / "runs").write_delta(_runs([(i, "succeeded") for i in range(5)]))
    text = format_table(read_catalog_table(root, "runs"), limit=2)
    assert "... 3 more rows (5 in all)" in text


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
