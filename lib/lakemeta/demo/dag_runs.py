"""The demo's DAG runs: `airflow dags test` of the project's DAGs on the demo lake, with the Airflow
environment of infra/airflow/env.sh (SQLite under .airflow/, the `lakemeta_connect` connection to the
demo's Spark Connect server on a free port), so the runs also show in the UI that `make airflow` starts
afterwards.

The runs of one ``run_dags`` call are `airflow dags test`'s, one after another in one Python process
(``airflow_dags_test_here``: Airflow's own command line parsed and run once per DAG), as the
scheduler chains lakemeta_incremental and the lakemeta_discovery run its asset starts: Airflow, its
in-process execution API, the DAG files and what the tasks import load once, not once per DAG (seconds
each, measured by bench/small_change.py; docs/performance.md, "Measurements behind the code").
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lakemeta.ports import free_port
from lakemeta.storage import Location

REPO = Path(__file__).resolve().parents[3]
ENV_SCRIPT = REPO / "infra" / "airflow" / "env.sh"
# The line of the runner's output that carries each DAG run's seconds, as JSON.
_SECONDS_LINE = "lakemeta-dag-seconds "


@dataclass(frozen=True)
class DagRunTimes:
    seconds: dict[str, float]  # each DAG run's, from its start to its end
    wall_seconds: float  # the process's: Airflow's start and the DAG files' parse too


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


def run_dags(runs: Sequence[tuple[str, dict | None]], env: dict[str, str]) -> DagRunTimes:
    """Run each ``(dag_id, conf)`` of ``runs`` to its end, in order, in one process (module docstring);
    their times, or DagRunError naming the DAGs of the failed process. A DAG runs at most once a call."""
    dag_ids = [dag_id for dag_id, _ in runs]
    repeated = sorted({dag_id for dag_id in dag_ids if dag_ids.count(dag_id) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} twice in one call: its time would be one run's")
    arguments = [dag_id if conf is None else f"{dag_id}={json.dumps(conf)}" for dag_id, conf in runs]
    command = (
        f"source {ENV_SCRIPT} && exec python -c "
        "'import sys; from lakemeta.demo.dag_runs import airflow_dags_test_here; "
        'airflow_dags_test_here(sys.argv[1:])\' "$@"'
    )
    started = time.perf_counter()
    result = subprocess.run(
        ["bash", "-c", command, "bash", *arguments], env=env, capture_output=True, text=True
    )
    wall_seconds = round(time.perf_counter() - started, 2)
    output = result.stdout + result.stderr
    if result.returncode != 0 or "state=failed" in output:
        raise DagRunError(
            f"{' then '.join(dag_id for dag_id, _ in runs)} failed after {wall_seconds:.0f} s:\n"
            f"{output[-4000:]}"
        )
    seconds = next(line for line in result.stdout.splitlines() if line.startswith(_SECONDS_LINE))
    return DagRunTimes(json.loads(seconds.removeprefix(_SECONDS_LINE)), wall_seconds)


def airflow_dags_test_here(arguments: Sequence[str]) -> None:
    """`airflow dags test DAG [--conf CONF]` for each ``DAG[=CONF]`` of ``arguments``, in this process (the
    process ``run_dags`` starts): their seconds are printed, as JSON, on a line of their own."""
    from airflow.cli.cli_parser import get_parser

    seconds = {}
    for argument in arguments:
        dag_id, _, conf = argument.partition("=")
        started = time.perf_counter()
        args = get_parser().parse_args(["dags", "test", dag_id, *(["--conf", conf] if conf else [])])
        try:
            args.func(args)
        except SystemExit as failed:  # the command's way to report a failed run
            raise SystemExit(f"{dag_id}: {failed}") from None
        seconds[dag_id] = round(time.perf_counter() - started, 2)
    print(_SECONDS_LINE + json.dumps(seconds), flush=True)
    gc.freeze()  # as the lakemeta command does (lakemeta.cli.console): an exit without a last collection
