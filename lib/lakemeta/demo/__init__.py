"""`lakemeta demo`: build a lake (TPC-H at scale 0.01 and a few hundred web tables), run the DAGs on it
(lakemeta_incremental, then lakemeta_discovery), apply a batch of inserts, deletes and updates, run them
again, search for joinable tables through lakemeta_joinable_search, and print what the catalog says and
where to look next."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq
import pyspark.sql.functions as F
from deltalake import write_deltalake
from pyspark.sql import SparkSession

from lakemeta.config import Config, IngestConfig
from lakemeta.demo.dag_runs import airflow_environment, run_dags
from lakemeta.demo.webtables import write_web_tables
from lakemeta.fks.schema_view import write_catalog_page
from lakemeta.lake.ingest import find_sources, ingest
from lakemeta.lake.tables import table_path
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.show import format_table, read_catalog_table
from lakemeta.spark import get_session
from lakemeta.spark.connect import running_server
from lakemeta.storage import Location

log = logging.getLogger(__name__)

TPCH_SCALE = "0.01"
# TPC-H's declared foreign keys, with lineitem -> part and lineitem -> supplier, which also hold:
# (fk_table, fk_columns, pk_table, pk_columns).
TPCH_FOREIGN_KEYS = {
    ("nation", ("n_regionkey",), "region", ("r_regionkey",)),
    ("supplier", ("s_nationkey",), "nation", ("n_nationkey",)),
    ("customer", ("c_nationkey",), "nation", ("n_nationkey",)),
    ("partsupp", ("ps_partkey",), "part", ("p_partkey",)),
    ("partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
    ("orders", ("o_custkey",), "customer", ("c_custkey",)),
    ("lineitem", ("l_orderkey",), "orders", ("o_orderkey",)),
    ("lineitem", ("l_partkey",), "part", ("p_partkey",)),
    ("lineitem", ("l_suppkey",), "supplier", ("s_suppkey",)),
    ("lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey")),
}
WEB_TABLES = 200


def generate_tpch(folder: Path, scale: str = TPCH_SCALE, tables: Sequence[str] = ()) -> dict[str, int]:
    """TPC-H as Parquet at ``scale`` (every table, or those named in ``tables``), by the tpchgen-cli that
    the project installs beside its Python; returns the generated row count per table."""
    folder.mkdir(parents=True, exist_ok=True)
    tpchgen = Path(sys.executable).with_name("tpchgen-cli")
    command = [str(tpchgen), "parquet", "-s", scale, "--output-dir", str(folder)]
    subprocess.run(command + (["--tables", ",".join(tables)] if tables else []), check=True)
    return {path.stem: pq.read_metadata(path).num_rows for path in sorted(folder.glob("*.parquet"))}


def write_tpch_lake(lake: Path, parquet: Path, scale: str = TPCH_SCALE) -> list[str]:
    """TPC-H at ``scale`` as Delta tables under ``lake``, one per table and named by it, written by delta-rs
    as another engine would, from the Parquet files under ``parquet`` (generated there first when that
    folder is absent: benchmarks keep them between runs); the tables' names."""
    if not parquet.is_dir():
        generate_tpch(parquet, scale)
    names = []
    for path in sorted(parquet.glob("*.parquet")):
        write_deltalake(str(lake / path.stem), pq.read_table(path))
        names.append(path.stem)
    return names


def apply_demo_changes(pipeline: Pipeline) -> None:
    """A batch of deletes, updates and inserts on a few web tables, as an outside writer would make."""
    spark = pipeline.catalog.spark

    def table(name: str) -> str:
        return f"delta.`{table_path(pipeline.lake, name)}`"

    spark.sql(f"DELETE FROM {table('web/countries_0000')} WHERE country < 'G' OR country LIKE 'S%'")
    spark.sql(f"UPDATE {table('web/planets_0001')} SET moons = moons + 1 WHERE type = 'gas giant'")
    spark.sql(
        f"INSERT INTO {table('web/cities_0002')} VALUES ('Kyoto', 'Japan', 794), ('Lille', 'France', 640)"
    )
    spark.sql(f"DELETE FROM {table('web/languages_0003')} WHERE speakers_millions < 100")


