"""`airflow dags test` of lakemeta_incremental, lakemeta_discovery and lakemeta_joinable_search with
params on a real Spark standalone cluster (a master and two workers on 127.0.0.1): real spark-submit
jobs, SQLite Airflow, a filled and published catalog equal to the one local mode produces, and a search
answered from it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.catalog import ALL_SCHEMAS
from lakemeta.config import Config, SketchConfig
from lakemeta.pipeline import Pipeline
from lakemeta.show import read_catalog_table

from .cluster import standalone_cluster

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


# Written at different times, or by the DAG runs only (publication, searches): not compared.
VOLATILE = {"updated_at", "started_at", "finished_at"}
NOT_COMPARED = {"published", "joinable_tables"}


def catalog_rows(catalog: Path) -> dict[str, list]:
    """Every catalog and state table's rows, without volatile columns, in a canonical order."""
    contents = {}
    for name in sorted(set(ALL_SCHEMAS) - NOT_COMPARED):
        rows = DeltaTable(str(catalog / name)).to_pyarrow_table().to_pylist()
        contents[name] = sorted(repr({k: v for k, v in row.items() if k not in VOLATILE}) for row in rows)
    return contents


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as master:
        yield master


def test_dags_on_a_cluster_fill_the_catalog_as_local_mode_does(tmp_path: Path, cluster: str, spark):
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
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": cluster}),
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

    # The same lake in local mode, in one process, with the same inclusion floor: the same catalog.
    local = tmp_path / "local-catalog"
    Pipeline(spark, Config(lake=lake, catalog=local, sketches=SketchConfig(inclusion_floor=0.7))).run()
    on_cluster, in_local_mode = catalog_rows(catalog), catalog_rows(local)
    assert on_cluster["state/hll_counters"] and on_cluster["state/posting_lists"]
    assert on_cluster == in_local_mode

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

    # A search triggered with params, its query a file in the lake: (1, a) and (3, c) are rows of
    # shop/orders under the mapping id -> id, note -> note; no other table holds a query value in both.
    (lake / "queries").mkdir()
    (lake / "queries" / "q.csv").write_text("key,label\n1,a\n3,c\n4,z\n")
    conf = {"query": "queries/q.csv", "key_columns": ["key", "label"], "k": 3}
    search = airflow(f"dags test lakemeta_joinable_search --conf '{json.dumps(conf)}'", env)
    assert search.returncode == 0, (search.stdout[-3000:], search.stderr[-3000:])
    found = read_catalog_table(catalog, "joinable_tables")
    assert [(r.rank, r.table_name, r.joinability) for r in found.itertuples()] == [(1, "shop/orders", 2)]
    assert json.loads(found.column_mapping[0]) == {"key": "id", "label": "note"}
