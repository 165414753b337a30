"""A small change in seconds: the steps on one Spark Connect server against a JVM per step.

Three measurements in one run, each path beside its baseline:
* ``dags``: the demo's lake (TPC-H at scale 0.01 and 200 generated web tables, written with delta-rs).
  After a first pass of lakemeta_incremental and lakemeta_discovery (``airflow dags test`` of both in one
  process, as the demo runs them: ``lakemeta.demo.dag_runs``; tasks on the Connect server), four web tables
  change (rows deleted and appended by another engine, delta-rs) and both DAGs run again on the server,
  timed from the process's start to its end; three such passes, four other tables changed before each, and
  the median pass reported (the machine's speed drifts by the hour). Four other tables change, and both
  DAGs run as two ``airflow dags test`` commands, a process each, for comparison. Then four more tables
  change the same way and the same tasks run in the same order as the DAGs ran them before the server: a
  spark-submit of the job under jobs/ per Spark task (the Python tasks and the quality gate in this
  process). Per task: seconds; for the server's passes also the Spark jobs the server ran during the task,
  the client requests they came from and their summed duration (the server's REST API).
* ``cli``: TPC-H at scale 0.01. After a first ``lakemeta --remote ... run``, one table changes and
  ``lakemeta --remote ... run`` runs (a process of its own, a session of the running server), its Spark
  jobs counted per phase the library tags; then the table changes again and ``lakemeta run`` runs, which
  starts its own JVM.
* ``first_run``: four small tables (those of tests/dags), copies of the lake with a catalog each: the
  first ``lakemeta --remote ... run`` on a server just started (cold); on a server just started and
  warmed up as start.sh and the systemd unit warm it (``lakemeta warm-up``, timed apart), three first
  runs, each over a copy of its own, and their median; the first ``lakemeta run`` (its own JVM). The
  target is for the warmed server. With ``--baseline-commit REV`` the warmed server's first runs alternate
  with as many by the CLI of REV (checked out under the scratch folder and imported through PYTHONPATH;
  the server and its workers stay this checkout's, so this compares changes to the client), and the
  ratio of their medians is reported.

Targets: the four changed tables through both DAGs in at most 30 s; one changed table from the CLI in at
most 15 s; a first run over four small tables in at most 30 s.

    .venv/bin/python bench/small_change.py [--only dags,cli,first_run] [--baseline-commit REV]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
from checkouts import checkout_lib
from deltalake import DeltaTable, write_deltalake

from lakemeta.config import Config
from lakemeta.demo import write_tpch_lake
from lakemeta.demo.airflow_api import AirflowApi
from lakemeta.demo.dag_runs import airflow_environment, run_dags
from lakemeta.demo.webtables import write_web_tables
from lakemeta.ports import free_port
from lakemeta.spark.connect import TOKEN_VARIABLE, running_server
from lakemeta.spark.session import delta_jars, spark_conf, spark_environment
from lakemeta.storage import Location

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
SCRATCH = ROOT / "results" / "scratch" / "small_change"
RESULT = ROOT / "results" / "small_change.json"
BIN = Path(sys.executable).parent
TARGETS = {"dags": 30.0, "cli": 15.0, "first_run": 30.0}
CONNECT_PASSES = 3  # passes of both DAGs in one process (``dags``), four other tables changed before each
WARM_FIRST_RUNS = 3  # first runs on the warmed server, each over a lake of its own (``first_run``)

# The tasks of lakemeta_incremental and lakemeta_discovery in an order their dependencies allow: a Spark
# task as (task id, step, arguments); a Python task of lakemeta.orchestration.python_tasks as
# (task id, None, ()).
INCREMENTAL_TASKS = [
    ("detect_batches", None, ()),
    ("scan_batches", "scan_batches", ()),
    *[
        (f"update_{name}", "update_state", (name,))
        for name in ("column_profile", "hll_counters", "column_values", "agree_sets", "posting_lists")
    ],
    ("batch_audit", None, ()),
    ("commit_batches", "commit_batches", ()),
]
DISCOVERY_TASKS = [
    *[
        (name, "discover", (name,))
        for name in (
            "keys_and_dependencies",
            "inclusion_estimates",
            "inclusion_dependencies",
            "fk_candidates",
        )
    ],
    ("quality_gate", "audit_catalog", ()),
    ("publish", "publish_catalog", ()),
]


def tpch(folder: Path) -> None:
    write_tpch_lake(folder / "tpch", SCRATCH / "tpch_0.01_parquet", "0.01")


def change(table: Path, round_: int) -> None:
    """Another engine's batch: the table loses its rows of one residue of the row number (read first, so
    the predicate holds on any schema) and gains two copies of its first row."""
    rows = DeltaTable(str(table)).to_pyarrow_table()
    kept = rows.filter(pa.array(np.arange(rows.num_rows) % 7 != round_ % 7))
    write_deltalake(
        str(table), pa.concat_tables([kept, rows.slice(0, 1), rows.slice(0, 1)]), mode="overwrite"
    )


def cli_run(lake: Path, catalog: Path, log: Path, remote: str | None, library: Path | None = None) -> float:
    """``lakemeta [--remote URL] run`` in a process of its own, with lakemeta imported from ``library``
    when given (another checkout's ``lib``); its wall time."""
    command = [str(BIN / "lakemeta"), *(["--remote", remote] if remote else []), "run"]
    command += ["--lake", str(lake), "--catalog", str(catalog)]
    env = {**os.environ, "PYTHONPATH": str(library)} if library else None
    started = time.perf_counter()
    with log.open("w") as output:
        done = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=False, env=env)
    seconds = round(time.perf_counter() - started, 1)
    if done.returncode != 0:
        raise RuntimeError(f"lakemeta run failed ({done.returncode}); see {log}")
    return seconds