def run_demo(workdir: Path, config: Config) -> int:
    if workdir.exists():
        shutil.rmtree(workdir)
    lake, catalog = Location.parse(workdir / "lake"), Location.parse(workdir / "catalog")
    sources = workdir / "sources"
    print(f"1/5 generating TPC-H (scale {TPCH_SCALE}) and {WEB_TABLES} web tables under {sources}")
    expected = generate_tpch(sources / "tpch")
    write_web_tables(sources / "web", WEB_TABLES)

    config = dataclasses.replace(config, lake=lake, catalog=catalog)
    env = airflow_environment(lake, catalog)
    server_log = workdir / "connect-server.log"
    print(f"    the Spark Connect server of the DAGs' tasks and of this demo starts (its log: {server_log})")
    with running_server(config, int(env["LAKEMETA_CONNECT_PORT"]), server_log, env) as url:
        spark = get_session(app_name="lakemeta demo", remote=url)
        try:
            return _on_the_server(spark, workdir, config, sources, expected, env)
        finally:
            # Before the server stops: a session still open at exit asks the stopped server to release it,
            # and pyspark retries that for some ten minutes.
            spark.stop()


def _on_the_server(
    spark: SparkSession,
    workdir: Path,
    config: Config,
    sources: Path,
    expected: dict[str, int],
    env: dict[str, str],
) -> int:
    lake, catalog = config.require_paths()
    print("2/5 ingesting them into the lake", lake)
    lake.local_path().mkdir(parents=True)
    ingest(spark, lake, find_sources([sources / "tpch", sources / "web"]), IngestConfig())

    pipeline = Pipeline(spark, config)
    print("3/5 first runs of lakemeta_incremental and lakemeta_discovery: every table is new")
    timings = _run_dags(env, "first")
    print("4/5 applying deletes, updates and inserts to four web tables, then running both again")
    apply_demo_changes(pipeline)
    timings += _run_dags(env, "second")
    run_id, sources_of_changes = _last_run(catalog)
    print(
        f"    run {run_id}: {len(sources_of_changes)} tables changed "
        f"({', '.join(f'{table} via {source}' for table, source in sources_of_changes.items())})"
    )

    print("5/5 what the catalog says")
    tables = read_catalog_table(catalog, "tables")
    tpch = tables[tables.table_name.str.startswith("tpch/")].copy()
    tpch["generated_rows"] = tpch.table_name.str.removeprefix("tpch/").map(expected)
    tpch["match"] = tpch.n_rows == tpch.generated_rows
    print(format_table(tpch[["table_name", "n_rows", "generated_rows", "match", "n_columns"]], None))
    web = tables[tables.table_name.str.startswith("web/")]
    print(f"\n{len(web)} web tables, {int(web.n_rows.sum())} rows; the changed ones now:")
    changed = list(sources_of_changes)
    print(format_table(tables[tables.table_name.isin(changed)], None))
    estimates = read_catalog_table(catalog, "inclusion_estimates")
    tpch_pairs = estimates[
        estimates.dep_table.str.startswith("tpch/")
        & estimates.ref_table.str.startswith("tpch/")
        & (estimates.estimate >= 0.99)
    ].sort_values(["status", "error_bound", "dep_table", "dep_column", "ref_table", "ref_column"])
    by_status = estimates.status.value_counts()
    print(
        f"\n{len(estimates)} column pairs whose inclusion reaches 0.5 or may: "
        f"{by_status.get('exact', 0)} counted exactly from the value sets, "
        f"{by_status.get('estimated', 0)} estimated (BML, error bound at most 0.25), "
        f"{by_status.get('undetermined', 0)} undetermined (a wider bound, no estimate); "
        f"{len(tpch_pairs)} TPC-H pairs fully included, exact ones first, then the tightest bounds:"
    )
    print(format_table(tpch_pairs, 20))
    keys = read_catalog_table(catalog, "unique_column_combinations")
    tpch_keys = keys[keys.table_name.str.startswith("tpch/") & (keys["columns"].map(len) == 1)]
    fds = read_catalog_table(catalog, "functional_dependencies")
    print(
        f"\n{len(keys)} minimal keys and {len(fds)} minimal FDs (DynASt, tables up to "
        f"{config.agree_sets.max_rows} rows); the single-column keys of TPC-H:"
    )
    print(format_table(tpch_keys, 20))
    candidates = read_catalog_table(catalog, "fk_candidates")
    accepted = candidates[candidates.accepted]
    tpch_accepted = {
        (
            r.fk_table.removeprefix("tpch/"),
            tuple(r.fk_columns),
            r.pk_table.removeprefix("tpch/"),
            tuple(r.pk_columns),
        )
        for r in accepted.itertuples()
        if r.fk_table.startswith("tpch/") and r.pk_table.startswith("tpch/")
    }
    print(
        f"\n{len(candidates)} FK candidates (Zhang et al.), {len(accepted)} accepted, one key per dependent "
        f"within each schema; of TPC-H's {len(TPCH_FOREIGN_KEYS)} foreign keys "
        f"{len(tpch_accepted & TPCH_FOREIGN_KEYS)} accepted, {len(tpch_accepted - TPCH_FOREIGN_KEYS)} other "
        "TPC-H pairs accepted. The accepted FKs per schema (folder):"
    )
    shown = ["fk_table", "fk_columns", "pk_table", "pk_columns", "emd", "coverage", "same_folder"]
    for schema, fks in accepted.groupby(accepted.fk_table.map(config.fks.schema_of)):
        print(f"\n{schema or '(lake root)'}: {len(fks)} accepted")
        print(format_table(fks[shown], 20))
    overlaps = read_catalog_table(catalog, "table_overlaps")
    print(f"\n{len(overlaps)} pairs of tables that are copies, samples or extracts of one another:")
    print(format_table(overlaps, 20))
    _, views = write_catalog_page(catalog, workdir / "schemas.html", config.fks.schema_of)
    print(f"\nthe schemas drawn ({len(views)} schema graphs; lakemeta graph): {workdir / 'schemas.html'}")
    print(
        "\ntables joinable with web/cities_0002 on (city, country) (MATE, top 5; lakemeta_joinable_search):"
    )
    search = {"query": "web/cities_0002", "key_columns": ["city", "country"], "k": 5}
    (seconds,) = run_dags([("lakemeta_joinable_search", search)], env).seconds.values()
    timings.append(("lakemeta_joinable_search", "search", seconds))
    found = read_catalog_table(catalog, "joinable_tables")
    print(format_table(found[found.query_id == found.query_id.max()], None))
    print("\nruns:")
    print(format_table(read_catalog_table(catalog, "runs"), None))
    # Counted by another reader (delta-rs) than the one the pipeline used.
    live = {name: table_path(lake, name).delta_dataset().count_rows() for name in tables.table_name}
    consistent = bool((tables.n_rows == tables.table_name.map(live)).all()) and bool(tpch["match"].all())
    nulls = int(
        spark.read.format("delta").load(str(catalog / "columns")).agg(F.sum("n_nulls")).first()[0] or 0
    )
    print(
        f"\ncatalog n_rows equal the tables' live row counts: {consistent}; null cells in the lake: {nulls}"
    )
    print("\nDAG runs (wall time):")
    for dag_id, which, seconds in timings:
        print(f"  {dag_id:28} {which:7} {seconds:6.0f} s")
    sql = "SELECT fk_table, fk_columns, pk_table, pk_columns, emd FROM lakemeta.fk_candidates WHERE accepted"
    session = f"get_session(catalog=Path('{catalog}'), extra_conf=metastore_conf())"
    print(
        "\n".join(
            [
                "",
                "Where to look next:",
                f"  the Airflow UI, these runs in it: LAKEMETA_LAKE={lake} LAKEMETA_CATALOG={catalog} \\",
                "    make airflow",
                "    then http://127.0.0.1:8080, user admin, password in "
                ".airflow/simple_auth_manager_passwords.json.generated",
                f"  the catalog: {catalog}",
                f"  a query without a JVM: .venv/bin/lakemeta show --catalog {catalog} fk_candidates",
                "  a query in Spark SQL (the database lakemeta holds the published versions):",
                '    .venv/bin/python -c "from pathlib import Path; '
                f"from lakemeta.spark import get_session, metastore_conf; {session}.sql('{sql}').show()\"",
            ]
        )
    )
    return 0 if consistent else 1


def _run_dags(env: dict[str, str], which: str) -> list[tuple[str, str, float]]:
    """lakemeta_incremental then lakemeta_discovery (which its asset would start under the scheduler)."""
    seconds = run_dags([("lakemeta_incremental", None), ("lakemeta_discovery", None)], env).seconds
    for dag_id, took in seconds.items():
        print(f"    {dag_id}: succeeded in {took:.0f} s")
    return [(dag_id, which, took) for dag_id, took in seconds.items()]


def _last_run(catalog: Location) -> tuple[int, dict[str, str]]:
    """The last run's id and, per table it changed, where its batch came from (``state/batches``)."""
    batches = read_catalog_table(catalog, "state/batches")
    last = int(batches.run_id.max())
    of_last = batches[batches.run_id == last]
    return last, dict(zip(of_last.table_name, of_last.source, strict=True))
