"""`airflow dags test lakemeta_incremental`: real spark-submit jobs, SQLite Airflow, a filled catalog."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.show import read_catalog_table

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def airflow(args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = f"source {REPO / 'infra' / 'airflow' / 'env.sh'} && airflow {args}"
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=900)


def test_dags_test_incremental_fills_the_catalog(tmp_path: Path):
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    write_deltalake(str(lake / "shop" / "orders"), pa.table({"id": [1, 2, 3], "note": ["a", None, "c"]}))
    write_deltalake(str(lake / "regions"), pa.table({"region": ["north", "south"]}))
    write_deltalake(str(lake / "shop" / "items"), pa.table({"order_id": [1, 1, 2, 3]}))
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "LAKEMETA_LAKE": str(lake),
        "LAKEMETA_CATALOG": str(catalog),
    }
    migrate = airflow("db migrate", env)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    result = airflow("dags test lakemeta_incremental", env)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])

    tables = read_catalog_table(catalog, "tables")
    assert list(zip(tables.table_name, tables.n_rows, tables.n_columns, strict=True)) == [
        ("regions", 2, 1),
        ("shop/items", 4, 1),
        ("shop/orders", 3, 2),
    ]
    columns = read_catalog_table(catalog, "columns")
    assert dict(zip(columns.column_name, columns.n_nulls, strict=True)) == {
        "region": 0,
        "order_id": 0,
        "id": 0,
        "note": 1,
    }
    distinct = dict(zip(columns.column_name, columns.n_distinct_estimate, strict=True))
    assert distinct == {"region": 2, "order_id": 3, "id": 3, "note": 2}
    estimates = read_catalog_table(catalog, "inclusion_estimates")
    pairs = {(r.dep_column, r.ref_column): r.estimate for r in estimates.itertuples()}
    assert pairs[("order_id", "id")] == 1.0 and pairs[("id", "order_id")] == 1.0
    runs = read_catalog_table(catalog, "runs")
    assert list(runs.status) == ["succeeded"] and int(runs.rows_inserted[0]) == 9
