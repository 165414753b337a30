"""`airflow dags test` of lakemeta_incremental, then of lakemeta_discovery with a param: real spark-submit
jobs, SQLite Airflow, a filled catalog, audited and published, and read through Spark SQL. (The search DAG
with params runs in tests/ui, triggered from its form.)"""

from __future__ import annotations

import json
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


SQL_QUERY = """
import sys
from pathlib import Path
from lakemeta.spark import get_session, metastore_conf
spark = get_session("local[1]", "analyst", catalog=Path(sys.argv[1]), extra_conf=metastore_conf())
rows = spark.sql("SELECT fk_table, pk_table, accepted FROM lakemeta.fk_candidates ORDER BY rank").collect()
print([tuple(row) for row in rows])
"""


def test_dags_test_incremental_then_discovery_fill_and_publish_the_catalog(tmp_path: Path):
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    write_deltalake(str(lake / "shop" / "orders"), pa.table({"id": [1, 2, 3], "note": ["a", None, "c"]}))
    write_deltalake(str(lake / "regions"), pa.table({"region": ["north", "south"]}))
    write_deltalake(str(lake / "shop" / "items"), pa.table({"order_id": [1, 1, 2, 3]}))
    write_deltalake(str(lake / "shop" / "returns"), pa.table({"returned_order": [1, 2, 9]}))  # 2/3 in orders
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
        ("shop/returns", 3, 1),
    ]
    runs = read_catalog_table(catalog, "runs")
    assert list(runs.status) == ["succeeded"] and int(runs.rows_inserted[0]) == 12

    # Discovery as the asset would start it, with a param: the estimates keep pairs reaching 0.7 only.
    conf = json.dumps({"inclusion_floor": 0.7})
    result = airflow(f"dags test lakemeta_discovery --conf '{conf}'", env)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    columns = read_catalog_table(catalog, "columns")
    assert dict(zip(columns.column_name, columns.n_nulls, strict=True)) == {
        "region": 0,
        "order_id": 0,
        "id": 0,
        "note": 1,
        "returned_order": 0,
    }
    distinct = dict(zip(columns.column_name, columns.n_distinct_estimate, strict=True))
    assert distinct == {"region": 2, "order_id": 3, "id": 3, "note": 2, "returned_order": 3}
    unique = dict(zip(columns.column_name, columns.is_unique, strict=True))
    assert unique == {"region": True, "order_id": False, "id": True, "note": True, "returned_order": True}
    keys = read_catalog_table(catalog, "unique_column_combinations")
    orders = keys[keys.table_name == "shop/orders"]
    assert sorted(list(columns) for columns in orders["columns"]) == [["id"], ["note"]]
    estimates = read_catalog_table(catalog, "inclusion_estimates")
    pairs = {(r.dep_column, r.ref_column): r.estimate for r in estimates.itertuples()}
    assert pairs[("order_id", "id")] == 1.0 and pairs[("id", "order_id")] == 1.0
    assert min(pairs.values()) >= 0.7 and ("returned_order", "id") not in pairs  # its estimate is 2/3
    inds = read_catalog_table(catalog, "inclusion_dependencies")
    found = {(r.dep_table, r.dep_column, r.ref_table, r.ref_column) for r in inds.itertuples()}
    assert found == {
        ("shop/items", "order_id", "shop/orders", "id"),
        ("shop/orders", "id", "shop/items", "order_id"),
    }
    fks = read_catalog_table(catalog, "fk_candidates")
    assert [
        (r.fk_table, list(r.fk_columns), r.pk_table, list(r.pk_columns), r.emd, r.accepted)
        for r in fks.itertuples()
    ] == [("shop/items", ["order_id"], "shop/orders", ["id"], 0.0, True)]

    # Published: a new Spark session on the catalog's metastore reads the FKs through SQL.
    analyst = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", SQL_QUERY, str(catalog)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert analyst.returncode == 0, analyst.stderr[-3000:]
    assert analyst.stdout.strip().splitlines()[-1] == "[('shop/items', 'shop/orders', True)]"
