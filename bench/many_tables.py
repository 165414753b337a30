"""A lake of many small tables: the whole pipeline's first run and a 10-table batch, per step and per table.

Corpora (each a lake of Delta tables written with delta-rs):
* ``web_2k``: 2,000 generated tables shaped like web tables (3-7 string columns, 12 rows; the generator of
  ``bench/many_inds.py``);
* ``shared_web``: the shared web tables (MATE samples and WDC, ``../shared/data/webtables``; skipped when
  absent) plus the demo's 200 generated web tables;
* ``web_20k``: the 20,000-table corpus of ``bench/many_inds.py`` (``--large``);
* ``tpch_1``: TPC-H at scale 1 (``--tpch``): few large tables, to show no regression. Beside the steps,
  the whole first run by the CLI (``lakemeta run``, one process) at this checkout and at the commit before
  the shared scan (``--baseline-commit``, checked out by ``git worktree`` under the scratch folder) on the
  same lake, before this process starts Spark (the CLI has the machine to itself) and before the steps (a
  stopped run still has the comparison in the results file). ``--keep-baseline-run`` keeps the baseline
  commit's run from the results file when it is of the same commit.

For each: ``Pipeline`` steps as ``lakemeta run`` runs them (detect, scan, every state component, commit,
every discovery step), timed one by one; then 10 tables change (5 get 3 rows appended, 5 lose rows; all
of TPC-H's 8) and the steps run again. Reported: seconds per step, and milliseconds per table for the state
steps. Each run updates its corpora's entries of the results file and keeps the others.

Baseline, in the same process: how every state component read its batches before the shared scan - one
Spark DataFrame per table (its Parquet files listed by delta-rs and read by Spark), the tables' frames
unioned and aggregated in one job (the column profile's row and null counts, the cheapest of the
components) - on the first ``--baseline-tables`` tables of the corpus, against the scan on the same tables.
Per table, ratio = baseline / scan (the scan computing the partial rows of all four components).

    .venv/bin/python bench/many_tables.py [--large] [--tpch] [--only-added] [--baseline-tables 200]
        [--keep-baseline-run]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote

import deltalake
import numpy as np
import pyarrow.csv as pa_csv
import pyspark.sql.functions as F
from checkouts import checkout_lib
from deltalake import DeltaTable, write_deltalake
from many_inds import WEB_TABLES, generate_corpus, web_corpus
from pyspark.sql import DataFrame, SparkSession

from lakemeta.config import Config
from lakemeta.demo import write_tpch_lake
from lakemeta.demo.webtables import write_web_tables
from lakemeta.lake.snapshots import data_files
from lakemeta.lake.tables import discover_tables, source_column, spark_schema
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.registry import DISCOVERY_STEPS
from lakemeta.spark import get_session
from lakemeta.storage import Location

BENCH = Path(__file__).resolve().parent
RESULT = BENCH / "results" / "many_tables.json"
SCRATCH = BENCH / "results" / "scratch" / "many_tables"
CHANGED_TABLES = 10
BEFORE_THE_SCAN = "f4543b2"  # the last commit before the shared scan: each component read its batches itself


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_steps(pipeline: Pipeline) -> tuple[int, dict[str, float]]:
    """One run, step by step as ``Pipeline.run`` orders them; the number of batches and each step's time."""
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    plan = pipeline.detect_batches()
    seconds["detect_batches"] = time.perf_counter() - started
    seconds["scan_batches"] = timed(lambda: pipeline.scan_batches(plan))
    for component in pipeline.components():
        seconds[component.task_id()] = timed(lambda c=component: pipeline.update_state(plan, c.name))
    seconds["commit_batches"] = timed(lambda: pipeline.commit_batches(plan))
    for step in DISCOVERY_STEPS:
        if not step.done_by_commit:
            seconds[step.name] = timed(lambda s=step: pipeline.discover(s.name))
    return len(plan.batches), seconds


def change_tables(lake: Path, rng: np.random.Generator) -> None:
    """Append 3 rows to 5 tables and delete rows from 5 others (delta-rs, as another engine would)."""
    names = discover_tables(Location.parse(lake))
    picked = rng.choice(len(names), min(CHANGED_TABLES, len(names)), replace=False)
    for i, index in enumerate(picked):
        path = str(lake / names[index])
        table = DeltaTable(path)
        rows = table.to_pyarrow_table()
        if i % 2 == 0 or rows.num_rows == 0:
            write_deltalake(path, rows.slice(0, 3), mode="append")
        else:
            first = rows.column_names[0]
            value = rows[first][0].as_py()
            table.delete(f"{first} IS NULL" if value is None else f"{first} = '{value}'")


