"""Crashes and vanished input lose nothing: a run stopped at any crash point and run again leaves the catalog
an uninterrupted run leaves, and a planned batch whose rows disappeared is planned again, not retried forever.

Stopping the run: ``lakemeta.crash_points.on_reach`` raises at the chosen point, which leaves the files as a
SIGKILL there would (nothing below the point writes in a ``finally`` or a handler); the retry is a new
``Pipeline`` that knows only what is on disk. Real SIGKILLs of processes with their own Spark driver are
tested where they meet the most: a publish killed between two views, in object storage
(tests/spark/test_object_storage.py), and under Airflow a task's driver killed after a state MERGE and a
task's own process killed while its driver works (tests/dags/test_airflow_running.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta import crash_points
from lakemeta.config import Config
from lakemeta.inds.columns import INPUTS
from lakemeta.inds.kept_inputs import COMPUTED_IN
from lakemeta.lake.batches import BatchUnreadableError
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.quality.results import Audit
from lakemeta.registry import all_schemas, state_schemas
from lakemeta.storage import Location

from .lake_changes import (
    SCHEMA,
    create_foreign_table,
    create_spark_table,
    drop_table,
    process,
    random_change,
    random_rows,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Columns that differ between two runs doing the same work: times, the audit file a publication names, the
# run since which a relationship held (below) and the run Many's kept inputs were computed in.
_RUN_DEPENDENT = {
    "updated_at",
    "started_at",
    "finished_at",
    "published_at",
    "audit",
    "first_run",
    COMPUTED_IN,
}
# Every table of the catalog but ``published`` (its publication is checked on its own, against the audit)
# and the history of discoveries: a crash that cut a discovery short before the next run was planned has
# it done over the next run's state, which the uninterrupted catalog discovered run by run. That a retry
# records a discovery's changes once is tested in tests/spark/test_relationships.py.
_COMPARED = sorted(set(all_schemas()) - {"published", "discovery_runs", "relationship_changes"})
# A table whose folder name has a space and a non-ASCII letter, and whose columns need quoting.
_AWKWARD = "sales 2024 ü"


class Killed(BaseException):
    """The run stopped at a crash point (a BaseException, as no ``except Exception`` may catch a kill)."""


def run_killed_at(pipeline: Pipeline, label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pipeline.run()`` stopped at the first reach of the crash point ``label``, as a kill there would."""

    def kill(reached: str) -> None:
        if reached == label:
            raise Killed(reached)

    monkeypatch.setattr(crash_points, "on_reach", kill)
    with pytest.raises(Killed):
        pipeline.run()
    monkeypatch.setattr(crash_points, "on_reach", lambda reached: None)


def current_inputs(table: pa.Table) -> pa.Table:
    """Of Many's kept inputs (``lakemeta.inds.kept_inputs``) each column's newest row, the one holding its
    inputs, without the run it was computed in. The outdated rows, and the run, tell which runs a discovery
    ran over: a crash that cut a discovery short before the next run was planned has it done over that run."""
    keys = ["table_name", "column_name"]
    newest = table.group_by(keys).aggregate([(COMPUTED_IN, "max")]).rename_columns([*keys, COMPUTED_IN])
    return table.join(newest, [*keys, COMPUTED_IN], join_type="inner").drop_columns([COMPUTED_IN])


def catalog_rows(catalog: Path | Location, names: list[str] = _COMPARED) -> dict[str, list[tuple]]:
    """Every compared catalog table's rows (read with delta-rs: small tables, no Spark jobs); of ``runs``
    only those that changed something (a retry after a run committed is a run of its own, which finds
    nothing to do); of Many's kept inputs the current ones."""
    rows = {}
    for name in names:
        table = (Location.parse(catalog) / name).delta_table().to_pyarrow_table()
        if name == "runs":
            table = table.filter(pc.greater(table["tables_changed"], 0))
        if name == INPUTS:
            table = current_inputs(table)
        columns = [c for c in all_schemas()[name].fieldNames() if c not in _RUN_DEPENDENT]
        rows[name] = sorted((tuple(row.values()) for row in table.select(columns).to_pylist()), key=repr)
    return rows


