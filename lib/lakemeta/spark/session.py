"""The one Spark session factory used by jobs, tests and the CLI.

It wires Delta Lake (SQL extension and catalog) from the jars that set-up fetched into ``.cache/jars``
(``LAKEMETA_JARS`` names another folder), pins Spark to the loopback interface and to this
interpreter's Python, and sizes shuffles for a small machine. The same settings are handed to spark-submit
through :func:`spark_conf` and :func:`delta_jars` (by the Spark Connect server, ``lakemeta.spark.connect``,
and whoever submits a job under jobs/), because there the JVM exists before any Python code could
configure it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from lakemeta.spark.serving import require_serving
from lakemeta.storage import Location, spark_settings

if TYPE_CHECKING:
    from pyspark.sql.connect.client.retries import RetryPolicy

REPO_ROOT = Path(__file__).resolve().parents[3]


def delta_jars() -> list[str]:
    """Paths of the Delta jars fetched at set-up; a clear error when set-up has not run."""
    folder = Path(os.environ.get("LAKEMETA_JARS", REPO_ROOT / ".cache" / "jars"))
    jars = sorted(str(path) for path in folder.glob("*.jar"))
    if not any("delta-spark" in Path(jar).name for jar in jars):
        raise RuntimeError(f"Delta jars not found in {folder}: run `make setup` first")
    return jars


def spark_environment() -> dict[str, str]:
    """Environment that must hold before a JVM or a Python worker starts (values already set win)."""
    env = {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "NUMBA_CACHE_DIR": str(REPO_ROOT / ".cache" / "numba"),
    }
    if "JAVA_HOME" not in os.environ:
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("no Java runtime: install a JDK 17+ or set JAVA_HOME")
        env["JAVA_HOME"] = str(Path(java).resolve().parents[1])
    return {key: os.environ.get(key, value) for key, value in env.items()}


def prepare_environment() -> None:
    os.environ.update(spark_environment())


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands its gateway to the Python driver."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def metastore_home(catalog: Location) -> Path:
    """Where the embedded metastore (Derby) of a catalog lives: beside a local catalog; for one in an
    object store, in a local folder named after it (Derby needs a local disk; deployments on several
    hosts use an external Hive metastore, ``metastore_uri``)."""
    if catalog.is_local:
        return catalog.local_path() / "_metastore"
    digest = hashlib.sha256(catalog.uri.encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "lakemeta" / "metastore" / digest


def local_cores(master: str | None) -> int | None:
    """The cores of a local master (``local``, ``local[4]``, ``local[*]``, ``local[4,2]``,
    ``local-cluster[2,1,1024]``); None for a cluster's (``spark://...``) or an unknown one."""
    if master is None:
        return None
    if master == "local":
        return 1
    if found := re.fullmatch(r"local\[(\*|\d+)(?:,\d+)?\]", master):
        return os.cpu_count() or 1 if found.group(1) == "*" else int(found.group(1))
    if found := re.fullmatch(r"local-cluster\[(\d+),(\d+),\d+\]", master):
        return int(found.group(1)) * int(found.group(2))
    return None


def parallelism_conf(master: str | None) -> dict[str, str]:
    """How many tasks a stage is cut into. On a local master, twice its cores, for shuffles and RDDs alike:
    Spark's 200 shuffle partitions would be 200 tiny tasks on 2 cores. On a cluster, nothing: the default
    parallelism is the executors' cores, and a shuffle's 200 partitions are coalesced by adaptive query
    execution (``spark.sql.adaptive.coalescePartitions``) to what the data needs - a constant would cap a
    cluster of any size at its value."""
    cores = local_cores(master)
    if cores is None:
        return {}
    tasks = str(2 * cores)
    return {"spark.sql.shuffle.partitions": tasks, "spark.default.parallelism": tasks}


