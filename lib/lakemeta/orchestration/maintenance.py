"""Table maintenance of the catalog: compaction, log checkpoints and VACUUM of every state and catalog table
(``lakemeta maintain``, the DAG ``lakemeta_maintenance``), with delta-rs: no JVM.

Why: every run MERGEs the state tables and rewrites result tables, so hourly runs leave about 8,760 versions
per table a year and ever more small files, which every read lists and opens. Compaction rewrites the small
files of a table (of each partition of the tables bucketed by ``table_name``) into few; a checkpoint
spares readers the replay of the JSON log; VACUUM deletes the data files no kept version reads.

What stays readable: every version committed inside the retention window (``maintenance.retention_days``,
default 7 days: ``lakemeta show --as-of`` and Delta time travel), and, however old, the version of each
table that the newest publication points the database's views and ``lakemeta show`` at (``published``).
A file a version reads was removed, if ever, by a later commit, whose time is not before that version's;
VACUUM deletes only files removed before its horizon, so a horizon at or before a version's commit time
keeps the version whole. The horizon of a table is the earlier of now - retention and the commit time of its
published version, in whole hours (delta-rs's VACUUM takes hours), rounded so as to keep more.

Its commits change no table's rows (Delta's OPTIMIZE and VACUUM): the newest publication stays current
(``publish.publication_is_current``), so the next run with nothing changed does not audit and publish again.

A state table that its component keeps partitioned by a bucket of ``table_name``
(``StateComponent.bucketed_by_table``, ``lakemeta.catalog.layout``) but that a catalog created before that
layout holds unpartitioned or partitioned by ``table_name`` is rewritten in the layout, once (the pipeline
refuses a table without the bucket until then): a batch's MERGE then reads and rewrites only the files of
its tables' buckets, and a full read opens a file per bucket rather than per table.

The quality gate's results files (``_quality/``: one per audit, one per run's batch audit) go the same way
once older than the retention, but for the newest ``AUDITS_SHOWN`` of each kind, which the Data Docs show,
and the audit the newest publication names.

The state lease is held alone meanwhile (as a rebuild holds it): no step writes a table while it is
compacted, and the steps that start wait for the maintenance to end.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from datetime import UTC, datetime, timedelta

from lakemeta.catalog.layout import (
    BUCKET_COLUMN,
    LAYOUT_PROPERTIES,
    arrow_batches_with_bucket,
    writer_properties,
)
from lakemeta.catalog.leases import EXCLUSIVE, LEASE_SECONDS, Lease
from lakemeta.catalog.publication import newest_publication, published_versions
from lakemeta.catalog.store import read_small
from lakemeta.quality.results import AUDITS_SHOWN, QUALITY_FOLDER, results_file_kind
from lakemeta.registry import open_catalog
from lakemeta.storage import Location

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did to one table: its data files before and after, whether it was rewritten
    partitioned by a bucket of ``table_name``, the files compaction rewrote and VACUUM deleted, and the
    horizon of its VACUUM (versions committed since stay readable)."""

    table: str
    files_before: int
    files_after: int
    rebucketed: bool
    compacted: int
    vacuumed: int
    horizon: datetime


@dataclasses.dataclass(frozen=True)
class CatalogMaintenance:
    """What maintenance did: per table, and the quality gate's results files it deleted."""

    tables: list[TableMaintenance]
    results_deleted: list[str]


def maintain_table(
    location: Location, name: str, retention_hours: int, published: int | None, bucketed: bool = False
) -> TableMaintenance:
    """Compact the table, checkpoint its log and VACUUM the files that no version of the last
    ``retention_hours`` hours reads, nor the ``published`` version (None: none published); first rewrite
    it partitioned by a bucket of ``table_name`` if ``bucketed`` and it is not."""
    table = location.delta_table()  # delta-rs moves it to each version it commits
    kept_hours = retention_hours
    if published is not None:
        entry = next(e for e in table.history(table.version() - published + 1) if e["version"] == published)
        kept_hours = max(kept_hours, _hours_since(datetime.fromtimestamp(entry["timestamp"] / 1000, UTC)))
    files_before = len(table.file_uris())
    rebucketed = bucketed and table.metadata().partition_columns != [BUCKET_COLUMN]
    if rebucketed:
        _partition_by_bucket(location)
        table.update_incremental()
    metrics = table.optimize.compact(writer_properties=writer_properties(name))
    table.create_checkpoint()
    deleted = table.vacuum(retention_hours=kept_hours, dry_run=False, enforce_retention_duration=False)
    return TableMaintenance(
        name,
        files_before,
        len(table.file_uris()),
        rebucketed,
        int(metrics.get("numFilesRemoved", 0)),
        len(deleted),
        datetime.now(UTC) - timedelta(hours=kept_hours),
    )