def ui_port(server_log: Path) -> int:
    found = re.search(r"'SparkUI' on port (\d+)", server_log.read_text())
    if found is None:
        raise RuntimeError(f"no Spark UI port in {server_log}")
    return int(found.group(1))


def server_jobs(port: int) -> pd.DataFrame:
    """The Spark jobs the server has run: submission and completion times (UTC), duration."""

    def get(path: str) -> list:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}", timeout=30) as response:
            return json.load(response)

    (application,) = get("applications")
    jobs = pd.DataFrame(get(f"applications/{application['id']}/jobs"))
    for column in ("submissionTime", "completionTime"):
        jobs[column] = pd.to_datetime(jobs[column].str.replace("GMT", "+00:00"), utc=True)
    jobs["seconds"] = (jobs.completionTime - jobs.submissionTime).dt.total_seconds()
    # A Connect operation is one request of a client; the library's job tag names the phase it belongs to.
    jobs["operation"] = jobs.jobTags.map(lambda tags: next((t for t in tags if "_Operation_" in t), ""))
    jobs["phase"] = jobs.jobTags.map(
        lambda tags: next((t.split("_Tag_lakemeta:")[1] for t in tags if "_Tag_lakemeta:" in t), "(untagged)")
    )
    return jobs


def by_phase(jobs: pd.DataFrame) -> list[dict]:
    """Per phase the library tagged (in the order they ran): its Spark jobs, the client requests they came
    from, and their summed duration."""
    phases = jobs.sort_values("jobId").groupby("phase", sort=False)
    return [
        {
            "phase": phase,
            "spark_jobs": len(group),
            "requests": group.operation.nunique(),
            "spark_job_seconds": round(float(group.seconds.sum()), 2),
        }
        for phase, group in phases
    ]


def task_times(airflow_home: Path, dag_id: str) -> pd.DataFrame:
    """The tasks of the last run of ``dag_id``: start, end and duration (Airflow's metadata database)."""
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        tasks = pd.read_sql_query(
            "SELECT task_id, start_date, end_date, duration FROM task_instance WHERE dag_id = ? AND run_id = "
            "(SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1)",
            db,
            params=(dag_id, dag_id),
        )
    for column in ("start_date", "end_date"):
        tasks[column] = pd.to_datetime(tasks[column], utc=True)
    return tasks


