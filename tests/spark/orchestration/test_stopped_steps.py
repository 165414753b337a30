"""A step stopped from outside stops its work on the Spark Connect server: killed by its timeout (Airflow's
own timeout, raising in the step's thread while the server runs its MERGE), its jobs are interrupted
before the state's lease is let go; killed by SIGTERM (Airflow calls the operator's ``on_kill``), the
operator interrupts them from a client of its own. Either way no job of the step runs on the server once
it has stopped, and the retry leaves the state that a run from scratch computes.

Jobs are observed where an administrator sees them: the server application's REST API (its Spark UI),
whose jobs carry the step's tag. The state update runs in the executors (no driver bound), so that it is
Spark jobs that the stop finds running."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lakemeta.config import Config
from lakemeta.demo.dense import write_dense_lake
from lakemeta.ports import free_port
from lakemeta.registry import state_schemas
from lakemeta.spark.connect import TOKEN_VARIABLE, running_server

from ...quick_jvm import QUICK_JVM
from ...scripts import run_script
from ..test_crash_recovery import catalog_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STOPPED = """
import json, os, signal, sys, threading, time, urllib.request
from pathlib import Path

from airflow.sdk.exceptions import AirflowTaskTimeout
from airflow.sdk.execution_time.timeout import timeout

from lakemeta import crash_points
from lakemeta.config import load_config
from lakemeta.demo.dense import change_dense_tables
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.orchestration.spark_tasks import spark_step
from lakemeta.spark.connect import open_session, session_url
from lakemeta.spark.interruption import task_tag

url, lake, catalog, rebuilt = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
settings = {"scan": {"driver_state_bytes": 0}}


def ui_of(app):
    for port in range(4040, 4080):
        try:
            listed = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/applications", timeout=2)
            apps = json.load(listed)
        except (OSError, ValueError):  # nothing there, or another service's port: not a Spark UI
            continue
        if any(found["id"] == app for found in apps):
            return f"http://127.0.0.1:{port}/api/v1/applications/{app}"
    raise RuntimeError(f"no Spark UI serves {app}")


def tagged_jobs(ui, tag):
    jobs = json.load(urllib.request.urlopen(f"{ui}/jobs?status=running", timeout=5))
    return [job["jobId"] for job in jobs if any(t.endswith("_Tag_" + tag) for t in job.get("jobTags", []))]


def state_steps(pipeline):
    plan = pipeline.running() or pipeline.detect_batches()  # a retry goes on with the planned run
    pipeline.scan_batches(plan)
    for component in pipeline.components():
        pipeline.update_state(plan, component.name)
    pipeline.commit_batches(plan)


def attempt(stop, at):
    '''Run the state steps on a session of their own, tagged as a task's; once the MERGE of ``at`` has
    started, ``stop`` (given the session's URL and tag) stops them when the server runs a job of theirs.'''
    spark = open_session(url)
    tag = task_tag()
    spark.addTag(tag)
    ui = ui_of(spark.conf.get("spark.app.id"))
    merging, seen = threading.Event(), []
    crash_points.on_reach = lambda label: merging.set() if label == f"before merge {at}" else None

    def watch():
        merging.wait()
        while not (jobs := tagged_jobs(ui, tag)):
            time.sleep(0.02)
        seen.extend(jobs)
        stop(session_url(url, spark.session_id), tag)

    threading.Thread(target=watch, daemon=True).start()
    outcome = "finished"
    try:
        with timeout(600):
            state_steps(Pipeline(spark, load_config({"lake": str(lake), "catalog": catalog, **settings})))
    except AirflowTaskTimeout:
        outcome = "timed out"
    except Exception as error:
        outcome = f"failed: {type(error).__name__}"
    left = tagged_jobs(ui, tag)
    crash_points.on_reach = crash_points.kill_when_named
    spark.stop()
    return {"outcome": outcome, "seen": seen, "left": left}


def by_timeout(url, tag):
    signal.setitimer(signal.ITIMER_REAL, 0.001)  # the task's timeout expires now: AirflowTaskTimeout


operator = spark_step("update_column_values", "update_state", component="column_values")
signal.signal(signal.SIGTERM, lambda *_: operator.on_kill())  # as Airflow's task runner does


def by_sigterm(session, tag):
    operator.job_tag, operator.session_url = tag, session
    os.kill(os.getpid(), signal.SIGTERM)


def retry():
    spark = open_session(url)
    state_steps(Pipeline(spark, load_config({"lake": str(lake), "catalog": catalog, **settings})))
    spark.stop()


report = {"timeout": attempt(by_timeout, "state/hll_counters")}
retry()
change_dense_tables(lake, 3, seed=5)
report["sigterm"] = attempt(by_sigterm, "state/column_values")
retry()
spark = open_session(url)
state_steps(Pipeline(spark, load_config({"lake": str(lake), "catalog": rebuilt, **settings})))
spark.stop()
print(json.dumps(report))
"""


def test_a_step_stopped_by_its_timeout_or_a_kill_leaves_no_job_running_and_its_retry_the_rebuilt_state(
    tmp_path: Path,
) -> None:
    lake = tmp_path / "lake"
    write_dense_lake(lake, 16, seed=3)
    config = Config(lake=lake, catalog=tmp_path / "catalog", spark_master="local[2]")
    env = {**os.environ, **QUICK_JVM, TOKEN_VARIABLE: "a-token-of-the-test", "LAKEMETA_DRIVER_MEMORY": "1g"}
    with running_server(config, free_port(), tmp_path / "server.log", env) as url:
        folders = [str(lake), str(tmp_path / "catalog"), str(tmp_path / "rebuilt")]
        client = run_script(STOPPED, url, *folders, env=env, timeout=900)
    assert client.returncode == 0, client.stderr[-4000:]
    report = json.loads(client.stdout.strip().splitlines()[-1])
    timed_out, killed = report["timeout"], report["sigterm"]
    # stopped while the server ran a job of the step, and none of them runs once the step has stopped
    assert timed_out["outcome"] == "timed out" and timed_out["seen"] and timed_out["left"] == [], timed_out
    assert killed["outcome"].startswith("failed") and killed["seen"] and killed["left"] == [], killed
    names = sorted(state_schemas())
    assert catalog_rows(tmp_path / "catalog", names) == catalog_rows(tmp_path / "rebuilt", names)
