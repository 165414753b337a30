"""Table maintenance (``lakemeta.orchestration.maintenance``) on a catalog written with delta-rs: compaction,
VACUUM within the retention, and the published version kept however short the retention."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, Field, write_deltalake

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.layout import BUCKET_COLUMN, LAYOUT_PROPERTIES, bucket_of, writer_properties
from lakemeta.catalog.leases import LeaseLostError
from lakemeta.catalog.reflects import recorded_reflects
from lakemeta.catalog.store import Txn
from lakemeta.orchestration import maintenance
from lakemeta.orchestration.maintenance import maintain_table, maintain_tables
from lakemeta.orchestration.publish import publication_is_current
from lakemeta.quality.gate import AUDITED
from lakemeta.quality.results import QUALITY_FOLDER, audit_file, batches_file
from lakemeta.storage import Location

PUBLISHED_AT = pa.timestamp("us", tz="UTC")
PUBLISHED = pa.schema(
    [
        ("table_name", pa.string()),
        ("version", pa.int64()),
        ("published_at", PUBLISHED_AT),
        ("audit", pa.string()),
    ]
)


def rows(value: int) -> pa.Table:
    return pa.table({"table_name": ["t"], "n": [value]})


@pytest.fixture
def catalog(tmp_path):
    """A catalog: ``columns`` overwritten four times (versions 0-3, version 1 published), ``runs``
    overwritten twice (nothing published), and ``state/column_values`` partitioned by table bucket,
    appended to six times (six small files in each of two partitions)."""
    root = tmp_path / "catalog"
    for value in range(4):
        write_deltalake(str(root / "columns"), rows(value), mode="overwrite")
    for value in range(2):
        write_deltalake(str(root / "runs"), rows(value), mode="overwrite")
    for value in range(6):
        batch = pa.table(
            {
                "table_name": ["a", "b"],
                "hash": [value, value],
                "count": [1, 1],
                BUCKET_COLUMN: pa.array([bucket_of("a"), bucket_of("b")], pa.int32()),
            }
        )
        write_deltalake(
            str(root / "state" / "column_values"), batch, mode="append", partition_by=[BUCKET_COLUMN]
        )
    published = pa.table(
        {
            "table_name": ["columns"],
            "version": [1],
            "published_at": [datetime.now(UTC)],
            "audit": ["audit-1.json"],
        },
        schema=PUBLISHED,
    )
    write_deltalake(str(root / "published"), published)
    return root


def readable(path, version: int) -> bool:
    """Whether every file of the version is there."""
    try:
        DeltaTable(str(path), version=version).to_pyarrow_table()
    except OSError:
        return False
    return True


def test_no_retention_vacuums_old_versions_but_keeps_the_published_one(catalog):
    done = {t.table: t for t in maintain_tables(Location.parse(catalog), timedelta(0)).tables}

    assert set(done) == {"columns", "runs", "published", "state/column_values"}
    # nothing published: the overwritten version's file is gone, the newest is whole
    assert done["runs"].vacuumed == 1
    assert not readable(catalog / "runs", 0)
    assert DeltaTable(str(catalog / "runs")).to_pyarrow_table()["n"].to_pylist() == [1]
    # the published version 1 reads as it was, and with it every later version
    assert DeltaTable(str(catalog / "columns"), version=1).to_pyarrow_table()["n"].to_pylist() == [1]
    for version in (2, 3):
        assert readable(catalog / "columns", version)


def test_compaction_leaves_a_file_per_partition_and_the_same_rows(catalog):
    path = catalog / "state" / "column_values"
    before = (
        DeltaTable(str(path)).to_pyarrow_table().sort_by([("table_name", "ascending"), ("hash", "ascending")])
    )

    done = {t.table: t for t in maintain_tables(Location.parse(catalog), timedelta(days=7)).tables}

    assert (done["state/column_values"].files_before, done["state/column_values"].files_after) == (12, 2)
    assert done["state/column_values"].compacted == 12
    after = DeltaTable(str(path)).to_pyarrow_table()
    assert after.sort_by([("table_name", "ascending"), ("hash", "ascending")]).equals(
        before.select(after.column_names)
    )
    # within the retention nothing is deleted: the version before the compaction still reads
    assert done["state/column_values"].vacuumed == 0
    assert readable(path, 5)


def test_a_checkpoint_is_written(catalog):
    maintain_tables(Location.parse(catalog), timedelta(days=7))
    assert list((catalog / "columns" / "_delta_log").glob("*.checkpoint.parquet"))


def test_a_publication_stays_current_through_maintenance_and_not_through_a_write(tmp_path):
    root = tmp_path / "catalog"
    for name in AUDITED:
        for value in range(3):  # three small files each, for compaction to rewrite
            write_deltalake(str(root / name), rows(value), mode="append")
    published = pa.table(
        {
            "table_name": list(AUDITED),
            "version": [2] * len(AUDITED),
            "published_at": [datetime.now(UTC)] * len(AUDITED),
            "audit": ["audit-1.json"] * len(AUDITED),
        },
        schema=PUBLISHED,
    )
    write_deltalake(str(root / "published"), published)
    assert publication_is_current(Location.parse(root))

    done = maintain_tables(Location.parse(root), timedelta(0)).tables

    assert all(DeltaTable(str(root / name)).version() > 2 for name in AUDITED)  # maintenance committed
    assert sum(t.compacted for t in done) >= 3 * len(AUDITED)
    assert publication_is_current(Location.parse(root))
    write_deltalake(str(root / AUDITED[0]), rows(9), mode="append")
    assert not publication_is_current(Location.parse(root))


@pytest.mark.parametrize("older", [[], ["table_name"]], ids=["unpartitioned", "by-table"])
def test_a_state_table_of_an_older_layout_is_rewritten_partitioned_by_table_bucket_once(tmp_path, older):
    path = tmp_path / "catalog" / "state" / "column_values"
    for value in range(3):  # as catalogs created before the layout hold it
        batch = pa.table({"table_name": ["a", "b", "c"], "hash": [value] * 3, "count": [1, 2, 3]})
        write_deltalake(str(path), batch, mode="append", partition_by=older or None)
    write_deltalake(str(tmp_path / "catalog" / "published"), PUBLISHED.empty_table())  # none published
    before = DeltaTable(str(path)).to_pyarrow_table()

    done = {
        t.table: t for t in maintain_tables(Location.parse(tmp_path / "catalog"), timedelta(days=7)).tables
    }

    table = DeltaTable(str(path))
    assert done["state/column_values"].rebucketed
    assert table.metadata().partition_columns == [BUCKET_COLUMN]
    assert table.metadata().configuration == LAYOUT_PROPERTIES
    expected = [{**row, BUCKET_COLUMN: bucket_of(row["table_name"])} for row in before.to_pylist()]
    after = table.to_pyarrow_table().select([*before.column_names, BUCKET_COLUMN]).to_pylist()
    assert sorted(after, key=repr) == sorted(expected, key=repr)
    assert len({bucket_of(n) for n in "abc"}) == 3
    assert len(table.file_uris()) == 3  # a file per bucket after compaction
    again = {
        t.table: t for t in maintain_tables(Location.parse(tmp_path / "catalog"), timedelta(days=7)).tables
    }
    assert not again["state/column_values"].rebucketed


def test_old_results_files_are_deleted_but_the_newest_and_the_published_audit(tmp_path):
    root = tmp_path / "catalog"
    quality = root / QUALITY_FOLDER
    quality.mkdir(parents=True)
    now = datetime.now(UTC)
    audits = [audit_file(now - timedelta(days=30 - day)) for day in range(15)]  # 30 to 16 days old
    audits.append(audit_file(now - timedelta(hours=1)))
    for name in [*audits, *(batches_file(run) for run in range(1, 14)), "notes.txt"]:
        (quality / name).write_text("{}")
    runs = pa.table(
        {
            "run_id": pa.array(range(1, 14), pa.int64()),
            "started_at": pa.array([now - timedelta(days=20 - run) for run in range(1, 14)], PUBLISHED_AT),
        }
    )
    write_deltalake(str(root / "runs"), runs)
    published = pa.table(
        {
            "table_name": ["columns"],
            "version": [0],
            "published_at": [now],
            "audit": [str(Location.parse(quality / audits[2]))],  # an old audit, still published
        },
        schema=PUBLISHED,
    )
    write_deltalake(str(root / "published"), published)

    deleted = maintain_tables(Location.parse(root), timedelta(days=7)).results_deleted

    kept = {path.name for path in quality.iterdir()}
    # audits: the 6 oldest but the published one go (16 files, the newest 10 are kept whatever their age)
    assert sorted(deleted) == sorted(
        [*(audits[i] for i in (0, 1, 3, 4, 5)), *(batches_file(run) for run in (1, 2, 3))]
    )
    assert audits[2] in kept and "notes.txt" in kept and batches_file(4) in kept


def test_columns_of_random_bits_stay_plain_and_uncompressed_through_compaction(tmp_path):
    # Many's inputs (signatures, value hashes) are written without Snappy or a dictionary, which cost
    # time and save nothing on random bits; compaction must not bring them back.
    path = tmp_path / "catalog" / "state" / "ind_columns"
    for value in range(3):
        words = pa.array([value.to_bytes(8, "little") * 21], pa.binary())
        part = pa.table({"table_name": [f"t{value}"], "signature": words, "value_hashes": words})
        write_deltalake(
            str(path), part, mode="append", writer_properties=writer_properties("state/ind_columns")
        )
    assert writer_properties("columns") is None  # other tables: delta-rs's defaults
    assert maintain_table(Location.parse(path), "state/ind_columns", 168, None).compacted == 3
    (file,) = DeltaTable(str(path)).file_uris()
    row_group = pq.ParquetFile(file).metadata.row_group(0)
    chunks = {row_group.column(i).path_in_schema: row_group.column(i) for i in range(row_group.num_columns)}
    for name in ("signature", "value_hashes"):
        assert chunks[name].compression == "UNCOMPRESSED" and not chunks[name].has_dictionary_page, name
        assert not chunks[name].is_stats_set, name
    assert pq.read_table(file).num_rows == 3


def test_what_a_derived_table_reflects_survives_maintenance_and_not_a_schema_change(tmp_path):
    """A discovery reuses its kept state when the newest commit that wrote it says what it reflects:
    compaction, VACUUM and a table property set are passed over; a new column (old rows lack it) is not."""
    catalog = Catalog(None, Location.parse(tmp_path / "catalog"))
    ensure_tables(catalog)
    name, reflects = "inclusion_estimates", {"run": 3, "settings": "s"}
    schema = catalog.arrow_schema(name)
    row = pa.table({field.name: pa.nulls(1, field.type) for field in schema})
    for run in range(3):  # three files for the compaction to merge
        catalog.append_small(name, row, Txn("estimates", run), reflects=reflects)
    location = catalog.location(name)
    assert maintain_table(location, name, 0, None).compacted == 3
    location.delta_table().alter.set_table_properties({"delta.checkpointInterval": "12"})
    operations = [commit["operation"] for commit in location.delta_table().history(5)]
    assert operations[:4] == ["SET TBLPROPERTIES", "VACUUM END", "VACUUM START", "OPTIMIZE"], operations
    assert recorded_reflects(catalog.delta_table(name)) == reflects
    location.delta_table().alter.add_columns([Field("added", "long")])
    assert recorded_reflects(catalog.delta_table(name)) is None


def test_maintenance_that_lost_its_lease_stops_before_the_next_table(catalog, monkeypatch):
    """The process stalls for an hour during the first table (its clock jumps, its renewals miss): its
    hold of the state lease may be another's by then, so the next table is not touched, and the
    maintenance ends with the loss."""
    root = Location.parse(catalog)
    assert len(list(root.walk_tables())) > 1
    maintained, real, clock = [], maintenance.maintain_table, time.monotonic

    def first_then_stalled(location, name, *arguments):
        maintained.append(name)
        monkeypatch.setattr(time, "monotonic", lambda: clock() + 3600)
        return real(location, name, *arguments)

    monkeypatch.setattr(maintenance, "maintain_table", first_then_stalled)
    with pytest.raises(LeaseLostError):
        maintain_tables(root, timedelta(days=7))
    assert len(maintained) == 1