def full_run(spark, lake: Path | Location, catalog: Path | Location) -> Audit:
    """What ``lakemeta run`` does, but for publishing: plan, update, commit, discover, audit."""
    pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog))
    pipeline.run()
    return pipeline.audit()


def write_awkward_table(path: Path, rows: int, rng: np.random.Generator) -> None:
    ids = rng.integers(0, 6, rows)
    write_deltalake(
        str(path),
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "a`b": pa.array([f"tick {i}" for i in ids]),
                "x.y": pa.array(rng.integers(0, 3, rows).astype(float)),
                "naïve": pa.array([None if i % 3 == 0 else f"ü{i}" for i in ids]),
            }
        ),
        mode="append",
    )


def vacuum(path: Path) -> None:
    """What VACUUM with no retention leaves (Spark's VACUUM takes most of a minute): every data file and
    change file the latest version does not list is deleted, and with them the older versions."""
    listed = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).column("path").to_pylist()
    latest = {unquote(file) for file in listed}
    for file in path.rglob("*.parquet"):
        if "_delta_log" not in file.parts and file.relative_to(path).as_posix() not in latest:
            file.unlink()


def test_a_run_killed_at_every_crash_point_and_run_again_equals_an_uninterrupted_run(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    lake, catalog, reference = tmp_path / "lake", tmp_path / "catalog", tmp_path / "reference"
    create_spark_table(spark, lake / "a", random_rows(rng, 8))
    create_spark_table(spark, lake / "web" / "b", random_rows(rng, 6))
    create_foreign_table(lake / "foreign", random_rows(rng, 6))
    write_awkward_table(lake / _AWKWARD, 7, rng)
    first = Pipeline(spark, Config(lake=lake, catalog=catalog))
    process(first, *(c.name for c in first.components()))

    # One batch of every kind: change feed, snapshot diff, a new table, a dropped one, names to quote.
    random_change(spark, rng, lake / "a", foreign=False)
    spark.sql(f"UPDATE delta.`{lake / 'a'}` SET score = -1 WHERE id < 6")
    random_change(spark, rng, lake / "foreign", foreign=True)
    write_awkward_table(lake / _AWKWARD, 3, rng)
    DeltaTable(str(lake / _AWKWARD)).delete("id = 1")
    create_spark_table(spark, lake / "late", random_rows(rng, 5))
    drop_table(lake / "web" / "b")

    shutil.copytree(catalog, reference)
    reached: list[str] = []
    monkeypatch.setattr(crash_points, "on_reach", reached.append)
    full_run(spark, lake, reference)
    # Between an "after" point and the next "before" point nothing is written, so the files are the same
    # at both: the "after" points (and the very first point) are the distinct states a crash can leave.
    distinct = {reached[0]} | {label for label in reached if label.startswith("after ")}
    assert len(distinct) >= 15, reached

    # Each attempt is killed at the first point it reaches that no attempt was killed at yet, a point
    # being a label and its reach in the attempt (the same write at two steps is two points). A retry
    # resumes where the last kill left it, so each attempt goes one point further, and none runs to its
    # end for nothing; the chain ends with the first attempt that reaches no new point.
    killed_at: list[tuple[str, int]] = []
    for _ in range(len(reached) + 1):  # at most one attempt per reach, and the last one
        reaches: list[str] = []

        def kill_at(label: str, reaches: list[str] = reaches) -> None:
            reaches.append(label)
            point = (label, reaches.count(label))
            if label in distinct and point not in killed_at:
                killed_at.append(point)
                raise Killed(label)

        monkeypatch.setattr(crash_points, "on_reach", kill_at)
        try:
            full_run(spark, lake, catalog)
            break
        except Killed:
            pass
        if killed_at[-1] == ("after append runs", 1):  # the plan is stored; the run is not yet done
            # The lake moves on while the killed run waits for its retry: the retry still processes
            # exactly the versions it planned, and the next run the rest.
            spark.sql(f"INSERT INTO delta.`{lake / 'a'}` VALUES (40, 'moved', 4.0)")
    else:
        pytest.fail(f"every attempt was killed: {killed_at}")
    monkeypatch.setattr(crash_points, "on_reach", lambda label: None)
    full_run(spark, lake, catalog)
    full_run(spark, lake, reference)

    # Every distinct point of the uninterrupted run was a kill, at least at its first reach.
    assert distinct <= {label for label, _ in killed_at}, distinct - {label for label, _ in killed_at}
    assert ("after append runs", 1) in killed_at
    ours, theirs = catalog_rows(catalog), catalog_rows(reference)
    assert ours == theirs
    assert [row[:2] for row in ours["runs"]] == [(1, "succeeded"), (2, "succeeded"), (3, "succeeded")]
    assert {row[0] for row in ours["tables"]} == {"a", "foreign", "late", _AWKWARD}
    awkward_columns = {row[1] for row in ours["columns"] if row[0] == _AWKWARD}
    assert awkward_columns == {"id", "a`b", "x.y", "naïve"}


def test_a_planned_batch_whose_rows_vanished_is_planned_again(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    lake = tmp_path / "lake"
    for name in ("vacuumed", "deleted", "flipped", "steady", "vacuumed early"):
        create_spark_table(spark, lake / name, random_rows(rng, 8))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, *(c.name for c in pipeline.components()))

    spark.sql(f"UPDATE delta.`{lake / 'vacuumed'}` SET score = 9 WHERE id < 8")
    spark.sql(f"DELETE FROM delta.`{lake / 'deleted'}` WHERE id < 3")
    spark.sql(f"INSERT INTO delta.`{lake / 'steady'}` VALUES (20, 'new', 1.0)")
    plan = pipeline.detect_batches()
    assert {b.table_name: b.kind for b in plan.batches} == {
        "vacuumed": "incremental",
        "deleted": "incremental",
        "steady": "incremental",
    }
    pipeline.update_state(plan, "hll_counters")  # one component applies the plan's batches...
    # ...then the versions the plan names are vacuumed away, and a table is deleted.
    vacuum(lake / "vacuumed")
    drop_table(lake / "deleted")
    with pytest.raises(BatchUnreadableError, match=r"deleted: .*the table is gone"):
        pipeline.update_state(plan)

    # Meanwhile a schema changes and changes back inside one batch: the feed holds two shapes, the diff one.
    for rows, schema in (([(1, "x")], "id long, other string"), (random_rows(rng, 4), SCHEMA)):
        spark.createDataFrame(rows, schema).write.format("delta").mode("overwrite").option(
            "overwriteSchema", "true"
        ).save(str(lake / "flipped"))
    # And a table changed since its watermark is vacuumed before any plan names it: planned whole.
    spark.sql(f"UPDATE delta.`{lake / 'vacuumed early'}` SET score = 7")
    vacuum(lake / "vacuumed early")

    replanned = pipeline.detect_batches()
    assert replanned.run_id == plan.run_id + 1
    assert {b.table_name: (b.kind, b.source) for b in replanned.batches} == {
        "vacuumed": ("full", "snapshot"),  # the abandoned run's tables are planned again whole
        "deleted": ("drop", "dropped"),
        "steady": ("full", "snapshot"),
        "flipped": ("incremental", "diff"),
        "vacuumed early": ("full", "snapshot"),
    }
    runs = pipeline.catalog.read_small("runs").sort_by("run_id")
    assert runs["status"].to_pylist() == ["succeeded", "abandoned", "running"]
    assert process(pipeline, *(c.name for c in pipeline.components())) == replanned

    reference = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "reference"))
    process(reference, *(c.name for c in reference.components()))
    snapshot_state = sorted(state_schemas())
    assert catalog_rows(tmp_path / "catalog", snapshot_state) == catalog_rows(
        tmp_path / "reference", snapshot_state
    )
