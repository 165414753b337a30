"""Crashes and vanished input lose nothing: a run stopped at any crash point and run again leaves the catalog
an uninterrupted run leaves, and a planned batch whose rows disappeared is planned again, not retried forever.

Stopping the run: ``lakemeta.crash_points.on_reach`` raises at the chosen point, which leaves the files as a
SIGKILL there would (nothing below the point writes in a ``finally`` or a handler); the retry is a new
``Pipeline`` that knows only what is on disk. Two stops are real SIGKILLs of a process with its own
Spark driver: a ``lakemeta run`` after a state MERGE, and the publish between two views. SIGKILLs under
Airflow (a task's driver, a task's own process) are in tests/dags/test_airflow_running.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta import crash_points
from lakemeta.config import Config
from lakemeta.lake.batches import BatchUnreadableError
from lakemeta.pipeline import Pipeline
from lakemeta.quality.gate import Audit
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

# Columns that differ between two runs doing the same work: times, the audit file a publication names, and
# the run since which a relationship held (below).
_RUN_DEPENDENT = {"updated_at", "started_at", "finished_at", "published_at", "audit", "first_run"}
# Every table of the catalog but ``published`` (its publication is checked on its own, against the audit)
# and the history of discoveries: a crash that cut a discovery short before the next run was planned has
# it done over the next run's state, which the uninterrupted catalog discovered run by run. That a retry
# records a discovery's changes once is tested in tests/spark/test_relationships.py.
_COMPARED = sorted(set(all_schemas()) - {"published", "discovery_runs", "relationship_changes"})
# The crash point where a real driver process is SIGKILLed (a separate JVM costs half a minute, so once).
_SIGKILLED = ("after merge state/hll_counters", 1)
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


def catalog_rows(catalog: Path | Location, names: list[str] = _COMPARED) -> dict[str, list[tuple]]:
    """Every compared catalog table's rows (read with delta-rs: small tables, no Spark jobs); of ``runs``
    only those that changed something (a retry after a run committed is a run of its own, which finds
    nothing to do)."""
    rows = {}
    for name in names:
        table = (Location.parse(catalog) / name).delta_table().to_pyarrow_table()
        if name == "runs":
            table = table.filter(pc.greater(table["tables_changed"], 0))
        columns = [c for c in all_schemas()[name].fieldNames() if c not in _RUN_DEPENDENT]
        rows[name] = sorted((tuple(row.values()) for row in table.select(columns).to_pylist()), key=repr)
    return rows


def sigkilled_cli_run(lake: Path, catalog: Path, label: str) -> None:
    """``lakemeta run`` in a process of its own (its own Spark driver), which must die of the SIGKILL it
    sends itself at the crash point ``label``."""
    command = [sys.executable, "-m", "lakemeta.cli", "run", "--lake", str(lake), "--catalog", str(catalog)]
    environment = {**os.environ, crash_points.ENVIRONMENT_VARIABLE: label, "LAKEMETA_DRIVER_MEMORY": "1g"}
    died = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=900)
    assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]


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


# The publish job (jobs/publish_catalog.py) in a process of its own with a metastore, as Airflow's publish
# task runs it; then every view of the database ``lakemeta`` as JSON, name -> the view's SQL.
PUBLISH_AND_LIST_VIEWS = """
import json, sys
from pyspark.sql import SparkSession
from lakemeta.steps import publish_catalog
publish_catalog(sys.argv[1:])
spark = SparkSession.getActiveSession()
views = [row.viewName for row in spark.sql("SHOW VIEWS IN lakemeta").collect()]
print(json.dumps({name: spark.sql(f"SHOW CREATE TABLE lakemeta.{name}").first()[0] for name in views}))
"""


def publish_killed_and_retried(lake: Path | Location, catalog: Path | Location, audit: Audit) -> None:
    """Publish ``audit`` in a process SIGKILLed halfway through the views (the first half then point at
    the audited versions, the rest at none), publish it again, and check that the result is what an
    uninterrupted publish leaves: every audited table a view pinned to its audited version, and the
    publication recorded once."""
    names = sorted(audit.versions)
    killed_at = f"after view lakemeta.{names[len(names) // 2]}"
    command = [sys.executable, "-c", PUBLISH_AND_LIST_VIEWS]
    command += ["--lake", str(lake), "--catalog", str(catalog), "--audit", str(audit.path)]
    environment = {**os.environ, "LAKEMETA_DRIVER_MEMORY": "1g"}
    died = subprocess.run(
        command,
        env={**environment, crash_points.ENVIRONMENT_VARIABLE: killed_at},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]
    assert f"crash point {killed_at!r} reached" in died.stderr
    published = Location.parse(catalog) / "published"
    assert not published.delta_table().to_pyarrow_table().num_rows

    retried = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert retried.returncode == 0, retried.stderr[-3000:]
    views = json.loads(retried.stdout.strip().splitlines()[-1])
    assert sorted(views) == names
    for name, text in views.items():
        assert text.rstrip().endswith(f"/{name}` VERSION AS OF {audit.versions[name]}"), (name, text)
    records = published.delta_table().to_pyarrow_table().sort_by("table_name")
    assert records.select(["table_name", "version", "audit"]).to_pylist() == [
        {"table_name": name, "version": audit.versions[name], "audit": str(audit.path)} for name in names
    ]


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
    # The crash points in the order the run reached them, a point reached twice (the same write to the
    # same table, at two steps) counted by its reach. Between an "after" point and the next "before" point
    # nothing is written, so the files are the same at both: the "after" points (and the very first point)
    # are the distinct states a crash can leave.
    points = [(reached[0], 1)]
    for i, label in enumerate(reached):
        if label.startswith("after "):
            points.append((label, reached[: i + 1].count(label)))
    assert len(points) >= 20, points

    killed_at: list[tuple[str, int]] = []
    for target in points:
        reaches: list[str] = []

        def kill_at(label: str, target: tuple[str, int] = target, reaches: list[str] = reaches) -> None:
            reaches.append(label)
            if (label, reaches.count(label)) == target:
                raise Killed(label)

        if target == _SIGKILLED:
            sigkilled_cli_run(lake, catalog, target[0])
            killed_at.append(target)
            continue
        monkeypatch.setattr(crash_points, "on_reach", kill_at)
        try:
            full_run(spark, lake, catalog)
        except Killed:
            killed_at.append(target)
        if killed_at[-1:] == [("after append runs", 1)]:  # the plan is stored; the run is not yet done
            # The lake moves on while the killed run waits for its retry: the retry still processes
            # exactly the versions it planned, and the next run the rest.
            spark.sql(f"INSERT INTO delta.`{lake / 'a'}` VALUES (40, 'moved', 4.0)")
    monkeypatch.setattr(crash_points, "on_reach", lambda label: None)
    audit = full_run(spark, lake, catalog)
    full_run(spark, lake, reference)
    # And the last step of `lakemeta run`, which needs a metastore: a publish killed and run again.
    publish_killed_and_retried(lake, catalog, audit)

    # Fewer than the points: a label reached several times (the record of each discovery step) is counted
    # from the start of each retry, which skips the steps already recorded, so its later reaches are not met.
    assert len(killed_at) >= 15, (points, killed_at)
    assert ("after append runs", 1) in killed_at and _SIGKILLED in killed_at
    ours, theirs = catalog_rows(catalog), catalog_rows(reference)
    assert ours == theirs
    assert [row[:2] for row in ours["runs"]] == [(1, "succeeded"), (2, "succeeded"), (3, "succeeded")]
    assert {row[0] for row in ours["tables"]} == {"a", "foreign", "late", _AWKWARD}
    awkward_columns = {row[1] for row in ours["columns"] if row[0] == _AWKWARD}
    assert awkward_columns == {"id", "a`b", "x.y", "naïve"}
    no_table_changed_answers_without_a_jvm(lake, catalog, tmp_path / "no-java")


def no_table_changed_answers_without_a_jvm(lake: Path, catalog: Path, missing_java: Path) -> None:
    """`lakemeta run` over a lake unchanged since its catalog was published answers from the logs: with no
    Java to start, only an answer that needs no JVM can succeed. Other settings are work to do, and Spark
    is started for it (and here cannot be)."""
    command = [sys.executable, "-m", "lakemeta.cli", "run", "--lake", str(lake), "--catalog", str(catalog)]
    no_java = {**os.environ, "JAVA_HOME": str(missing_java)}
    again = subprocess.run(command, env=no_java, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.strip() == "no table changed; every result is current and published"
    stricter_command = [*command[:3], "--set", "fks.inclusion_threshold=0.95", *command[3:]]
    stricter = subprocess.run(stricter_command, env=no_java, capture_output=True, text=True, timeout=120)
    assert stricter.returncode != 0 and "no-java" in stricter.stderr


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