def per_task(tasks: pd.DataFrame, jobs: pd.DataFrame) -> dict:
    """Per task of a DAG run: its seconds, and the server's Spark jobs submitted while it ran."""
    report = {}
    for task in tasks.sort_values("start_date").itertuples():
        inside = jobs[(jobs.submissionTime >= task.start_date) & (jobs.submissionTime <= task.end_date)]
        report[task.task_id] = {
            "seconds": round(float(task.duration or 0), 2),
            "spark_jobs": len(inside),
            "spark_job_seconds": round(float(inside.seconds.sum()), 2),
            "requests": inside.operation.nunique(),
        }
    return report


def tasks_seconds(tasks: dict) -> list[float]:
    """The seconds of each task of ``per_task``'s reports, keyed by DAG."""
    return [task["seconds"] for run in tasks.values() for task in run.values()]


def submit_pass(lake: Path, catalog: Path, env: dict[str, str], logs: Path) -> dict:
    """The tasks of both DAGs in order, each Spark task a spark-submit of its job (a JVM per task)."""
    from lakemeta.orchestration import python_tasks
    from lakemeta.orchestration.steps import run_step

    os.environ.update({"LAKEMETA_LAKE": str(lake), "LAKEMETA_CATALOG": str(catalog)})
    config = Config(lake=lake, catalog=catalog)
    conf = spark_conf(config.catalog, [config.lake], "local[*]")
    report, audit = {}, ""
    for task_id, step, arguments in [*INCREMENTAL_TASKS, *DISCOVERY_TASKS]:
        started = time.perf_counter()
        if step is None:
            outcome = getattr(python_tasks, task_id)()
            if task_id == "detect_batches" and not outcome:
                raise RuntimeError("the submit pass found no change")
        elif step == "audit_catalog":  # the gate needs no Spark: in this process, as a Python task
            audit = run_step("audit_catalog")
        else:
            command = [str(BIN / "spark-submit"), "--master", "local[*]", "--name", f"lakemeta {task_id}"]
            command += ["--driver-memory", "4g", "--jars", ",".join(delta_jars())]
            for key, value in conf.items():
                command += ["--conf", f"{key}={value}"]
            command += [str(REPO / "jobs" / f"{step}.py"), *arguments]
            command += ["--audit", audit] if step == "publish_catalog" else []
            with (logs / f"{task_id}.log").open("w") as output:
                subprocess.run(
                    command,
                    env={**env, **spark_environment()},
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    check=True,
                )
        report[task_id] = {"seconds": round(time.perf_counter() - started, 2)}
    return report


