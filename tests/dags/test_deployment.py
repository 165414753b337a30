"""The production deployment (infra/production) brought up on one machine the way its files say, and used as
its users would.

Every process is started from its systemd unit (``ExecStartPre``, ``ExecStart``, ``ExecStartPost``,
``Environment`` and ``EnvironmentFile`` lines, parsed here: tests/production.py), with the deployment's
paths, hosts and ports moved to the test's: a Spark standalone master and worker with the cluster's
shared secret (production's spark-defaults.conf), the Spark Connect server with its token and its
warm-up, the history server, and Airflow's api-server, scheduler and dag-processor on PostgreSQL (Debian's
package, a cluster of the test's own) with the FAB auth manager of ``airflow.env``. The set-up commands are
those of infra/production/README.md, "Steps" (the database and its user, ``airflow db migrate``, the
roles, the pool, the users).

Then: the admin triggers ``lakemeta_incremental`` through the REST API, whose commit starts
``lakemeta_discovery``, which publishes the catalog; an analyst may trigger the joinable search but not a
rebuild; a Spark Connect client without the token and a Spark client without the cluster's secret are
refused."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from lakemeta.demo.airflow_api import AirflowApi
from lakemeta.demo.dense import write_dense_lake
from lakemeta.ports import free_port
from lakemeta.show import read_catalog_table
from lakemeta.spark.session import spark_environment
from lakemeta.storage import Location

from ..production import PRODUCTION, REPO, Placement
from ..quick_jvm import QUICK_JVM

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

POSTGRES_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
DEADLINE_SECONDS = 900
TOKEN = "connect-token-of-the-deployment-test"
CLUSTER_SECRET = "spark-secret-of-the-deployment-test"
DATABASE_PASSWORD = "database-password-of-the-test"
USERS = {  # user: (password, roles), as README "Steps" and "Roles" create them
    "admin": ("admin-password-of-the-test", ["Admin"]),
    "analyst": ("analyst-password-of-the-test", ["Viewer", "lakemeta_analyst"]),
}
# The deployment's ports, each moved to a free one of the test (7077 the master, 8080 Airflow's API,
# 8090/8091 the master's and worker's UIs, 15002 Spark Connect, 18080 the history server).
DEPLOYED_PORTS = (7077, 8080, 8090, 8091, 15002, 18080)
LAKE_TABLES = 6


class Processes:
    """The deployment's processes, each in its own process group with its log, stopped in reverse order."""

    def __init__(self, logs: Path) -> None:
        self.logs, self.started = logs, []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        with (self.logs / f"{name}.log").open("a") as log:
            process = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append((name, process))
        return process

    def run(self, name: str, command: list[str], env: dict[str, str], timeout: float = 300) -> str:
        """A command run to its end (a set-up step, an ExecStartPre/Post), its output; an error names it."""
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        with (self.logs / f"{name}.log").open("a") as log:
            log.write(done.stdout + done.stderr)
        assert done.returncode == 0, (
            f"{name}: {' '.join(command)}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
        return done.stdout

    def tails(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}"
            for log in sorted(self.logs.glob("*.log"))
        )

    def stop(self) -> None:
        for _, process in reversed(self.started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for _, process in reversed(self.started):
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def wait(condition: Callable[[], object], what: str, processes: Processes, timeout: float = DEADLINE_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in processes.started:
            if process.poll() is not None:
                pytest.fail(
                    f"{name} exited with {process.returncode} waiting for {what}\n{processes.tails()}"
                )
        if found := condition():
            return found
        time.sleep(2)
    pytest.fail(f"no {what} within {timeout} s\n{processes.tails()}")


@contextlib.contextmanager
def postgres(processes: Processes, port: int) -> Iterator[None]:
    """A PostgreSQL cluster of the test's own on 127.0.0.1:``port`` (Debian's binaries; as the ``postgres``
    user when the test runs as root, which PostgreSQL refuses to run as), with Airflow's database and user
    created as README "Steps" says."""
    if not POSTGRES_BIN:
        pytest.fail("PostgreSQL is not installed: `make test` installs it (infra/install-postgres.sh)")
    binaries = POSTGRES_BIN[-1]
    folder = Path(tempfile.mkdtemp(prefix="lakemeta-postgres-"))  # below /tmp: the postgres user reaches it
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(folder, "postgres")
    data, env = folder / "data", {"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8"}

    def postgres_command(program: str, *args: str) -> list[str]:
        return [*as_user, str(binaries / program), *args]

    try:
        processes.run(
            "postgres-initdb",
            postgres_command("initdb", "-D", str(data), "-U", "postgres", "--auth-local=trust",
                             "--auth-host=scram-sha-256", "-E", "UTF8"),
            env,
        )  # fmt: skip
        processes.start(
            "postgres",
            postgres_command("postgres", "-D", str(data), "-p", str(port), "-k", str(folder),
                             "-c", "listen_addresses=127.0.0.1"),
            env,
        )  # fmt: skip
        ready = postgres_command("pg_isready", "-h", "127.0.0.1", "-p", str(port))
        wait(lambda: subprocess.run(ready, capture_output=True).returncode == 0, "PostgreSQL", processes, 60)
        for statement in (
            f"CREATE USER airflow PASSWORD '{DATABASE_PASSWORD}'",
            "CREATE DATABASE airflow OWNER airflow",
        ):
            psql = postgres_command(
                "psql", "-h", str(folder), "-p", str(port), "-U", "postgres", "-c", statement
            )
            processes.run("postgres-setup", psql, env)
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def environment_files(placement: Placement, database_port: int, master_port: int) -> None:
    """/etc/lakemeta as README "Steps" fills it: airflow.env and lakemeta.yaml with the hosts filled in,
    the secrets' files (mode 0600), spark-defaults.conf with the cluster's secret."""
    etc = placement.etc
    (etc / "spark").mkdir(parents=True)
    (etc / "airflow.env").write_text(
        placement.moved((PRODUCTION / "airflow.env").read_text())
        # the incremental DAG runs when triggered, not at the top of every hour while the test runs
        + "LAKEMETA_INCREMENTAL_SCHEDULE=0 0 1 1 *\n"
        + "LAKEMETA_RETRY_DELAY_SECONDS=5\n"
    )
    secrets = {
        "airflow-secrets.env": "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=postgresql+psycopg2://airflow:"
        f"{DATABASE_PASSWORD}@127.0.0.1:{database_port}/airflow\n",
        "connect-secrets.env": f"SPARK_CONNECT_AUTHENTICATE_TOKEN={TOKEN}\n",
    }
    for name, text in secrets.items():
        (etc / name).touch(mode=0o600)
        (etc / name).write_text(text)
    defaults = etc / "spark" / "spark-defaults.conf"
    defaults.touch(mode=0o600)
    defaults.write_text(
        placement.moved((PRODUCTION / "spark-defaults.conf").read_text()).replace(
            "SPARK_SECRET", CLUSTER_SECRET
        )
        + "spark.executor.memory 768m\n"  # the test machine's, not production's executors'
    )
    config = yaml.safe_load(placement.moved((PRODUCTION / "lakemeta.yaml").read_text()))
    config.update(lake=str(placement.root / "lake"), catalog=str(placement.root / "catalog"))
    config.pop("metastore_uri")  # no Hive metastore here: Spark's embedded one beside the catalog
    assert config["spark_master"] == f"spark://127.0.0.1:{master_port}"
    (etc / "lakemeta.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Placement, Processes, AirflowApi]]:
    root = tmp_path_factory.mktemp("deployment")
    ports = {deployed: free_port() for deployed in DEPLOYED_PORTS}
    placement = Placement(root, spark_environment()["JAVA_HOME"], ports)
    for folder in ("log", "var", "cache"):
        (root / folder).mkdir()
    processes = Processes(root / "log")
    placement.lake_tables = write_dense_lake(root / "lake", LAKE_TABLES, seed=11)
    database_port = free_port()
    environment_files(placement, database_port, ports[7077])
    host = {**os.environ, **QUICK_JVM, "LAKEMETA_DRIVER_MEMORY": "1g"}  # what the host provides
    host.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)

    def start_unit(name: str) -> None:
        env = placement.environment(name, host)
        for index, command in enumerate(placement.commands(name, "ExecStartPre")):
            processes.run(f"{name}-pre-{index}", command, env)
        (command,) = placement.commands(name)
        processes.start(name, command, env)

    try:
        with postgres(processes, database_port):
            airflow_env = placement.environment("airflow-api-server", host)
            airflow = [str(REPO / ".venv" / "bin" / "airflow")]
            processes.run("airflow-db-migrate", [*airflow, "db", "migrate"], airflow_env, timeout=600)
            roles = [*airflow, "roles", "create", "lakemeta_operator", "lakemeta_analyst"]
            processes.run("airflow-roles", roles, airflow_env)
            pool = [*airflow, "pools", "set", "lakemeta_spark", "4", "lakemeta steps"]
            processes.run("airflow-pool", pool, airflow_env)
            for user, (password, user_roles) in USERS.items():
                created = [*airflow, "users", "create", "--username", user, "--firstname", user]
                created += ["--lastname", "test", "--email", f"{user}@example.com"]
                created += ["--role", user_roles[0], "--password", password]
                processes.run(f"airflow-user-{user}", created, airflow_env)
                for role in user_roles[1:]:
                    added = [*airflow, "users", "add-role", "--username", user, "--role", role]
                    processes.run(f"airflow-user-{user}", added, airflow_env)
            start_unit("spark-master")
            start_unit("spark-worker")
            start_unit("spark-history")
            start_unit("lakemeta-connect")
            # ExecStartPost: the warm-up, which waits for the server, before the unit counts as started
            connect_env = placement.environment("lakemeta-connect", host)
            for command in placement.commands("lakemeta-connect", "ExecStartPost"):
                processes.run("lakemeta-connect-warm-up", command, connect_env, timeout=600)
            for name in ("airflow-api-server", "airflow-scheduler", "airflow-dag-processor"):
                start_unit(name)
            password = USERS["admin"][0]
            api = AirflowApi(f"http://127.0.0.1:{ports[8080]}", root / "var" / "airflow", "admin", password)
            wait(api.healthy, "a healthy Airflow", processes)
            yield placement, processes, api
    finally:
        processes.stop()


def test_an_incremental_run_triggered_through_the_rest_api_publishes_the_catalog(deployment) -> None:
    placement, processes, admin = deployment
    for dag_id in ("lakemeta_discovery", "lakemeta_incremental"):
        wait(lambda d=dag_id: admin.parsed(d), f"{dag_id} parsed", processes)
        admin.unpause(dag_id)
    admin.trigger("lakemeta_incremental")

    def finished(dag_id: str) -> dict | None:
        runs = admin.runs(dag_id)
        if runs and runs[0]["state"] == "failed":
            pytest.fail(f"{dag_id} failed: {json.dumps(runs[0])}\n{processes.tails()}")
        return runs[0] if runs and runs[0]["state"] == "success" else None

    wait(lambda: finished("lakemeta_incremental"), "a successful incremental run", processes)
    wait(lambda: finished("lakemeta_discovery"), "a successful discovery run", processes)
    catalog = Location(str(placement.root / "catalog"))
    assert len(read_catalog_table(catalog, "tables")) == LAKE_TABLES
    assert len(read_catalog_table(catalog, "columns", published=True)) > LAKE_TABLES  # the published view
    # the history server shows the Connect server's application from its event log
    history = f"http://127.0.0.1:{placement.ports[18080]}/api/v1/applications"
    apps = wait(lambda: _json(history), "the Connect server in the history server", processes, 120)
    assert any(app["name"] == "lakemeta-connect" for app in apps)


def _json(url: str) -> object:
    with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)
    return None


def test_an_analyst_triggers_the_joinable_search_but_not_a_rebuild(deployment) -> None:
    placement, processes, admin = deployment
    analyst = AirflowApi(admin.url, admin.home, "analyst", USERS["analyst"][0])
    wait(
        lambda: admin.parsed("lakemeta_rebuild") and admin.parsed("lakemeta_joinable_search"),
        "DAGs",
        processes,
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        analyst.trigger("lakemeta_rebuild", {"confirm": "rebuild"})
    assert refused.value.code == 403
    assert analyst.request("GET", "/api/v2/dags/lakemeta_rebuild")["dag_id"] == "lakemeta_rebuild"  # reads it
    admin.unpause("lakemeta_joinable_search")
    query = placement.root / "lake" / placement.lake_tables[0]
    key = DeltaTable(str(query)).schema().fields[0].name
    run = analyst.trigger(
        "lakemeta_joinable_search", {"query": placement.lake_tables[0], "key_columns": [key]}
    )

    def searched() -> bool:
        state = analyst.request("GET", f"/api/v2/dags/lakemeta_joinable_search/dagRuns/{run['dag_run_id']}")
        assert state["state"] != "failed", f"{state}\n{processes.tails()}"
        return state["state"] == "success"

    wait(searched, "the analyst's search", processes)
    found = read_catalog_table(Location(str(placement.root / "catalog")), "joinable_tables")
    assert run["dag_run_id"] in set(found["query_id"])


def test_clients_without_the_token_or_the_clusters_secret_are_refused(deployment) -> None:
    placement = deployment[0]
    without_token = subprocess.run(
        [sys.executable, "-c", "from pyspark.sql import SparkSession; "
         f"SparkSession.builder.remote('sc://localhost:{placement.ports[15002]}').create().range(1).count()"],
        env={key: value for key, value in os.environ.items() if key != "SPARK_CONNECT_AUTHENTICATE_TOKEN"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert without_token.returncode != 0 and "UNAUTHENTICATED" in without_token.stderr, without_token.stderr[
        -2000:
    ]
    # Spark's standalone client asks the master to kill a driver: without the secret the master never reads
    # the request (it turns the client away at its first message)
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "spark-class"), "org.apache.spark.deploy.Client", "kill",
         f"spark://127.0.0.1:{placement.ports[7077]}", "driver-without-secret"],
        env={**os.environ, **spark_environment(), **QUICK_JVM},
        capture_output=True, timeout=60,
    )  # fmt: skip
    master_log = (placement.root / "log" / "spark-master.log").read_text()
    assert "driver-without-secret" not in master_log
    assert "Expected SaslMessage, received something else" in master_log
