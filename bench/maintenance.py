"""Table maintenance after a hundred small runs: the catalog's files with and without ``lakemeta maintain``,
and the MERGE time of a one-table batch on each.

The demo's lake (TPC-H at scale 0.01 and 200 generated web tables, written with delta-rs). A first run, then
``--runs`` small runs (100), each after one web table changed (rows deleted and two appended, by another
engine: delta-rs), each as ``lakemeta run`` does it (the state's steps and the stale discovery steps, the
quality gate, publishing), all in one session of a Spark Connect server. Per run: seconds.

Then the catalog is copied twice and each copy maintained (``maintain_tables``, delta-rs, no JVM):
* ``maintained_7d``: the default retention of 7 days. The hundred runs are minutes old, so VACUUM deletes
  nothing yet: what compaction and checkpoints do on the day.
* ``maintained_0d``: a retention of 0: what VACUUM does to these versions once they are older than the
  retention window (a week later), every published version kept.
Per table and per part (``state/``, the catalog's result tables): data files of the latest version and their
bytes, files and bytes on storage (every version's data files and the log), versions; maintenance's time.

And two more copies maintained with a retention of 0, then with the state tables that lakemeta partitions
by a bucket of ``table_name`` (value sets, posting lists) rewritten in an earlier layout: ``unpartitioned``
(one file each, the first layout) and ``by_table`` (a partition per table, the layout before the buckets),
beside ``maintained_0d``, for what each layout costs a MERGE.

Last, ``--samples`` (3) one-table batches after one not counted (a warm-up: the server has not read the
copies yet): one web table changes, and the five catalogs (unmaintained and the copies) apply it in turn,
in an order rotated per sample: the run's scan, the state components' MERGEs (``update_state``, timed
apart) and its commit.

    .venv/bin/python bench/maintenance.py [--runs 100] [--samples 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from deltalake import write_deltalake
from small_change import change, tpch

from lakemeta.config import Config
from lakemeta.demo.webtables import write_web_tables
from lakemeta.orchestration.maintenance import maintain_tables
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.ports import free_port
from lakemeta.spark import get_session
from lakemeta.spark.connect import TOKEN_VARIABLE, running_server
from lakemeta.storage import Location

ROOT = Path(__file__).resolve().parent
SCRATCH = ROOT / "results" / "scratch" / "maintenance"
RESULT = ROOT / "results" / "maintenance.json"
WEB_TABLES = 200
ARMS = ("unmaintained", "maintained_7d", "maintained_0d", "unpartitioned", "by_table")
EARLIER_LAYOUTS = {"unpartitioned": [], "by_table": ["table_name"]}  # arm: the columns partitioned by


def build_lake(work: Path) -> Path:
    lake = work / "lake"
    tpch(lake)
    for path in write_web_tables(work / "csv", WEB_TABLES):
        write_deltalake(str(lake / "web" / path.stem), pa_csv.read_csv(path))
    return lake


def web_table(lake: Path, number: int) -> Path:
    """The ``number``-th web table (in name order, cyclically): each run changes another."""
    tables = sorted((lake / "web").iterdir())
    return tables[number % len(tables)]


def small_run(pipeline: Pipeline) -> None:
    """What ``lakemeta run`` does: the state's steps, the stale discovery steps, the gate, publishing."""
    pipeline.run()
    audit = pipeline.audit()
    if not audit.success:
        raise RuntimeError(f"quality gate failed: {audit.failures}")
    pipeline.publish(audit)


def table_files(table: Location) -> dict:
    """One Delta table's files: its latest version's data files, and everything stored under it."""
    delta = table.delta_table()
    actions = pa.table(delta.get_add_actions(flatten=True))
    stored = [path for path in table.local_path().rglob("*") if path.is_file()]
    log = [path for path in stored if "_delta_log" in path.parts]
    return {
        "versions": delta.version() + 1,
        "snapshot_files": actions.num_rows,
        "snapshot_bytes": int(pc.sum(actions["size_bytes"]).as_py() or 0),
        "stored_data_files": len(stored) - len(log),
        "stored_data_bytes": sum(path.stat().st_size for path in stored if path not in log),
        "log_files": len(log),
        "log_bytes": sum(path.stat().st_size for path in log),
    }


def catalog_files(catalog: Location) -> dict:
    """``table_files`` of every table of the catalog, and their sums for the state and the results."""
    tables = {catalog.relative(table): table_files(table) for table in sorted(catalog.walk_tables(), key=str)}
    parts = {
        part: {
            key: sum(files[key] for name, files in tables.items() if name.startswith("state/") == is_state)
            for key in next(iter(tables.values()))
        }
        for part, is_state in (("state", True), ("results", False))
    }
    return {"totals": parts, "tables": tables}