class RunningAirflow(AirflowApi):
    """Airflow as `make airflow` runs it (infra/airflow/start.sh: scheduler with the LocalExecutor,
    dag-processor, api-server and the Spark Connect server, warmed up), over the REST API as admin."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        super().__init__(f"http://127.0.0.1:{env['AIRFLOW__API__PORT']}", Path(env["AIRFLOW_HOME"]))
        with log.open("w") as output:
            self.process = subprocess.Popen(
                ["bash", str(REPO / "infra" / "airflow" / "start.sh")],
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: every component stops with it
            )

    def wait(self, condition, what: str, seconds: float = 900.0):
        deadline = time.monotonic() + seconds
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"Airflow stopped while waiting for {what}")
            try:
                outcome = condition()
            except (OSError, KeyError, json.JSONDecodeError):  # not serving yet
                outcome = None
            if outcome:
                return outcome
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} in {seconds:.0f} s")
            time.sleep(0.5)

    def idle(self) -> bool:
        return all(
            run["state"] in ("success", "failed")
            for dag_id in ("lakemeta_incremental", "lakemeta_discovery")
            for run in self.runs(dag_id)
        )

    def both_dags(self) -> dict:
        """Trigger lakemeta_incremental, wait for the lakemeta_discovery run its asset starts: the seconds
        from the trigger to that run's end, and each task's."""
        discovery_runs = len(self.runs("lakemeta_discovery"))
        triggered = time.time()
        dag_runs = "/api/v2/dags/lakemeta_incremental/dagRuns"
        incremental = self.request("POST", dag_runs, {"logical_date": None})

        def discovered() -> dict | None:
            if self.request("GET", f"{dag_runs}/{incremental['dag_run_id']}")["state"] == "failed":
                raise RuntimeError(f"lakemeta_incremental {incremental['dag_run_id']} failed")
            runs = self.runs("lakemeta_discovery")
            finished = len(runs) > discovery_runs and runs[0]["state"] in ("success", "failed")
            return runs[0] if finished else None

        discovery = self.wait(discovered, "a discovery run after the trigger")
        if discovery["state"] != "success":
            raise RuntimeError(f"lakemeta_discovery {discovery['dag_run_id']} failed")
        tasks = {}
        for dag_id, run in (("lakemeta_incremental", incremental), ("lakemeta_discovery", discovery)):
            instances = self.task_instances(dag_id, run["dag_run_id"])
            tasks[dag_id] = {
                ti["task_id"]: round(ti["duration"] or 0.0, 2)
                for ti in sorted(instances, key=lambda ti: ti["start_date"] or "")
            }
        ended = datetime.fromisoformat(discovery["end_date"]).timestamp()
        return {"seconds": round(ended - triggered, 1), "task_seconds": tasks}

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def scheduled_pass(lake: Path, env: dict[str, str], work: Path) -> dict:
    """Both DAGs under a running Airflow: a pass to warm it, then the measured one, four tables changed
    before each."""
    port = free_port()
    api = {
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
    }
    airflow = RunningAirflow({**env, **api}, work / "airflow-running.log")
    try:
        airflow.wait(airflow.healthy, "a healthy Airflow")
        for dag_id in ("lakemeta_discovery", "lakemeta_incremental"):  # discovery first: there for the asset
            airflow.wait(lambda dag_id=dag_id: airflow.parsed(dag_id), f"{dag_id} parsed")
            airflow.unpause(dag_id)
        passes = []
        for round_, names in enumerate(
            [
                ("cities_0014", "countries_0012", "languages_0015", "planets_0013"),
                ("cities_0018", "countries_0016", "languages_0019", "planets_0017"),
            ]
        ):
            airflow.wait(airflow.idle, "no DAG run in progress")
            for name in names:
                change(lake / "web" / name, 3 + round_)
            passes.append(airflow.both_dags())
    finally:
        airflow.stop()
    return {"warm_up_pass_seconds": passes[0]["seconds"], **passes[1]}


def bench_dags() -> dict:
    work = SCRATCH / "dags"
    shutil.rmtree(work, ignore_errors=True)
    lake, catalog, home = work / "lake", work / "catalog", work / "airflow"
    tpch(lake)
    for path in write_web_tables(work / "csv", 200):
        write_deltalake(str(lake / "web" / path.stem), pa_csv.read_csv(path))
    os.environ["AIRFLOW_HOME"] = str(home)
    env = airflow_environment(Location.parse(lake), Location.parse(catalog))
    config = Config(lake=lake, catalog=catalog)
    server_log = work / "connect-server.log"
    result: dict = {"lake": "TPC-H 0.01 and 200 web tables", "changed_tables": 4}
    both = [("lakemeta_incremental", None), ("lakemeta_discovery", None)]
    with running_server(config, int(env["LAKEMETA_CONNECT_PORT"]), server_log, env):
        first = run_dags(both, env)
        result["connect_first_pass_seconds"] = first.wall_seconds
        passes = []
        for round_ in range(CONNECT_PASSES):
            for kind, offset in (("countries", 0), ("planets", 1), ("cities", 2), ("languages", 3)):
                change(lake / "web" / f"{kind}_{4 * (20 + round_) + offset:04d}", 1)
            times = run_dags(both, env)
            jobs = server_jobs(ui_port(server_log))
            tasks = {dag_id: per_task(task_times(home, dag_id), jobs) for dag_id in times.seconds}
            passes.append(
                {
                    # the process of both runs from its start to its end, the target's measure
                    "seconds": times.wall_seconds,
                    "dag_seconds": times.seconds,
                    # what the process's wall time holds beyond the tasks' durations is Airflow's: its start,
                    # the DAG files' parse, its in-process execution API, the task instances' bookkeeping
                    "airflow_seconds": round(times.wall_seconds - sum(tasks_seconds(tasks)), 1),
                    "tasks": tasks,
                }
            )
        median = sorted(passes, key=lambda one: one["seconds"])[len(passes) // 2]
        result["connect"] = {**median, "passes_seconds": [one["seconds"] for one in passes]}
        # The same DAGs as two `airflow dags test` commands, each its own process that starts Airflow
        for name in ("cities_0006", "countries_0004", "languages_0007", "planets_0005"):
            change(lake / "web" / name, 1)
        apart = [run_dags([run], env) for run in both]
        result["connect_separate_processes"] = {
            "seconds": round(sum(times.wall_seconds for times in apart), 1),
            "dag_seconds": {run[0]: times.wall_seconds for run, times in zip(both, apart, strict=True)},
        }
    # The server is stopped: the publish job's JVM takes the catalog's embedded metastore.
    for name in ("countries_0008", "planets_0009", "cities_0010", "languages_0011"):
        change(lake / "web" / name, 2)
    logs = work / "submit-logs"
    logs.mkdir()
    started = time.perf_counter()
    tasks = submit_pass(lake, catalog, env, logs)
    result["spark_submit"] = {"seconds": round(time.perf_counter() - started, 1), "tasks": tasks}
    # As scheduled runs and the UI's triggers meet them: a process per task, the tasks side by side where
    # the DAGs allow, the scheduler between them.
    result["scheduled"] = scheduled_pass(lake, {**env, "LAKEMETA_INCREMENTAL_SCHEDULE": "@yearly"}, work)
    result["ratio_submit_over_connect"] = round(
        result["spark_submit"]["seconds"] / result["connect"]["seconds"], 2
    )
    return result


def bench_cli() -> dict:
    work = SCRATCH / "cli"
    shutil.rmtree(work, ignore_errors=True)
    lake, catalog = work / "lake", work / "catalog"
    tpch(lake)
    config = Config(lake=lake, catalog=catalog)
    env = {**os.environ, TOKEN_VARIABLE: os.urandom(16).hex()}
    result: dict = {"lake": "TPC-H 0.01", "changed_table": "tpch/customer"}
    with running_server(config, free_port(), work / "connect-server.log", env) as url:
        result["connect_first_run_seconds"] = cli_run(lake, catalog, work / "first.log", url)
        change(lake / "tpch" / "customer", 1)
        before = server_jobs(ui_port(work / "connect-server.log")).jobId.max()
        result["connect_seconds"] = cli_run(lake, catalog, work / "connect.log", url)
        jobs = server_jobs(ui_port(work / "connect-server.log"))
        result["connect_phases"] = by_phase(jobs[jobs.jobId > before])
    change(lake / "tpch" / "customer", 2)  # the server is stopped: the run's JVM takes the metastore
    result["local_jvm_seconds"] = cli_run(lake, catalog, work / "local.log", None)
    result["ratio_local_over_connect"] = round(result["local_jvm_seconds"] / result["connect_seconds"], 2)
    return result


def small_lake(lake: Path) -> None:
    """The four tables of tests/dags/test_airflow_running.py."""
    write_deltalake(str(lake / "shop" / "orders"), pa.table({"id": [1, 2, 3], "note": ["a", None, "c"]}))
    write_deltalake(str(lake / "regions"), pa.table({"region": ["north", "south"]}))
    write_deltalake(str(lake / "shop" / "items"), pa.table({"order_id": [1, 1, 2, 3]}))
    write_deltalake(str(lake / "shop" / "returns"), pa.table({"returned_order": [1, 2, 9]}))


def warm_up(url: str, lake: Path, catalog: Path, log: Path) -> float:
    """``lakemeta --remote URL warm-up`` (what start.sh and the systemd unit run once a server is up); its
    wall time."""
    command = [
        str(BIN / "lakemeta"),
        "--remote",
        url,
        "warm-up",
        "--lake",
        str(lake),
        "--catalog",
        str(catalog),
    ]
    started = time.perf_counter()
    with log.open("w") as output:
        subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=True)
    return round(time.perf_counter() - started, 1)


def bench_first_run(baseline_commit: str | None) -> dict:
    work = SCRATCH / "first_run"
    shutil.rmtree(work, ignore_errors=True)
    # the warmed server's first runs, with this checkout's CLI, then alternating with the baseline's
    warm = [(f"warm{i}", None) for i in range(WARM_FIRST_RUNS)]
    if baseline_commit:
        baseline = checkout_lib(baseline_commit)
        pairs = [[(f"warm{i}", None), (f"baseline{i}", baseline)] for i in range(WARM_FIRST_RUNS)]
        warm = [run for i, pair in enumerate(pairs) for run in (pair if i % 2 == 0 else pair[::-1])]
    copies = ["cold", *(name for name, _ in warm), "local"]
    for name in copies:
        small_lake(work / name / "lake")
    env = {**os.environ, TOKEN_VARIABLE: os.urandom(16).hex()}
    result: dict = {"lake": "four tables of at most four rows"}
    for server in ("cold", "warm"):
        lake, catalog = work / copies[1 if server == "warm" else 0] / "lake", work / server / "catalog"
        with running_server(
            Config(lake=lake, catalog=catalog), free_port(), work / f"{server}-server.log", env
        ) as url:
            if server == "cold":
                result["connect_cold_server_seconds"] = cli_run(lake, catalog, work / "cold.log", url)
                continue
            result["warm_up_seconds"] = warm_up(url, lake, catalog, work / "warm-up.log")
            # One first run is within this machine's noise of the target: several, each on a lake and
            # catalog of its own, a new client session each, and their median.
            seconds = {
                name: cli_run(work / name / "lake", work / name / "catalog", work / f"{name}.log", url, code)
                for name, code in warm
            }
    result["connect_warm_server_runs"] = [seconds[f"warm{i}"] for i in range(WARM_FIRST_RUNS)]
    result["connect_warm_server_seconds"] = float(np.median(result["connect_warm_server_runs"]))
    result["connect_seconds"] = result["connect_warm_server_seconds"]
    if baseline_commit:
        # The baseline's client on this checkout's server and workers: it measures changes to the client.
        result["baseline_commit"] = baseline_commit
        result["baseline_warm_server_runs"] = [seconds[f"baseline{i}"] for i in range(WARM_FIRST_RUNS)]
        result["baseline_over_this"] = round(
            float(np.median(result["baseline_warm_server_runs"])) / result["connect_seconds"], 2
        )
    local = work / "local"
    result["local_jvm_seconds"] = cli_run(local / "lake", local / "catalog", work / "local.log", None)
    result["ratio_local_over_connect"] = round(result["local_jvm_seconds"] / result["connect_seconds"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="first_run,cli,dags", help="comma-separated: first_run, cli, dags")
    parser.add_argument(
        "--baseline-commit",
        help="first_run: the warmed server's first runs alternate with the CLI of this commit",
    )
    args = parser.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    results = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    measures = {
        "first_run": functools.partial(bench_first_run, args.baseline_commit),
        "cli": bench_cli,
        "dags": bench_dags,
    }
    for name in args.only.split(","):
        measured = measures[name]()
        seconds = measured["connect"]["seconds"] if name == "dags" else measured["connect_seconds"]
        measured["target_seconds"] = TARGETS[name]
        measured["target_met"] = seconds <= TARGETS[name]
        measured["measured_at"] = datetime.now().isoformat(timespec="seconds")
        results[name] = measured
        RESULT.write_text(json.dumps(results, indent=2) + "\n")
        print(name, json.dumps(measured, indent=2), flush=True)


if __name__ == "__main__":
    main()
