"""Object storage beside local disk: the same lake in a local folder and in the S3-compatible server on
this machine (Versity Gateway, ``lakemeta.reference.s3_server``), each with its catalog beside it, through
the steps of ``lakemeta run`` in one Spark session: the first run (every table new) and a run after a
one-table batch (rows appended to one table by another engine, delta-rs). Reported: seconds of each run
and the ratio S3 / local. Target: the first run on S3 within 1.5x of local disk.

Lakes: ``demo`` (the demo's: TPC-H at scale 0.01 and 200 generated web tables) and ``tpch_1`` (TPC-H at
scale 1; ``--lakes demo,tpch_1``). Each lake is written once to local disk (delta-rs) and copied file for
file into the bucket, so both runs read the same tables, logs and table ids. Publishing (which needs a
metastore) is left out of both; the audit is in.

    .venv/bin/python bench/object_storage.py [--lakes demo,tpch_1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from deltalake import write_deltalake

from lakemeta.config import Config
from lakemeta.demo.webtables import write_web_tables
from lakemeta.pipeline import Pipeline
from lakemeta.reference import s3_server
from lakemeta.storage import Location

ROOT = Path(__file__).resolve().parent
SCRATCH = ROOT / "results" / "scratch" / "object_storage"
RESULT = ROOT / "results" / "object_storage.json"
TARGET_RATIO = 1.5


def tpch(scale: str, folder: Path) -> None:
    parquet = SCRATCH / f"tpch_{scale}_parquet"
    if not parquet.is_dir():
        tool = Path(sys.executable).with_name("tpchgen-cli")
        subprocess.run([str(tool), "parquet", "-s", scale, "--output-dir", str(parquet)], check=True)
    for path in sorted(parquet.glob("*.parquet")):
        write_deltalake(str(folder / "tpch" / path.stem), pq.read_table(path))


def local_lake(name: str) -> tuple[Path, str]:
    """The lake on local disk, and the table the batch appends to."""
    lake = SCRATCH / name / "lake"
    shutil.rmtree(lake, ignore_errors=True)
    if name == "demo":
        tpch("0.01", lake)
        for path in write_web_tables(SCRATCH / name / "csv", 200):
            write_deltalake(str(lake / "web" / path.stem), pa_csv.read_csv(path))
        return lake, "web/cities_0002"
    tpch("1", lake)
    return lake, "tpch/nation"


def upload(folder: Path, prefix: Location) -> None:
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        (prefix / path.relative_to(folder).as_posix()).write_bytes(path.read_bytes())


def timed_run(spark, lake: Location, catalog: Location) -> float:
    started = time.perf_counter()
    pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog))
    pipeline.run()
    if not pipeline.audit().success:
        print(f"  (quality gate failed on {catalog}; timed all the same)", flush=True)
    return round(time.perf_counter() - started, 1)


def measure(spark, server: s3_server.S3Server, name: str) -> dict:
    folder, changed = local_lake(name)
    bucket = Location.parse(server.prefix(name))
    upload(folder, bucket / "lake")
    places = {
        "local": (Location.parse(folder), Location.parse(SCRATCH / name / "catalog")),
        "s3": (bucket / "lake", bucket / "catalog"),
    }
    shutil.rmtree(SCRATCH / name / "catalog", ignore_errors=True)
    seconds: dict[str, dict[str, float]] = {"first_run": {}, "one_table_batch": {}}
    for place, (lake, catalog) in places.items():
        seconds["first_run"][place] = timed_run(spark, lake, catalog)
        print(f"{name} first run, {place}: {seconds['first_run'][place]} s", flush=True)
    for place, (lake, catalog) in places.items():
        table = lake / changed  # three of its rows again, appended by delta-rs
        table.write_delta(table.delta_table().to_pyarrow_table().slice(0, 3), mode="append")
        seconds["one_table_batch"][place] = timed_run(spark, lake, catalog)
        print(f"{name} one-table batch, {place}: {seconds['one_table_batch'][place]} s", flush=True)
    ratios = {run: round(times["s3"] / times["local"], 2) for run, times in seconds.items()}
    return {
        "tables": len(list(Location.parse(folder).walk_tables())),
        "lake_bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()),
        "batch_table": changed,
        "seconds": seconds,
        "ratio_s3_to_local": ratios,
        "first_run_target_met": ratios["first_run"] <= TARGET_RATIO,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lakes", default="demo", help="comma-separated: demo, tpch_1")
    args = parser.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    results = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    server_folder = SCRATCH / "s3-server"
    shutil.rmtree(server_folder, ignore_errors=True)
    server_folder.mkdir(parents=True)
    with s3_server.start(server_folder) as server:
        from lakemeta.spark import get_session

        bucket = Location.parse(f"s3://{s3_server.BUCKET}")
        spark = get_session(
            "local[2]", "bench object storage", catalog=SCRATCH / "session", locations=[bucket]
        )
        for name in args.lakes.split(","):
            results[name] = {
                "measured_at": datetime.now().isoformat(timespec="seconds"),
                **measure(spark, server, name),
            }
            results["server"] = "versitygw v1.8.0 (posix backend) on 127.0.0.1, the same machine"
            RESULT.write_text(json.dumps(results, indent=2) + "\n")
            print(name, json.dumps(results[name], indent=2), flush=True)
        spark.stop()


if __name__ == "__main__":
    main()
