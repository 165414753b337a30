"""The demo's DAG runs: `airflow dags test` of the project's DAGs on the demo lake, with the Airflow
environment of infra/airflow/env.sh (SQLite under .airflow/, the `lakemeta_connect` connection to the
demo's Spark Connect server on a free port), so the runs also show in the UI that `make airflow` starts
afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from lakemeta.ports import free_port
from lakemeta.storage import Location

REPO = Path(__file__).resolve().parents[3]
ENV_SCRIPT = REPO / "infra" / "airflow" / "env.sh"


class DagRunError(RuntimeError):
    """A DAG run of the demo failed; the message ends with the end of its output."""


def _airflow(arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = f"source {ENV_SCRIPT} && airflow {arguments}"
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)


def airflow_environment(lake: Location, catalog: Location) -> dict[str, str]:
    """The environment of the demo's DAG runs (env.sh's, the Connect server's port and token among it), with
    the metadata database migrated."""
    env = {
        **os.environ,
        "LAKEMETA_LAKE": str(lake),
        "LAKEMETA_CATALOG": str(catalog),
        "LAKEMETA_CONNECT_PORT": str(free_port()),  # its own: `make airflow` may be serving 15002
    }
    for name in ("LAKEMETA_CONFIG", "AIRFLOW_CONN_LAKEMETA_CONNECT"):  # the demo's defaults and server
        env.pop(name, None)
    exported = subprocess.run(
        ["bash", "-c", f"source {ENV_SCRIPT} && env -0"], env=env, capture_output=True, check=True
    ).stdout.decode()
    env = dict(line.split("=", 1) for line in exported.split("\0") if "=" in line)
    migrate = _airflow("db migrate", env)
    if migrate.returncode != 0:
        raise DagRunError(f"airflow db migrate failed:\n{migrate.stderr[-3000:]}")
    return env


def run_dag(dag_id: str, env: dict[str, str], conf: dict | None = None) -> float:
    """One run of ``dag_id`` to its end; its wall time in seconds, or DagRunError."""
    arguments = f"dags test {dag_id}" + (f" --conf '{json.dumps(conf)}'" if conf else "")
    started = time.perf_counter()
    result = _airflow(arguments, env)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or "state=failed" in result.stdout + result.stderr:
        raise DagRunError(
            f"{dag_id} failed after {elapsed:.0f} s:\n{(result.stdout + result.stderr)[-4000:]}"
        )
    return elapsed
