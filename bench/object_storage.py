"""Object storage beside local disk: the same lake in a local folder and in the S3-compatible server on
this machine (Versity Gateway, ``lakemeta.reference.s3_server``), each with its catalog beside it, through
``lakemeta run`` (the CLI, one process each: plan, scan, state, commit, discovery, audit, publish): the
first run (every table new) and a run after a one-table batch (rows appended to one table by another
engine, delta-rs). Reported: seconds of each run, the ratio S3 / local, and whether the two catalogs are
equal (every catalog and state table, times and the audit file's name aside). Target: the first run on S3
within 1.5x of local disk.

Lakes: ``demo`` (the demo's: TPC-H at scale 0.01 and 200 generated web tables) and ``tpch_1`` (TPC-H at
scale 1; ``--lakes demo,tpch_1``). Each lake is written once to local disk (delta-rs) and copied file for
file into the bucket, so both runs read the same tables, logs and table ids.

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

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from deltalake import write_deltalake

from lakemeta.demo import write_tpch_lake
from lakemeta.demo.webtables import write_web_tables
from lakemeta.reference import s3_server
from lakemeta.registry import all_schemas
from lakemeta.storage import Location

ROOT = Path(__file__).resolve().parent
SCRATCH = ROOT / "results" / "scratch" / "object_storage"
RESULT = ROOT / "results" / "object_storage.json"
TARGET_RATIO = 1.5


def tpch(scale: str, folder: Path) -> None:
    write_tpch_lake(folder / "tpch", SCRATCH / f"tpch_{scale}_parquet", scale)


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


def timed_run(lake: Location, catalog: Location, log: Path) -> float:
    """``lakemeta run`` in a process of its own; its wall time (a failed quality gate is timed too)."""
    command = [
        str(Path(sys.executable).with_name("lakemeta")),
        "run",
        "--lake",
        lake.uri,
        "--catalog",
        catalog.uri,
    ]
    started = time.perf_counter()
    with log.open("w") as output:
        done = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=False)
    seconds = round(time.perf_counter() - started, 1)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"lakemeta run failed ({done.returncode}); see {log}")
    return seconds


# Columns that differ between two runs doing the same work: times, and the audit file a publication names.
VOLATILE = {"updated_at", "started_at", "finished_at", "published_at", "audit", "previous_discovery_at"}


def catalog_fingerprints(catalog: Location) -> dict[str, tuple[int, int]]:
    """Per catalog and state table, its rows' count and the sum of their hashes modulo 2^64, volatile
    columns aside: equal multisets of rows give equal fingerprints. Read in batches, so that state tables
    of a hundred million rows (TPC-H 1's posting lists) fit in memory."""
    fingerprints = {}
    for name in sorted(all_schemas()):
        dataset = (catalog / name).delta_dataset()
        kept = [column for column in dataset.schema.names if column not in VOLATILE]
        rows, total = 0, 0
        for batch in dataset.to_batches(columns=kept):
            columns = [  # a list as one string (pandas hashes strings and bytes, not lists)
                pc.binary_join(batch[c].cast(pa.list_(pa.string())), "\x1f")
                if pa.types.is_list(batch[c].type)
                else batch[c]
                for c in kept
            ]
            frame = pa.RecordBatch.from_arrays(columns, names=kept).to_pandas()
            hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
            total = (total + int(hashes.sum(dtype=np.uint64))) % 2**64
            rows += len(frame)
        fingerprints[name] = (rows, total)
    return fingerprints


def measure(server: s3_server.S3Server, name: str) -> dict:
    folder, changed = local_lake(name)
    bucket = Location.parse(server.prefix(name))
    Location.parse(folder).copy_tree(bucket / "lake")
    places = {
        "local": (Location.parse(folder), Location.parse(SCRATCH / name / "catalog")),
        "s3": (bucket / "lake", bucket / "catalog"),
    }
    shutil.rmtree(SCRATCH / name / "catalog", ignore_errors=True)
    seconds: dict[str, dict[str, float]] = {"first_run": {}, "one_table_batch": {}}
    logs = SCRATCH / name
    for place, (lake, catalog) in places.items():
        seconds["first_run"][place] = timed_run(lake, catalog, logs / f"first-{place}.log")
        print(f"{name} first run, {place}: {seconds['first_run'][place]} s", flush=True)
    for place, (lake, catalog) in places.items():
        table = lake / changed  # three of its rows again, appended by delta-rs
        table.write_delta(table.delta_dataset().to_table().slice(0, 3), mode="append")
        seconds["one_table_batch"][place] = timed_run(lake, catalog, logs / f"batch-{place}.log")
        print(f"{name} one-table batch, {place}: {seconds['one_table_batch'][place]} s", flush=True)
    ratios = {run: round(times["s3"] / times["local"], 2) for run, times in seconds.items()}
    return {
        "tables": len(list(Location.parse(folder).walk_tables())),
        "lake_bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()),
        "batch_table": changed,
        "seconds": seconds,
        "ratio_s3_to_local": ratios,
        "first_run_target_met": ratios["first_run"] <= TARGET_RATIO,
        "catalogs_equal": catalog_fingerprints(places["local"][1]) == catalog_fingerprints(places["s3"][1]),
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
        for name in args.lakes.split(","):
            measured = measure(server, name)
            results[name] = {"measured_at": datetime.now().isoformat(timespec="seconds"), **measured}
            results["server"] = "versitygw v1.8.0 (posix backend) on 127.0.0.1, the same machine"
            RESULT.write_text(json.dumps(results, indent=2) + "\n")
            print(name, json.dumps(results[name], indent=2), flush=True)


if __name__ == "__main__":
    main()
