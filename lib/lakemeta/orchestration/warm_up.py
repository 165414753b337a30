"""A warm-up of a long-running Spark driver (the Connect server): the pipeline twice over a tiny lake.

On a Connect server just started, the first run of a small lake took markedly longer than on a server that
had run before, its first MERGE many times as long (bench/small_change.py; docs/performance.md,
"Measurements behind the code"): the JVM loads and compiles Spark's and Delta's code paths (the scan's Arrow
exchange, MERGE, the Delta log's replay and commit, code generation) the first time a step uses them. Run
once when the server starts (infra/airflow/start.sh, the systemd unit's ``ExecStartPost``), the warm-up
pays that before any task does.

It runs what a run runs: a first run (every state component's first write, every discovery step), then,
after a change, an incremental run (every MERGE on stored state). It works on a lake and a catalog of its
own in a scratch folder beside the configured catalog's staged rows, removed afterwards, and publishes
nothing: the configured lake and catalog are neither read nor written.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid

import pyarrow as pa
from pyspark.sql import SparkSession

from lakemeta.config import Config
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.scan import STAGING

log = logging.getLogger(__name__)

# Two schemas' worth of shapes: a key and a foreign key, a nullable text column, a small lookup table.
WARM_UP_TABLES = {
    "shop/orders": pa.table({"id": [1, 2, 3, 4], "note": ["a", None, "c", "d"]}),
    "shop/items": pa.table({"order_id": [1, 1, 2, 3, 4], "quantity": [2, 1, 5, 1, 3]}),
    "regions": pa.table({"region": ["north", "south"]}),
}


def warm_up(spark: SparkSession, config: Config) -> float:
    """Run the pipeline on a tiny lake of its own through ``spark`` (a session of the server to warm), a
    first run and an incremental one; the seconds it took."""
    _lake, catalog = config.require_paths()
    scratch = catalog / STAGING / f"warm-up-{uuid.uuid4().hex}"
    own = dataclasses.replace(config, lake=scratch / "lake", catalog=scratch / "catalog")
    started = time.perf_counter()
    try:
        for name, rows in WARM_UP_TABLES.items():
            (own.lake / name).write_delta(rows)
        Pipeline(spark, own).run()
        orders = WARM_UP_TABLES["shop/orders"]
        (own.lake / "shop/orders").write_delta(orders.slice(0, 1), mode="append")
        Pipeline(spark, own).run()
    finally:
        scratch.remove_tree()
    seconds = time.perf_counter() - started
    log.info("warm-up: two runs over %d tables in %.1f s", len(WARM_UP_TABLES), seconds)
    return seconds