def _partition_by_bucket(location: Location) -> None:
    """Rewrite the table partitioned by a bucket of ``table_name`` (its rows gain the bucket), with the
    layout's properties, in one commit. Streamed: batches are read and written a few at a time, and the
    files read stay until a VACUUM."""
    rows = arrow_batches_with_bucket(location.delta_dataset().scanner().to_reader())
    location.write_delta(rows, mode="overwrite", partition_by=[BUCKET_COLUMN], schema_mode="overwrite")
    location.delta_table().alter.set_table_properties(LAYOUT_PROPERTIES)


def _hours_since(moment: datetime) -> int:
    # delta-rs's VACUUM takes whole hours; rounded up, its horizon only moves earlier: more is kept
    return max(0, math.ceil((datetime.now(UTC) - moment).total_seconds() / 3600))


def prune_results(root: Location, retention: timedelta) -> list[str]:
    """Delete the quality gate's results files from before ``now - retention`` (an audit by its time, a
    batch audit by its run's start), but the newest ``AUDITS_SHOWN`` of each kind and the audit of the
    newest publication; the names deleted."""
    folder = root / QUALITY_FOLDER
    if not folder.exists():
        return []
    horizon = datetime.now(UTC) - retention
    runs = read_small(root, "runs").select(["run_id", "started_at"]).to_pylist()
    started = {row["run_id"]: row["started_at"].replace(tzinfo=UTC) for row in runs}
    published = {Location.parse(audit).name for audit in newest_publication(root)["audit"].to_pylist()}
    by_kind: dict[str, list[tuple[datetime | int, str]]] = {"audit": [], "batches": []}
    for name, is_folder in folder.children():
        kind = None if is_folder else results_file_kind(name)
        if kind is not None:
            by_kind[kind[0]].append((kind[1], name))
    old = []
    for kind, files in by_kind.items():
        for key, name in sorted(files)[:-AUDITS_SHOWN]:
            at = key if kind == "audit" else started.get(key)
            if at is not None and at < horizon and name not in published:
                old.append(name)
    folder.delete(old)
    return old


def maintain_tables(root: Location, retention: timedelta) -> CatalogMaintenance:
    """Maintain every Delta table of the catalog at ``root`` and its results files (module docstring),
    holding the state lease alone; what was done."""
    done = []
    with Lease(root, "state", LEASE_SECONDS).hold(EXCLUSIVE, "maintaining the catalog's tables") as hold:
        published = published_versions(root)
        bucketed = open_catalog(None, root).bucketed_by_table
        retention_hours = math.ceil(retention.total_seconds() / 3600)
        for location in sorted(root.walk_tables(), key=str):
            name = root.relative(location)
            hold.check()  # the fence (``lakemeta.catalog.leases``): a stalled maintenance stops here
            done.append(
                maintain_table(location, name, retention_hours, published.get(name), name in bucketed)
            )
        pruned = prune_results(root, retention)
    log.info(
        "maintained %d tables: %d data files before, %d after; %d rewritten partitioned by table bucket, "
        "%d compacted, %d deleted by VACUUM; %d results files of the quality gate deleted (retention %g "
        "days, published versions kept)",
        len(done),
        sum(t.files_before for t in done),
        sum(t.files_after for t in done),
        sum(t.rebucketed for t in done),
        sum(t.compacted for t in done),
        sum(t.vacuumed for t in done),
        len(pruned),
        retention.total_seconds() / 86400,
    )
    return CatalogMaintenance(done, pruned)