def relayout(catalog: Location, names: Iterable[str], partition_by: list[str]) -> None:
    """Rewrite the tables ``names`` of the catalog partitioned by ``partition_by`` (an earlier layout; the
    bucket column stays, as the pipeline needs it), one file per partition."""
    for name in names:
        table = catalog / name
        rows = table.delta_table().to_pyarrow_table()
        table.write_delta(rows, mode="overwrite", partition_by=partition_by, schema_mode="overwrite")
        table.delta_table().vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)


@contextmanager
def timed(into: dict, key: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    into[key] = round(time.perf_counter() - started, 2)


def one_table_batch(pipeline: Pipeline) -> dict:
    """A run over the one changed table, its scan and its state components' MERGEs timed apart."""
    seconds: dict = {}
    plan = pipeline.detect_batches()
    if plan is None or len(plan.batches) != 1:
        raise RuntimeError(f"expected a run over one changed table, planned {plan}")
    with timed(seconds, "scan"):
        pipeline.scan_batches(plan)
    with timed(seconds, "merge"):
        pipeline.update_state(plan)
    with timed(seconds, "commit"):
        pipeline.commit_batches(plan)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="5 runs and 1 sample: a check of the script")
    args = parser.parse_args()
    runs, samples = (5, 1) if args.quick else (args.runs, args.samples)

    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    lake = build_lake(SCRATCH)
    catalogs = {arm: SCRATCH / arm for arm in ARMS}
    config = Config(lake=lake, catalog=catalogs["unmaintained"])
    env = {**os.environ, TOKEN_VARIABLE: os.urandom(16).hex()}
    result: dict = {"lake": f"TPC-H 0.01 and {WEB_TABLES} web tables", "runs": runs}
    with running_server(config, free_port(), SCRATCH / "connect-server.log", env) as url:
        spark = get_session(app_name="lakemeta bench maintenance", remote=url)
        pipeline = Pipeline(spark, config)
        with timed(result, "first_run_seconds"):
            small_run(pipeline)
        run_seconds = []
        for number in range(runs):
            change(web_table(lake, number), number)
            started = time.perf_counter()
            small_run(pipeline)
            run_seconds.append(round(time.perf_counter() - started, 2))
            print(f"run {number + 1}/{runs}: {run_seconds[-1]} s", flush=True)
        tenth = max(1, runs // 10)
        result["run_seconds"] = run_seconds
        result["first_tenth_mean_seconds"] = round(statistics.mean(run_seconds[:tenth]), 2)
        result["last_tenth_mean_seconds"] = round(statistics.mean(run_seconds[-tenth:]), 2)

        maintenance: dict = {}
        for arm, retention in (
            ("maintained_7d", timedelta(days=7)),
            ("maintained_0d", timedelta(0)),
            *((arm, timedelta(0)) for arm in EARLIER_LAYOUTS),
        ):
            shutil.copytree(catalogs["unmaintained"], catalogs[arm])
            with timed(maintenance, arm):
                maintain_tables(Location.parse(catalogs[arm]), retention)
        result["maintenance_seconds"] = maintenance
        for arm, partition_by in EARLIER_LAYOUTS.items():
            relayout(Location.parse(catalogs[arm]), pipeline.catalog.bucketed_by_table, partition_by)
        result["files"] = {arm: catalog_files(Location.parse(catalogs[arm])) for arm in ARMS}

        pipelines = {arm: Pipeline(spark, Config(lake=lake, catalog=catalogs[arm])) for arm in ARMS}
        batches: dict[str, list[dict]] = {arm: [] for arm in ARMS}
        # Sample 0 is a warm-up, not counted: the copies are paths the server has not read yet.
        for sample in range(samples + 1):
            change(web_table(lake, runs + sample), runs + sample)
            order = ARMS[sample % len(ARMS) :] + ARMS[: sample % len(ARMS)]
            for arm in order:
                seconds = one_table_batch(pipelines[arm])
                if sample > 0:
                    batches[arm].append(seconds)
        result["one_table_batch"] = {
            arm: {
                "samples": batches[arm],
                "median_merge_seconds": statistics.median(b["merge"] for b in batches[arm]),
            }
            for arm in ARMS
        }
    unmaintained = result["one_table_batch"]["unmaintained"]["median_merge_seconds"]
    for arm in ARMS[1:]:
        result["one_table_batch"][arm]["merge_ratio_unmaintained_over_this"] = round(
            unmaintained / result["one_table_batch"][arm]["median_merge_seconds"], 2
        )
    result["measured_at"] = datetime.now().isoformat(timespec="seconds")
    if not args.quick:
        RESULT.write_text(json.dumps(result, indent=2) + "\n")
    summary = {key: value for key, value in result.items() if key not in ("files", "run_seconds")}
    summary["totals"] = {arm: result["files"][arm]["totals"] for arm in ARMS}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
