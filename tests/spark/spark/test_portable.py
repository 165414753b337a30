"""What the library asks of a session beyond DataFrames (``lakemeta.spark.portable``), under classic Spark and
over a real Spark Connect server alike. The Connect session lives in a process of its own: once pyspark
has made one, its functions build Connect columns for every session of the process."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from lakemeta.config import Config
from lakemeta.ports import free_port
from lakemeta.spark.connect import TOKEN_VARIABLE, running_server
from lakemeta.spark.portable import (
    arrow_frame,
    default_parallelism,
    describe_jobs,
    is_connect,
)

from ...quick_jvm import QUICK_JVM
from ...scripts import run_script

pytestmark = pytest.mark.spark

TABLE = pa.table({"name": pa.array(["a", "b", "c"], pa.string()), "id": pa.array([1, 2, 3], pa.int64())})


def check_session(session, folder: Path) -> None:
    """Every check, on a classic or a Connect session."""
    assert arrow_frame(session, TABLE).toArrow().to_pylist() == TABLE.to_pylist()
    empty = arrow_frame(session, TABLE.slice(0, 0))  # Spark Connect cannot infer a schema from no rows
    assert empty.columns == ["name", "id"] and empty.count() == 0

    describe_jobs(session, "first, with commas")
    describe_jobs(session, "second")
    if is_connect(session):  # one tag at a time, without commas
        assert [tag for tag in session.getTags() if tag.startswith("lakemeta:")] == ["lakemeta:second"]
    else:
        assert session.sparkContext.getLocalProperty("spark.job.description") == "second"
    assert default_parallelism(session) == 4  # spark.default.parallelism of spark_conf, on both

    # Delta through SQL, as the library writes it: a write, a MERGE from a temporary view, time travel.
    path = str(folder / "t")
    arrow_frame(session, pa.table({"k": [1, 2], "v": [10, 20]})).write.format("delta").save(path)
    arrow_frame(session, pa.table({"k": [2, 3], "v": [21, 30]})).createOrReplaceTempView("source")
    session.sql(
        f"MERGE INTO delta.`{path}` t USING source s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT *"
    ).collect()
    rows = session.read.format("delta").load(path).orderBy("k").collect()
    assert [tuple(row) for row in rows] == [(1, 10), (2, 21), (3, 30)]
    first = session.read.format("delta").option("versionAsOf", 0).load(path).orderBy("k").collect()
    assert [tuple(row) for row in first] == [(1, 10), (2, 20)]


def test_a_classic_session(spark, tmp_path: Path) -> None:
    assert not is_connect(spark)
    check_session(spark, tmp_path)


OVER_CONNECT = """
import sys
from pathlib import Path
from lakemeta.spark import get_session
from lakemeta.spark.portable import is_connect
from tests.spark.spark.test_portable import check_session
session = get_session(app_name="test", remote=sys.argv[1])
assert is_connect(session)
check_session(session, Path(sys.argv[2]))
print("checked")
"""


# The tasks of a DAG run on the run's session (lakemeta.orchestration.spark_tasks): what one task leaves in
# it, the next finds; a session the server ended gives the task a session of its own.
RUN_SESSION = """
import sys, uuid
from lakemeta.spark.connect import attach_session
url, run = sys.argv[1], str(uuid.uuid4())
first, shared = attach_session(url, run, "first", {"spark.lakemeta.test": "set by the first task"})
assert shared
first.sql("CREATE TEMPORARY VIEW of_the_first AS SELECT 1 AS one")
first.stop()  # the task's end closes its client, not the session
second, shared = attach_session(url, run, "second")
assert shared and second.conf.get("spark.lakemeta.test") == "set by the first task"
assert second.sql("SELECT one FROM of_the_first").first().one == 1
second.release_session_on_close = True
second.stop()  # the server ends the session, as after its idle timeout
third, shared = attach_session(url, run, "third")
assert not shared and third.range(3).count() == 3
assert third.conf.get("spark.lakemeta.test", None) is None
third.stop()
print("attached")
"""


def test_a_session_of_a_connect_server(tmp_path: Path) -> None:
    config = Config(lake=tmp_path / "lake", catalog=tmp_path / "catalog", spark_master="local[2]")
    env = {**os.environ, **QUICK_JVM, TOKEN_VARIABLE: "a-token-of-the-test", "LAKEMETA_DRIVER_MEMORY": "1g"}

    with running_server(config, free_port(), tmp_path / "server.log", env) as url:
        checked = run_script(OVER_CONNECT, url, str(tmp_path / "tables"), env=env)
        attached = run_script(RUN_SESSION, url, env=env)
    assert checked.returncode == 0 and checked.stdout.strip().endswith("checked"), checked.stderr[-3000:]
    assert attached.returncode == 0 and attached.stdout.strip().endswith("attached"), attached.stderr[-3000:]
