"""Publishing the catalog (write-audit-publish): the versions of its tables that passed the quality gate
become what analysts see, in the Spark SQL database ``lakemeta`` and in ``lakemeta show``.

Each catalog table is a view in the database, pinned to its audited Delta version
(``SELECT * FROM delta.`<catalog>/<table>` VERSION AS OF v``): a discovery run that writes new results
changes nothing for analysts until its audit passes and it is published, and a failed audit leaves the
last published versions in place. Every publication is recorded in the catalog table ``published``.
The metastore is Spark's embedded one beside the catalog by default, or an external Hive metastore
(``metastore_uri``).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pyarrow as pa
from pyspark.sql.types import StructType

from lakemeta.catalog import Catalog, Txn
from lakemeta.catalog.publication import published_versions
from lakemeta.crash_points import crash_point
from lakemeta.quality.gate import AUDITED, require_success
from lakemeta.quality.results import Audit
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)

DATABASE = "lakemeta"


def _path_identifier(path: str) -> str:
    return "`" + path.replace("`", "``") + "`"


# Commits that rewrite or delete a table's files without changing its rows (Delta's dataChange=false):
# those of table maintenance (lakemeta.orchestration.maintenance), after which nothing needs auditing again.
_ROWS_KEPT = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})


def publication_is_current(root: Location) -> bool:
    """Whether the newest publication holds the rows of every audited catalog table as they are: nothing
    but maintenance was committed since it, so there is nothing to audit or publish (Delta logs only: no
    Spark)."""
    versions = published_versions(root)
    return bool(versions) and all(
        name in versions and _rows_unchanged_since(root / name, versions[name]) for name in AUDITED
    )


def _rows_unchanged_since(location: Location, version: int) -> bool:
    table = location.delta_table()
    newer = table.version() - version
    if newer <= 0:
        return newer == 0
    since = table.history(newer)  # the newest first; fewer when the log was cleaned up: not known, False
    return len(since) == newer and all(entry["operation"] in _ROWS_KEPT for entry in since)


def load_snapshots_ahead(catalog: Catalog) -> threading.Thread:
    """Have the Spark server load the latest snapshot of every audited catalog table, in a thread, while
    the driver audits them; the thread, to join before publishing. Pinning a view to a version the server
    has not read yet makes it read the table's log first: the 12 views of TPC-H 0.01's catalog took several
    times as long after a run had written new versions with delta-rs as once the server had loaded them,
    each in a fresh session of a warm server, and loading them in 4 threads took about as long as the
    latter (docs/performance.md, "Measurements behind the code"). A failure is logged: the publication
    reads the logs itself then."""

    def load(name: str) -> StructType:
        # An analysis, not an execution: Spark Connect tags no job of it (the Spark UI lists them untagged)
        return catalog.spark.read.format("delta").load(catalog.path(name)).schema

    def run() -> None:
        try:
            with ThreadPoolExecutor(_LOADING_THREADS) as pool:
                list(pool.map(load, AUDITED))
        except Exception as error:  # a warm-up only
            log.warning("catalog snapshots not loaded ahead (%s: %s)", type(error).__name__, error)

    thread = threading.Thread(target=run, name="lakemeta-catalog-snapshots", daemon=True)
    thread.start()
    return thread


_LOADING_THREADS = 4  # requests in flight: the server mostly waits on the log's files


def publish_audited(catalog: Catalog, audit: Audit) -> int:
    """Point the database's views at the audited versions and record the publication; returns the number
    of tables published (0 when a newer audit is published already). Refuses an audit that failed
    (QualityGateError)."""
    require_success(audit)
    # Under the catalog's lock, and only an audit newer than the last one published: two publishers at
    # once, or an older audit's publish retried late, must not point the views back at older versions.
    with catalog.lock("publishing"):
        if catalog.already_applied("published", Txn("publish", audit.number)):
            log.info("not publishing audit %s: it or a newer audit is published already", audit.path)
            return 0
        return _publish(catalog, audit)


def _publish(catalog: Catalog, audit: Audit) -> int:
    spark = catalog.spark
    if spark.conf.get("spark.sql.catalogImplementation") != "hive":
        raise ValueError(
            "publishing needs a session with a metastore (get_session(extra_conf=metastore_conf()))"
        )
    describe_jobs(spark, f"publish {len(audit.versions)} catalog tables in {DATABASE}")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}` COMMENT 'lakemeta metadata catalog'")
    for name, version in sorted(audit.versions.items()):
        spark.sql(
            f"CREATE OR REPLACE VIEW `{DATABASE}`.`{name}` AS "
            f"SELECT * FROM delta.{_path_identifier(catalog.path(name))} VERSION AS OF {int(version)}"
        )
        crash_point(f"after view {DATABASE}.{name}")
    now = datetime.now(UTC)
    names = sorted(audit.versions)
    record = pa.table(
        {
            "table_name": names,
            "version": pa.array([audit.versions[name] for name in names], pa.int64()),
            "published_at": pa.array([now] * len(names), pa.timestamp("us", tz="UTC")),
            "audit": [str(audit.path)] * len(names),
        }
    )
    catalog.append_small("published", record, Txn("publish", audit.number))
    log.info("published %d catalog tables in database %s (audit %s)", len(names), DATABASE, audit.path)
    return len(names)