def profile_by_table_frames(spark: SparkSession, lake: Path, names: list[str]) -> None:
    """The baseline: one DataFrame per table, unioned, row and null counts per column in one job."""
    frames: list[DataFrame] = []
    for name in names:
        table = deltalake.DeltaTable(str(lake / name))
        files = [str(lake / name / unquote(file)) for file in data_files(table)]
        rows = spark.read.schema(spark_schema(table)).parquet(*files)
        cells = F.explode(
            F.array(
                *[
                    F.struct(
                        F.lit(f.name).alias("column_name"), source_column(f.name).isNull().alias("is_null")
                    )
                    for f in rows.schema.fields
                ]
            )
        )
        frames.append(rows.select(F.lit(name).alias("table_name"), cells.alias("c")))
    while len(frames) > 1:  # a balanced tree of unions, as before
        paired = [a.unionByName(b) for a, b in zip(frames[::2], frames[1::2], strict=False)]
        frames = paired + ([frames[-1]] if len(frames) % 2 else [])
    frames[0].select("table_name", "c.*").groupBy("table_name", "column_name").agg(
        F.count(F.lit(1)).alias("n_rows"), F.sum(F.col("is_null").cast("long")).alias("n_nulls")
    ).collect()


def baseline_versus_scan(spark: SparkSession, lake: Path, n_tables: int, work: Path) -> dict:
    """Per table: the baseline's read and count against the shared scan, on the same first tables."""
    names = discover_tables(Location.parse(lake))[:n_tables]
    subset = work / "baseline_lake"
    shutil.rmtree(subset, ignore_errors=True)
    for name in names:
        shutil.copytree(lake / name, subset / name)
    shutil.rmtree(work / "baseline_catalog", ignore_errors=True)
    baseline_s = timed(lambda: profile_by_table_frames(spark, subset, names))
    pipeline = Pipeline(spark, Config(lake=subset, catalog=work / "baseline_catalog"))
    plan = pipeline.detect_batches()
    scan_s = timed(lambda: pipeline.scan_batches(plan))
    return {
        "tables": len(names),
        "baseline_s": round(baseline_s, 2),
        "scan_s": round(scan_s, 2),
        "baseline_ms_per_table": round(1000 * baseline_s / len(names), 1),
        "scan_ms_per_table": round(1000 * scan_s / len(names), 1),
        "ratio": round(baseline_s / scan_s, 1),
    }


def per_table(seconds: dict[str, float], tables: int) -> dict[str, float]:
    state_steps = ["scan_batches", *[s for s in seconds if s.startswith("update_")]]
    return {step: round(1000 * seconds[step] / max(tables, 1), 2) for step in state_steps}


def measure(spark: SparkSession, label: str, lake: Path, baseline_tables: int) -> dict:
    work = SCRATCH / label
    shutil.rmtree(work / "catalog", ignore_errors=True)
    pipeline = Pipeline(spark, Config(lake=lake, catalog=work / "catalog"))
    n_tables = len(discover_tables(Location.parse(lake)))
    first_batches, first = run_steps(pipeline)
    change_tables(lake, np.random.default_rng(3))
    changed_batches, changed = run_steps(pipeline)
    result = {
        "tables": n_tables,
        "first_run": {
            "batches": first_batches,
            "total_s": round(sum(first.values()), 1),
            "seconds": {step: round(s, 2) for step, s in first.items()},
            "state_ms_per_table": per_table(first, first_batches),
        },
        "ten_table_batch": {
            "batches": changed_batches,
            "total_s": round(sum(changed.values()), 1),
            "seconds": {step: round(s, 2) for step, s in changed.items()},
        },
    }
    if baseline_tables:
        result["baseline_versus_scan"] = baseline_versus_scan(spark, lake, baseline_tables, work)
    print(label, json.dumps(result, indent=2), flush=True)
    return result


def fresh_lake(label: str) -> Path:
    lake = SCRATCH / label / "lake"
    shutil.rmtree(lake, ignore_errors=True)
    lake.mkdir(parents=True)
    return lake


def generated_lake(label: str, n_tables: int) -> Path:
    lake = fresh_lake(label)
    generate_corpus(lake, n_tables)
    return lake


def shared_web_lake() -> Path:
    lake = fresh_lake("shared_web")
    if WEB_TABLES.is_dir():
        web_corpus(lake / "web")
    for path in write_web_tables(SCRATCH / "shared_web" / "csv", 200):
        write_deltalake(str(lake / "demo" / path.stem), pa_csv.read_csv(path))
    return lake


def tpch_lake(scale: int) -> Path:
    lake = fresh_lake(f"tpch_{scale}")
    write_tpch_lake(lake, SCRATCH / f"tpch_{scale}_parquet", str(scale))
    return lake


_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO lakemeta\.(\S+?):")