def spark_conf(
    catalog: Location | Path | None = None,
    locations: Iterable[Location | None] = (),
    master: str | None = None,
) -> dict[str, str]:
    """Spark settings shared by local sessions, the Connect server and spark-submit, for ``master`` (None:
    spark-submit's, unknown here; see ``parallelism_conf``).

    With ``catalog`` given, the embedded metastore and warehouse live beside the catalog so that the
    database ``lakemeta`` persists across sessions. ``locations`` (and the catalog) add the settings
    their storage needs (``lakemeta.storage``).
    """
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        **parallelism_conf(master),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Executors hand rows to the numba kernels as Arrow batches; at the default 10,000 rows per batch
        # the per-batch cost of the JVM-to-Python transfer dominated the HLL tally on TPC-H lineitem.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.sql.session.timeZone": "UTC",
        # The value sets and posting lists keep one partition per lake table, so a scan of all of them
        # opens one small file per table. At the default cost of 4 MB per file open, 20,000 tables made
        # some 600 tasks of a few dozen files each: Many's inputs from scratch took far longer than at 64 kB
        # (bench/many_inds.py's corpus; docs/performance.md, "Measurements behind the code"); scans of large
        # files are cut by maxPartitionBytes alone.
        "spark.sql.files.openCostInBytes": str(64 * 1024),
        # Constraint propagation grows with the square of a projection's columns and their aliases: the
        # posting-list update of a 1,000-column table ran the driver out of heap in the optimizer. The
        # filters it infers (IsNotNull before joins) are not needed by any plan here.
        "spark.sql.constraintPropagation.enabled": "false",
        # A pipeline run over a three-table lake generates some 400 classes (projections, joins, MERGE
        # plans), the same ones run after run. Spark's cache keeps 100, so each later run compiled ~320 of
        # them again (Janino, then the JIT, then G1 unloading the evicted ones: CodegenMetrics counted
        # 320 compilations a run); at 1,000 a later run compiles a handful.
        "spark.sql.codegen.cache.maxEntries": "1000",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        "spark.executorEnv.NUMBA_CACHE_DIR": os.environ.get(
            "NUMBA_CACHE_DIR", str(REPO_ROOT / ".cache" / "numba")
        ),
        "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
    }
    catalog = None if catalog is None else Location.parse(catalog)
    conf.update(spark_settings([catalog, *locations]))
    if catalog is not None:
        conf["spark.sql.warehouse.dir"] = str(catalog / "_warehouse")
        conf["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={metastore_home(catalog)}"
    return conf


def metastore_conf(metastore_uri: str | None = None) -> dict[str, str]:
    """Settings of a session that reads and writes the Spark SQL database ``lakemeta``: Spark's Hive catalog
    on the embedded Derby metastore that :func:`spark_conf` places beside the catalog, or on an external
    Hive metastore at ``metastore_uri`` (``thrift://host:9083``). Embedded Derby admits one JVM at a time,
    so only the sessions that register or query the database ask for it."""
    conf = {"spark.sql.catalogImplementation": "hive"}
    if metastore_uri:
        conf["spark.hadoop.hive.metastore.uris"] = metastore_uri
    return conf


# How a Spark Connect client waits out a server that is down: about as long as pyspark's default policy
# (15 retries, the wait multiplied by 4 up to 60 s: some 10 minutes), in waits of at most 5 s. With the
# default a task whose server was restarted went on waiting long after the new server was up (the
# running-Airflow test's task logs; docs/performance.md, "Measurements behind the code"), before learning
# that its session had gone with the old one.
_RETRY_MAX_BACKOFF_MS = 5_000
_RETRY_TOLERATED_MS = 10 * 60 * 1000


def prompt_retry_policy() -> RetryPolicy:
    """pyspark's default retry policy, waiting 50 ms, then twice as long each time up to 5 s, for some
    10 minutes in all (the seven waits below 5 s add up to 6.4 s)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    retries = 7 + _RETRY_TOLERATED_MS // _RETRY_MAX_BACKOFF_MS
    return DefaultPolicy(max_retries=retries, backoff_multiplier=2.0, max_backoff=_RETRY_MAX_BACKOFF_MS)


def with_prompt_retries(spark: SparkSession) -> SparkSession:
    """``spark``, a Spark Connect client, retrying by ``prompt_retry_policy``: it finds a restarted server
    within seconds."""
    spark.client.set_retry_policies([prompt_retry_policy()])
    return spark


def get_session(
    master: str = "local[*]",
    app_name: str = "lakemeta",
    catalog: Location | Path | None = None,
    extra_conf: dict[str, str] | None = None,
    locations: Iterable[Location | None] = (),
    remote: str | None = None,
) -> SparkSession:
    """A Spark session with Delta, for ``master`` (``local[*]``, ``local-cluster[...]`` or ``spark://...``),
    able to read and write the catalog and ``locations`` (the lake).

    Under spark-submit the master and jars come from the command line and this returns that session.
    With ``remote`` (``sc://localhost:15002``), a new session of that Spark Connect server
    (``lakemeta.spark.connect``), which was started with all of this already.
    """
    if remote:
        require_serving(remote)
        return with_prompt_retries(SparkSession.builder.remote(remote).appName(app_name).create())
    prepare_environment()
    builder = SparkSession.builder.appName(app_name)
    if not under_spark_submit():
        builder = builder.master(master).config("spark.jars", ",".join(delta_jars()))
        builder = builder.config("spark.driver.memory", os.environ.get("LAKEMETA_DRIVER_MEMORY", "4g"))
    submitted = None if under_spark_submit() else master  # spark-submit's master is its command line's
    for key, value in {**spark_conf(catalog, locations, submitted), **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
