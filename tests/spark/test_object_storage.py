"""A lake and a catalog in object storage (the S3 server of tests/s3_server.py), reached as S3 is: a run
killed during a state MERGE and a publish killed between two views (a real SIGKILL), each run again, leave
the catalog a local run of the same lake leaves, and ``lakemeta run`` then answers from the logs alone;
batches another engine (delta-rs) wrote to the bucket come from the change feed and from a snapshot diff;
bad locations are refused with an error naming the URI, never the secret, and nothing written. The DAGs on
an s3:// lake: tests/dags/test_airflow_running.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta import crash_points
from lakemeta.config import Config
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.quality.results import Audit
from lakemeta.storage import Location, StorageError

from ..quick_jvm import QUICK_JVM
from .lake_changes import arrow_rows, create_foreign_table, create_spark_table, process, random_rows
from .test_crash_recovery import Killed, catalog_rows, full_run

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KILLED_AT = "after merge state/hll_counters"
REPO = Path(__file__).resolve().parents[2]


# The publish job (jobs/publish_catalog.py) in a process of its own with a metastore, as Airflow's publish
# task runs it; then every view of the database ``lakemeta`` as JSON, name -> the view's SQL.
PUBLISH_AND_LIST_VIEWS = """
import json, runpy
from pyspark.sql import SparkSession
runpy.run_path(JOB, run_name="__main__")
spark = SparkSession.getActiveSession()
views = [row.viewName for row in spark.sql("SHOW VIEWS IN lakemeta").collect()]
print(json.dumps({name: spark.sql(f"SHOW CREATE TABLE lakemeta.{name}").first()[0] for name in views}))
""".replace("JOB", repr(str(REPO / "jobs" / "publish_catalog.py")))


def publish_killed_and_retried(lake: Path | Location, catalog: Path | Location, audit: Audit) -> None:
    """Publish ``audit`` in a process SIGKILLed halfway through the views (the first half then point at
    the audited versions, the rest at none), publish it again, and check that the result is what an
    uninterrupted publish leaves: every audited table a view pinned to its audited version, and the
    publication recorded once."""
    names = sorted(audit.versions)
    killed_at = f"after view lakemeta.{names[len(names) // 2]}"
    command = [sys.executable, "-c", PUBLISH_AND_LIST_VIEWS]
    command += ["--lake", str(lake), "--catalog", str(catalog), "--audit", str(audit.path)]
    environment = {**os.environ, **QUICK_JVM, "LAKEMETA_DRIVER_MEMORY": "1g"}
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
    assert not published.delta_dataset().to_table().num_rows

    retried = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert retried.returncode == 0, retried.stderr[-3000:]
    views = json.loads(retried.stdout.strip().splitlines()[-1])
    assert sorted(views) == names
    for name, text in views.items():
        assert text.rstrip().endswith(f"/{name}` VERSION AS OF {audit.versions[name]}"), (name, text)
    records = published.delta_dataset().to_table().sort_by("table_name")
    assert records.select(["table_name", "version", "audit"]).to_pylist() == [
        {"table_name": name, "version": audit.versions[name], "audit": str(audit.path)} for name in names
    ]


def no_table_changed_answers_without_a_jvm(lake: Location, catalog: Location, missing_java: Path) -> None:
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


def test_a_run_on_s3_killed_mid_merge_and_mid_publish_equals_a_local_run(
    spark, s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(5)
    local = tmp_path / "lake"
    create_spark_table(spark, local / "orders", random_rows(rng, 12))  # Spark's, with row tracking
    feed = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(str(local / "sales"), arrow_rows(random_rows(rng, 10)), configuration=feed)
    create_foreign_table(local / "web" / "prices", random_rows(rng, 9))  # delta-rs, no change feed
    bucket = Location.parse(s3.prefix("pipeline"))
    lake, catalog = bucket / "lake", bucket / "catalog"
    Location.parse(local).copy_tree(lake)

    reference = full_run(spark, local, tmp_path / "catalog")

    def kill(label: str) -> None:
        if label == KILLED_AT:
            raise Killed(label)

    monkeypatch.setattr(crash_points, "on_reach", kill)
    with pytest.raises(Killed):
        full_run(spark, lake, catalog)
    monkeypatch.setattr(crash_points, "on_reach", lambda label: None)
    audit = full_run(spark, lake, catalog)
    assert catalog_rows(catalog) == catalog_rows(tmp_path / "catalog")
    assert sorted(audit.versions.items()) == sorted(reference.versions.items())
    publish_killed_and_retried(lake, catalog, audit)
    no_table_changed_answers_without_a_jvm(lake, catalog, tmp_path / "no-java")

    # Another engine (delta-rs) writes a batch to both lakes: an append to the table with the change feed,
    # a delete from the one without.
    for root in (Location.parse(local), lake):
        (root / "sales").write_delta(arrow_rows([(40, "new", 1.0), (41, None, None)]), mode="append")
        (root / "web" / "prices").delta_table().delete("id < 5")
    ours = process(Pipeline(spark, Config(lake=lake, catalog=catalog)), "hll_counters")
    theirs = process(Pipeline(spark, Config(lake=local, catalog=tmp_path / "catalog")), "hll_counters")
    assert {b.table_name: b.source for b in ours.batches} == {"sales": "cdf", "web/prices": "diff"}
    assert [(b.table_name, b.from_version, b.to_version) for b in ours.batches] == [
        (b.table_name, b.from_version, b.to_version) for b in theirs.batches
    ]
    state = ["state/batches", "state/hll_counters"]
    assert catalog_rows(catalog, state) == catalog_rows(tmp_path / "catalog", state)


@pytest.mark.parametrize("fault", ["wrong secret", "missing bucket", "unreachable endpoint", "no table"])
def test_a_bad_location_is_named_and_nothing_is_written(
    spark, s3, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    bucket = Location.parse(s3.prefix("bad"))
    lake, catalog = bucket / "lake", bucket / "catalog"
    (lake / "t").write_delta(pa.table({"x": [1, 2]}))
    (bucket / "notes" / "readme.txt").write_text("no table here")
    if fault == "wrong secret":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    elif fault == "missing bucket":
        lake = Location.parse("s3://no-such-bucket/lake")
    elif fault == "unreachable endpoint":
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard: nothing listens
    else:
        lake = bucket / "notes"
    with pytest.raises((StorageError, FileNotFoundError)) as refused:
        Pipeline(spark, Config(lake=lake, catalog=catalog))
    message = str(refused.value)
    assert lake.uri in message or catalog.uri in message, message
    assert "not-the-secret" not in message and s3.environment()["AWS_SECRET_ACCESS_KEY"] not in message
    monkeypatch.undo()
    assert not catalog.exists()


def test_the_cli_names_the_location_and_keeps_the_secret(s3) -> None:
    """`lakemeta show` (no JVM) with a secret the server refuses: exit 2, the URI, not the secret."""
    catalog = s3.prefix("cli")
    environment = {**s3.environment(), "AWS_SECRET_ACCESS_KEY": "a-secret-the-server-refuses"}
    command = [sys.executable, "-m", "lakemeta.cli", "show", "--catalog", catalog, "runs"]
    refused = subprocess.run(
        command, env={**os.environ, **environment}, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2, refused.stderr
    assert catalog in refused.stderr and "a-secret-the-server-refuses" not in refused.stderr + refused.stdout