def steps_from_log(log: Path) -> dict[str, float]:
    """Seconds per step of a ``lakemeta run`` from its log: each of the library's INFO lines ends a step
    (named by its logger; a logger's second line gets a suffix), which began at the line before it."""
    steps: dict[str, float] = {}
    previous = None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        found = _LOG_LINE.match(line)
        if not found:
            continue
        at = datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f")
        if previous is not None:
            name, n = found[2], 2
            while name in steps:
                name, n = f"{found[2]} ({n})", n + 1
            steps[name] = round((at - previous).total_seconds(), 1)
        previous = at
    return steps


def whole_runs_by_cli(lake: Path, baseline_commit: str, recorded: dict | None) -> dict:
    """``lakemeta run`` on ``lake`` from a fresh catalog, at this checkout and at ``baseline_commit``; the
    baseline's run is taken from ``recorded`` (an earlier result of this benchmark) when that is of the same
    commit (``--keep-baseline-run``: it takes half an hour)."""
    seconds, exit_codes = {}, {}
    runs = [("baseline_commit", checkout_lib(baseline_commit)), ("this_checkout", BENCH.parent / "lib")]
    if recorded and recorded.get("baseline_commit") == baseline_commit:
        seconds["baseline_commit"] = recorded["seconds"]["baseline_commit"]
        exit_codes["baseline_commit"] = recorded["exit_codes"]["baseline_commit"]
        runs = runs[1:]
    for label, library in runs:
        catalog = SCRATCH / "tpch_1" / f"cli_catalog_{label}"
        shutil.rmtree(catalog, ignore_errors=True)
        command = [
            str(Path(sys.executable).parent / "lakemeta"),
            "run",
            "--lake",
            str(lake),
            "--catalog",
            str(catalog),
        ]
        started = time.perf_counter()
        with (SCRATCH / "tpch_1" / f"cli_{label}.log").open("w") as output:
            done = subprocess.run(
                command, env={**os.environ, "PYTHONPATH": str(library)}, stdout=output, stderr=output
            )
        seconds[label] = round(time.perf_counter() - started, 1)
        exit_codes[label] = done.returncode  # 1 is also a failed quality gate after a complete run
    return {
        "baseline_commit": baseline_commit,
        "seconds": seconds,
        "exit_codes": exit_codes,
        "ratio": round(seconds["this_checkout"] / seconds["baseline_commit"], 2),
        "steps_from_logs_s": {
            label: steps_from_log(SCRATCH / "tpch_1" / f"cli_{label}.log")
            for label in ("baseline_commit", "this_checkout")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also the 20,000-table corpus")
    parser.add_argument("--tpch", action="store_true", help="also TPC-H at scale 1")
    parser.add_argument("--only-added", action="store_true", help="only the corpora --large and --tpch add")
    parser.add_argument("--baseline-tables", type=int, default=200)
    parser.add_argument("--baseline-commit", default=BEFORE_THE_SCAN)
    parser.add_argument(
        "--keep-baseline-run",
        action="store_true",
        help="TPC-H: keep the baseline commit's whole run from the results file instead of running it again",
    )
    args = parser.parse_args()
    results: dict = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    results["load_average_before"] = os.getloadavg()
    if args.tpch:  # before this process starts Spark: the CLI's runs have the machine to themselves
        recorded = results.get("tpch_1", {}).get("whole_first_run_by_cli") if args.keep_baseline_run else None
        results["tpch_1"] = {
            "whole_first_run_by_cli": whole_runs_by_cli(tpch_lake(1), args.baseline_commit, recorded)
        }
        print("tpch_1", json.dumps(results["tpch_1"]), flush=True)
        RESULT.write_text(json.dumps(results, indent=2) + "\n")
    spark = get_session("local[2]", "bench many tables", catalog=SCRATCH / "session")
    lake = generated_lake("warm_up", 20)
    run_steps(Pipeline(spark, Config(lake=lake, catalog=SCRATCH / "warm_up" / "catalog")))
    corpora: list[tuple[str, Callable[[], Path], int]] = []
    if not args.only_added:
        corpora.append(("web_2k", lambda: generated_lake("web_2k", 2000), args.baseline_tables))
        corpora.append(("shared_web", shared_web_lake, args.baseline_tables))
    if args.large:
        corpora.append(("web_20k", lambda: generated_lake("web_20k", 20000), 0))
    if args.tpch:
        corpora.append(("tpch_1", lambda: tpch_lake(1), 0))
    for label, make_lake, baseline_tables in corpora:
        lake = make_lake()
        results.setdefault(label, {}).update(measure(spark, label, lake, baseline_tables))
        results["load_average_after"] = os.getloadavg()
        RESULT.write_text(json.dumps(results, indent=2) + "\n")  # after each corpus: a stopped run keeps them
    spark.stop()
    print(f"results in {RESULT}")


if __name__ == "__main__":
    main()
