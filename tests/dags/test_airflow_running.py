"""The DAGs under a running Airflow on a Spark standalone cluster, as users meet them: the scheduler starts
lakemeta_incremental on its schedule (its HLL task's process SIGKILLed after its commit, and the Spark
Connect server SIGKILLed while the posting-list task runs; the server is restarted, Airflow's retries
finish the run), its commit's asset starts lakemeta_discovery, which fills, audits and publishes the
catalog that an analyst then queries through Spark SQL on the Connect server; a run triggered over the
unchanged lake plans nothing, skips its steps and starts no discovery; someone signs in to the UI in
headless Chromium and triggers lakemeta_joinable_search through its form; and the catalog the cluster
built equals the one local mode builds from a copy of the lake on local disk.

The lake and the catalog live in object storage (the S3 server of tests/s3_server.py), reached by every
process through the standard AWS variables: Airflow's tasks, the Connect server and the cluster's
executors. Airflow runs for real (infra/airflow/start.sh: scheduler with the LocalExecutor, dag-processor,
api-server on SQLite, sign-in required, and the Spark Connect server, restarted when it
stops); every Spark task runs its step on the Connect server through the `lakemeta_connect` connection,
and the server is an application of a master and two workers on 127.0.0.1: no task starts a JVM. The
cluster runs with production's Spark settings: every connection authenticated with a shared secret and
encrypted, a client without the secret refused."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow as pa
import pytest

from lakemeta import crash_points
from lakemeta.config import load_config
from lakemeta.demo.airflow_api import AirflowApi
from lakemeta.orchestration.lineage import dataset_name
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.ports import free_port
from lakemeta.reference.s3_server import SECRET_KEY, S3Server
from lakemeta.registry import STATE_COMPONENTS, all_schemas
from lakemeta.show import read_catalog_table
from lakemeta.spark.connect import SERVER_CLASS
from lakemeta.spark.session import spark_environment
from lakemeta.storage import Location

from ..quick_jvm import QUICK_JVM
from .cluster import standalone_cluster

REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
SCREENSHOTS = REPO / "test-output" / "ui"
SEARCH_RUN_ID = "ui_trigger_form"
DEADLINE_SECONDS = 900

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

# The configuration the tasks read (LAKEMETA_CONFIG), with an inclusion floor above the default, which
# the discovery run's steps keep since its param is left empty.
CONFIG = """\
lake: {lake}
catalog: {catalog}
spark_master: {master}
sketches:
  inclusion_floor: 0.7
"""

# The HLL task's process kills itself once its MERGE has committed on the server (lakemeta.crash_points).
KILLED_AT = "after merge state/hll_counters"
# The Connect server is SIGKILLed (start.sh starts it again) while the HLL task waits for its retry: after
# its first attempt reached the crash point, whatever the other state updates' timings, which then fail
# and are retried too if still running.
SERVER_KILLED_WHILE = ("update_hll_counters", "up_for_retry")
TOKEN = "connect-token-of-the-test"
LINEAGE_NAMESPACE = "lakemeta-test"

# The cluster runs with production's Spark settings (infra/production/spark-defaults.conf): every
# connection authenticated with a shared secret and encrypted, the master's REST server off. The master,
# the workers (which hand the secret to their executors) and the Connect server (the application's driver)
# read them from their spark-defaults.conf.
CLUSTER_SECRET = "spark-secret-of-the-test"
CLUSTER_SECURITY = dict(
    line.split(maxsplit=1)
    for line in (REPO / "infra" / "production" / "spark-defaults.conf")
    .read_text()
    .replace("SPARK_SECRET", CLUSTER_SECRET)
    .splitlines()
    if line.strip() and not line.startswith("#")
)

# The Connect server is the cluster's one application: it takes the workers' four cores. Its event log in
# the test's folder, uncompressed, so that the test reads what it holds (a later line of the file wins).
SPARK_DEFAULTS = (
    "".join(f"{key} {value}\n" for key, value in CLUSTER_SECURITY.items())
    + """\
spark.executor.memory 768m
spark.eventLog.enabled true
spark.eventLog.dir file://{events}
spark.eventLog.compress false
"""
)


class Airflow(AirflowApi):
    """A running Airflow: its REST API (as admin), its home, its log and the lakemeta configuration file
    its DAGs read."""

    def __init__(self, url: str, root: Path, config_file: Path) -> None:
        super().__init__(url, root / "airflow")
        self.root, self.config_file, self.log = root, config_file, root / "airflow.log"
        config = load_config(environ={"LAKEMETA_CONFIG": str(config_file)})
        self.lake, self.catalog = config.require_paths()
        self.server_killer: ServerKiller | None = None
        self.connect_port = 0
        self.command_lines = CommandLineWatcher((SECRET_KEY, CLUSTER_SECRET))

    def unpause_when_parsed(self, dag_id: str) -> None:
        self.wait(lambda: self.parsed(dag_id), f"{dag_id} parsed")
        self.unpause(dag_id)

    def paused(self, dag_id: str) -> bool:
        return self.request("GET", f"/api/v2/dags/{dag_id}")["is_paused"]

    def succeeded_run(self, dag_id: str) -> dict:
        """Wait for a run of ``dag_id`` to succeed; fail as soon as one fails."""

        def succeeded() -> dict | None:
            runs = self.runs(dag_id)
            assert all(run["state"] != "failed" for run in runs), (runs, self.failures())
            return next((run for run in runs if run["state"] == "success"), None)

        return self.wait(succeeded, f"a successful run of {dag_id}")

    def wait(self, condition, what: str):
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not (outcome := condition()):
            assert time.monotonic() < deadline, (f"no {what} in {DEADLINE_SECONDS} s", self.failures())
            time.sleep(2)  # an API call costs the server CPU that the runs waited for need
        return outcome

    def failures(self) -> str:
        """The tails of the task logs that hold a traceback, and of Airflow's own log."""
        tails = [
            f"{path}:\n{path.read_text()[-3000:]}"
            for path in sorted((self.home / "logs").rglob("*.log"))
            if "Traceback" in path.read_text()
        ]
        return "\n\n".join([*tails, self.log.read_text()[-3000:]])


@pytest.fixture(scope="module")
def cluster_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cluster's logs and its applications' folders (each executor's output)."""
    return tmp_path_factory.mktemp("spark-cluster")


@pytest.fixture(scope="module")
def cluster(cluster_folder: Path, s3: S3Server) -> Iterator[str]:
    """The master URL of a standalone cluster (a master and two workers) on 127.0.0.1, whose executors
    reach the S3 server through the AWS variables of their environment."""
    with standalone_cluster(cluster_folder, env=QUICK_JVM, conf=CLUSTER_SECURITY) as master:
        yield master


def test_the_master_refuses_a_client_without_the_clusters_secret(cluster: str, cluster_folder: Path) -> None:
    """Spark's standalone client asks the master to kill a driver: without the secret, or with another
    one, the master never reads the request; with the secret it does (and finds no such driver)."""
    spark_class = str(REPO / ".venv" / "bin" / "spark-class")
    attempts = {
        "driver-without-secret": {},
        "driver-wrong-secret": {**CLUSTER_SECURITY, "spark.authenticate.secret": "not-the-secret"},
        "driver-with-secret": CLUSTER_SECURITY,
    }
    for driver, conf in attempts.items():
        # The client reads no spark-defaults.conf: its settings are system properties, from the
        # environment (not its command line).
        options = " ".join(f"-D{key}={value}" for key, value in conf.items())
        subprocess.run(
            [spark_class, "org.apache.spark.deploy.Client", "kill", cluster, driver],
            env={
                **os.environ,
                **spark_environment(),
                "JDK_JAVA_OPTIONS": f"{QUICK_JVM['JDK_JAVA_OPTIONS']} {options}",
            },
            capture_output=True,
            timeout=60,
        )
    master_log = (cluster_folder / "master.log").read_text()
    assert "Asked to kill driver driver-with-secret" in master_log
    assert "driver-without-secret" not in master_log and "driver-wrong-secret" not in master_log
    # The unauthenticated client was turned away at its first message.
    assert "Expected SaslMessage, received something else" in master_log


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory, cluster: str, s3: S3Server) -> Iterator[Airflow]:
    """A small lake and its catalog in the S3 server, and Airflow's three components started on it with the
    incremental and discovery DAGs unpaused and ``spark_default`` on the cluster; the scheduler takes it
    from there."""
    root = tmp_path_factory.mktemp("airflow-running")
    bucket = Location.parse(s3.prefix("airflow"))
    lake, catalog, home = bucket / "lake", bucket / "catalog", root / "airflow"
    (lake / "shop" / "orders").write_delta(pa.table({"id": [1, 2, 3], "note": ["a", None, "c"]}))
    (lake / "regions").write_delta(pa.table({"region": ["north", "south"]}))
    (lake / "shop" / "items").write_delta(pa.table({"order_id": [1, 1, 2, 3]}))
    (lake / "shop" / "returns").write_delta(pa.table({"returned_order": [1, 2, 9]}))  # 2/3 in orders
    (lake / "queries" / "q.csv").write_text("key,label\n1,a\n3,c\n4,z\n")  # a query file, not a table
    (root / "lakemeta.yaml").write_text(CONFIG.format(lake=lake, catalog=catalog, master=cluster))
    (root / "spark-conf").mkdir()
    (root / "spark-events").mkdir()
    (root / "spark-conf" / "spark-defaults.conf").write_text(
        SPARK_DEFAULTS.format(events=root / "spark-events")
    )
    port, connect_port = free_port(), free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__API__PORT": str(port),
        "LAKEMETA_CONFIG": str(root / "lakemeta.yaml"),
        # One scheduled incremental run rather than one per hour (a run could otherwise start again while
        # the test runs); read when the DAG files are parsed (lakemeta.orchestration.dag_settings).
        "LAKEMETA_INCREMENTAL_SCHEDULE": "@once",
        # The retries after the SIGKILLs below come after 5 s, not 30 s: the test waits less, and checks
        # that the setting reaches the tasks the scheduler runs.
        "LAKEMETA_RETRY_DELAY_SECONDS": "5",
        "LAKEMETA_CONNECT_PORT": str(connect_port),
        "SPARK_CONNECT_AUTHENTICATE_TOKEN": TOKEN,
        "LAKEMETA_DRIVER_MEMORY": "2g",
        "SPARK_CONF_DIR": str(root / "spark-conf"),
        **QUICK_JVM,
        # No warm-up of the Connect server (start.sh's, lakemeta.orchestration.warm_up, tested on its own): it
        # would run beside the DAG runs on the test machine's two cores, once per server start.
        "LAKEMETA_WARM_UP": "0",
        # The DAG files are parsed once: they do not change while the test runs.
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
        # Every HLL task's process SIGKILLs itself once its MERGE has committed; Airflow retries the task,
        # whose retry finds the MERGE committed and finishes (lakemeta.crash_points).
        crash_points.ENVIRONMENT_VARIABLE: KILLED_AT,
        # Airflow's OpenLineage provider writes every task's events to a file, one JSON line each.
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(root / "openlineage.jsonl"), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": LINEAGE_NAMESPACE,
    }
    log_path = root / "airflow.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        ["bash", str(REPO / "infra" / "airflow" / "start.sh")],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the teardown stops every component
    )
    running = Airflow(f"http://127.0.0.1:{port}", root, root / "lakemeta.yaml")
    running.connect_port = connect_port
    running.command_lines.group = process.pid
    killer = running.server_killer = ServerKiller(running, *SERVER_KILLED_WHILE)
    running.command_lines.start()
    try:
        running.wait(lambda: process.poll() is None and running.healthy(), "healthy Airflow")
        # lakemeta_discovery first, so that it is there when the asset is updated
        running.unpause_when_parsed("lakemeta_discovery")
        running.unpause_when_parsed("lakemeta_incremental")
        killer.start()
        yield running
    finally:
        killer.stopped.set()
        running.command_lines.stopped.set()
        os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
        # A component still shutting down (the scheduler may outlive start.sh) is stopped too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def connect_servers(port: int) -> list[psutil.Process]:
    """The JVMs serving Spark Connect on ``port``."""
    binding = f"spark.connect.grpc.binding.port={port}"
    return [
        process
        for process in psutil.process_iter(["cmdline"])
        if SERVER_CLASS in (command := process.info["cmdline"] or []) and binding in command
    ]


class ServerKiller(threading.Thread):
    """SIGKILLs the Connect server, once, as soon as task ``task_id`` of a lakemeta_incremental run is in
    ``state``; records the killed server's pid."""

    def __init__(self, airflow: Airflow, task_id: str, state: str) -> None:
        super().__init__(daemon=True)
        self.airflow, self.task_id, self.state = airflow, task_id, state
        self.stopped = threading.Event()
        self.killed_pid: int | None = None

    def run(self) -> None:
        # Once a second, one request: the retry delay (5 s) is the window to hit, and every request costs
        # the API server CPU that the runs it watches need.
        while not self.stopped.wait(1) and self.killed_pid is None:
            with contextlib.suppress(OSError, KeyError):
                if not self._task_in_state():
                    continue
                for server in connect_servers(self.airflow.connect_port):
                    server.kill()
                    self.killed_pid = server.pid

    def _task_in_state(self) -> bool:
        """Whether the task is in the state in any run (``~``: all runs)."""
        query = f"task_id={self.task_id}&state={self.state}"
        found = self.airflow.request(
            "GET", f"/api/v2/dags/lakemeta_incremental/dagRuns/~/taskInstances?{query}"
        )
        return found["total_entries"] > 0


class CommandLineWatcher(threading.Thread):
    """Reads every process's command line twice a second, as ``ps`` shows them to any user of the host;
    keeps those holding one of ``secrets`` and the command lines of the Spark JVMs seen in process group
    ``group`` (Airflow's; so that a pass means it looked)."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        super().__init__(daemon=True)
        self.secrets = secrets
        self.stopped = threading.Event()
        self.spark_jvms: dict[int, list[str]] = {}
        self.group: int | None = None
        self.holding_the_secret: list[list[str]] = []

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            for process in psutil.process_iter(["pid", "cmdline"]):
                command = process.info["cmdline"] or []
                if "org.apache.spark.deploy.SparkSubmit" in command:
                    with contextlib.suppress(OSError):
                        if os.getpgid(process.info["pid"]) == self.group:
                            self.spark_jvms[process.info["pid"]] = command
                if any(secret in part for secret in self.secrets for part in command):
                    self.holding_the_secret.append(command)


@pytest.fixture(scope="module")
def incremental_run(airflow: Airflow) -> dict:
    """The scheduled lakemeta_incremental run, once it has succeeded."""
    return airflow.succeeded_run("lakemeta_incremental")


def test_the_scheduled_incremental_run_builds_the_state(airflow: Airflow, incremental_run: dict) -> None:
    assert incremental_run["run_type"] == "scheduled"
    tables = read_catalog_table(airflow.catalog, "tables")
    assert list(zip(tables.table_name, tables.n_rows, tables.n_columns, strict=True)) == [
        ("regions", 2, 1),
        ("shop/items", 4, 1),
        ("shop/orders", 3, 2),
        ("shop/returns", 3, 1),
    ]
    runs = read_catalog_table(airflow.catalog, "runs")
    assert list(runs.status) == ["succeeded"] and int(runs.rows_inserted[0]) == 12
    # The batch audit ran before the commit: every table was new, so there was nothing to drift from.
    audit = json.loads((airflow.catalog / "_quality" / "batches-run-1.json").read_text())
    assert audit["success"] and audit["suites"] == {} and len(audit["versions"]) == 4
    # The HLL task's first attempt was killed after its commit (SIGKILL of its own process, the server's
    # client); a retry finished (a second one if the first found the restarted server not yet up).
    task = "update_hll_counters"
    instance = airflow.request(
        "GET",
        f"/api/v2/dags/lakemeta_incremental/dagRuns/{incremental_run['dag_run_id']}/taskInstances/{task}",
    )
    assert instance["state"] == "success" and instance["try_number"] >= 2, instance
    declared = airflow.request("GET", f"/api/v2/dags/lakemeta_incremental/tasks/{task}")
    assert (declared["retry_delay"]["days"], declared["retry_delay"]["seconds"]) == (0, 5), declared
    # Every Spark task ran in the pool start.sh created (env.sh's default size), the planning task not.
    pool = airflow.request("GET", "/api/v2/pools/lakemeta_spark")
    assert pool["slots"] == 4, pool
    assert (instance["pool"], instance["pool_slots"]) == ("lakemeta_spark", 1)
    run_path = f"/api/v2/dags/lakemeta_incremental/dagRuns/{incremental_run['dag_run_id']}"
    instances = airflow.request("GET", f"{run_path}/taskInstances")["task_instances"]
    pools = {instance["task_id"]: instance["pool"] for instance in instances}
    assert pools.pop("detect_batches") == pools.pop("batch_audit") == "default_pool"
    assert set(pools.values()) == {"lakemeta_spark"}, pools
    attempts = sorted((airflow.home / "logs").rglob(f"task_id={task}/attempt=*.log"), key=lambda p: p.name)
    assert any(f"crash point '{KILLED_AT}' reached" in attempt.read_text() for attempt in attempts[:-1])
    # The Connect server was SIGKILLed while the HLL task waited for its retry; start.sh started another,
    # and the run succeeded (the state it left is compared with local mode's below).
    killer = airflow.server_killer
    assert killer is not None and killer.killed_pid is not None
    restarted = [server.pid for server in connect_servers(airflow.connect_port)]
    assert restarted and killer.killed_pid not in restarted
    # Sign-in is required: the API refuses a call without a token, and a wrong password gets none.
    for method, path, body in (
        ("GET", "/api/v2/dags", None),
        ("POST", "/auth/token", {"username": "admin", "password": "not the password"}),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            airflow.call(method, path, body)
        assert refused.value.code in (401, 403), (path, refused.value.code)


def test_a_search_triggered_from_the_ui_form_lands_in_the_catalog(
    airflow: Airflow, incremental_run: dict
) -> None:
    """Triggered while discovery runs, as an analyst would: the search reads only the posting lists."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    search = "lakemeta_joinable_search"
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), (
        "Debian's chromium and chromium-driver: make test installs them"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1100"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    wait = WebDriverWait(browser, 60)
    try:
        browser.get(f"{airflow.url}/dags/{search}")
        wait.until(expected_conditions.url_contains("/auth/login"))  # sign-in is required
        wait.until(expected_conditions.presence_of_element_located((By.NAME, "username"))).send_keys("admin")
        browser.find_element(By.NAME, "password").send_keys(airflow.password)
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(expected_conditions.url_contains(f"/dags/{search}"))

        wait.until(
            expected_conditions.element_to_be_clickable((By.CSS_SELECTOR, "button[aria-label='Trigger Dag']"))
        ).click()
        query = wait.until(expected_conditions.presence_of_element_located((By.ID, "element_query")))
        query.send_keys("queries/q.csv")
        browser.find_element(By.ID, "element_key_columns").send_keys("key\nlabel")
        k = browser.find_element(By.NAME, "element_k")
        k.send_keys(Keys.CONTROL, "a")
        k.send_keys("3")
        advanced = browser.find_element(By.XPATH, "//button[contains(@id, 'trigger:advancedOptions')]")
        advanced.click()
        wait.until(expected_conditions.visibility_of_element_located((By.NAME, "dagRunId"))).send_keys(
            SEARCH_RUN_ID
        )
        browser.save_screenshot(str(SCREENSHOTS / "trigger-form.png"))
        trigger = browser.find_elements(
            By.XPATH, "//div[@role='dialog']//button[normalize-space()='Trigger']"
        )
        trigger[-1].click()
        # Once the form's requests have made the run and unpaused the DAG, off Airflow's pages while the
        # run works: they poll the API server every few seconds and render.
        airflow.wait(lambda: airflow.runs(search) and not airflow.paused(search), "the triggered run")
        browser.get("about:blank")

        run = airflow.succeeded_run(search)
        assert (run["dag_run_id"], run["run_type"]) == (SEARCH_RUN_ID, "manual")
        browser.get(f"{airflow.url}/dags/{search}/runs/{SEARCH_RUN_ID}")
        time.sleep(3)
        browser.save_screenshot(str(SCREENSHOTS / "run-succeeded.png"))
    finally:
        browser.quit()
    found = read_catalog_table(airflow.catalog, "joinable_tables")
    # (1, a) and (3, c) of the query are rows of shop/orders; no other table has two columns to map.
    assert [(r.query_id, r.rank, r.table_name, r.joinability) for r in found.itertuples()] == [
        (SEARCH_RUN_ID, 1, "shop/orders", 2)
    ]
    assert json.loads(found.column_mapping[0]) == {"key": "id", "label": "note"}


SQL_QUERY = """
import sys
from lakemeta.spark import get_session
spark = get_session(app_name="analyst", remote=sys.argv[1])
rows = spark.sql("SELECT fk_table, pk_table, accepted FROM lakemeta.fk_candidates ORDER BY rank").collect()
print([tuple(row) for row in rows])
"""


def test_the_commit_starts_discovery_which_fills_audits_and_publishes_the_catalog(
    airflow: Airflow, incremental_run: dict
) -> None:
    run = airflow.succeeded_run("lakemeta_discovery")
    assert run["run_type"] == "asset_triggered"
    catalog = airflow.catalog
    columns = read_catalog_table(catalog, "columns")
    assert dict(zip(columns.column_name, columns.n_nulls, strict=True)) == {
        "region": 0,
        "order_id": 0,
        "id": 0,
        "note": 1,
        "returned_order": 0,
    }
    distinct = dict(zip(columns.column_name, columns.n_distinct_estimate, strict=True))
    assert distinct == {"region": 2, "order_id": 3, "id": 3, "note": 2, "returned_order": 3}
    unique = dict(zip(columns.column_name, columns.is_unique, strict=True))
    assert unique == {"region": True, "order_id": False, "id": True, "note": True, "returned_order": True}
    keys = read_catalog_table(catalog, "unique_column_combinations")
    orders = keys[keys.table_name == "shop/orders"]
    assert sorted(list(columns) for columns in orders["columns"]) == [["id"], ["note"]]
    estimates = read_catalog_table(catalog, "inclusion_estimates")
    pairs = {(r.dep_column, r.ref_column): r.estimate for r in estimates.itertuples()}
    assert pairs[("order_id", "id")] == 1.0 and pairs[("id", "order_id")] == 1.0
    assert min(pairs.values()) >= 0.7 and ("returned_order", "id") not in pairs  # its estimate is 2/3
    inds = read_catalog_table(catalog, "inclusion_dependencies")
    found = {(r.dep_table, r.dep_column, r.ref_table, r.ref_column) for r in inds.itertuples()}
    assert found == {
        ("shop/items", "order_id", "shop/orders", "id"),
        ("shop/orders", "id", "shop/items", "order_id"),
    }
    fks = read_catalog_table(catalog, "fk_candidates")
    assert [
        (r.fk_table, list(r.fk_columns), r.pk_table, list(r.pk_columns), r.emd, r.accepted)
        for r in fks.itertuples()
    ] == [("shop/items", ["order_id"], "shop/orders", ["id"], 0.0, True)]

    # Published: an analyst's session of the Connect server (whose metastore holds the database lakemeta)
    # reads the FKs through SQL, with the server's token.
    analyst = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", SQL_QUERY, f"sc://localhost:{airflow.connect_port}"],
        env={**os.environ, "SPARK_CONNECT_AUTHENTICATE_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert analyst.returncode == 0, analyst.stderr[-3000:]
    assert analyst.stdout.strip().splitlines()[-1] == "[('shop/items', 'shop/orders', True)]"
    # The publish task's success emitted the asset users' DAGs schedule on.
    (asset,) = airflow.request("GET", "/api/v2/assets?name_pattern=lakemeta_catalog_published")["assets"]
    assert asset["uri"] == "lakemeta://catalog/published"
    events = airflow.request("GET", f"/api/v2/assets/events?asset_id={asset['id']}")["asset_events"]
    assert [(e["source_dag_id"], e["source_task_id"], e["source_run_id"]) for e in events] == [
        ("lakemeta_discovery", "publish", run["dag_run_id"])
    ]


def lineage_events(airflow: Airflow) -> list[dict]:
    return [json.loads(line) for line in (airflow.root / "openlineage.jsonl").read_text().splitlines()]


def names(datasets: list[dict]) -> set[tuple[str, str]]:
    return {(dataset["namespace"], dataset["name"]) for dataset in datasets}


def test_every_task_reports_the_tables_it_read_and_wrote_to_openlineage(
    airflow: Airflow, incremental_run: dict
) -> None:
    """Airflow's OpenLineage provider (file transport) emitted a START and a COMPLETE event for each task
    of the runs, and each Spark step's COMPLETE event lists the lake and catalog tables it read and wrote."""
    airflow.succeeded_run("lakemeta_discovery")
    events = lineage_events(airflow)
    assert {event["job"]["namespace"] for event in events} == {LINEAGE_NAMESPACE}
    by_job: dict[str, dict[str, list[dict]]] = {}
    for event in events:
        by_job.setdefault(event["job"]["name"], {}).setdefault(event["eventType"], []).append(event)
    run_path = f"/api/v2/dags/lakemeta_incremental/dagRuns/{incremental_run['dag_run_id']}"
    tasks = [i["task_id"] for i in airflow.request("GET", f"{run_path}/taskInstances")["task_instances"]]
    for task_id in tasks:
        kinds = by_job.get(f"lakemeta_incremental.{task_id}", {})
        assert kinds.get("START") and kinds.get("COMPLETE"), (task_id, sorted(kinds))

    table = dataset_name  # a table's (namespace, name)
    lake_tables = {
        table(airflow.lake / name) for name in ("regions", "shop/items", "shop/orders", "shop/returns")
    }
    # The state updates, which run side by side: each read the run's four new tables, and wrote its own
    # state table and no other's (the HLL update's retry too, whose MERGE its killed attempt committed).
    state_tables = {
        table(airflow.catalog / "state" / entry.name): entry.task_id for entry in STATE_COMPONENTS
    }
    wrote_own = []
    for entry in STATE_COMPONENTS:
        for update in by_job[f"lakemeta_incremental.{entry.task_id}"]["COMPLETE"]:
            assert names(update["inputs"]) == lake_tables, entry.task_id
            written = {state_tables[name] for name in names(update["outputs"]) if name in state_tables}
            assert written <= {entry.task_id}, (entry.task_id, written)
            assert all("version" in dataset["facets"] for dataset in update["outputs"])
            wrote_own += written
    assert sorted(wrote_own) == sorted(entry.task_id for entry in STATE_COMPONENTS)
    # The commit wrote the catalog's tables and columns.
    (commit,) = by_job["lakemeta_incremental.commit_batches"]["COMPLETE"]
    assert names(commit["inputs"]) == lake_tables
    assert {table(airflow.catalog / "tables"), table(airflow.catalog / "columns")} <= names(commit["outputs"])
    # A discovery step read the state and wrote its results.
    (fks,) = by_job["lakemeta_discovery.fk_candidates"]["COMPLETE"]
    assert table(airflow.catalog / "state" / "hll_counters") in names(fks["inputs"])
    assert all(name.startswith(table(airflow.catalog / "state")[1]) for _, name in names(fks["inputs"]))
    assert table(airflow.catalog / "fk_candidates") in names(fks["outputs"])


def test_an_incremental_run_over_an_unchanged_lake_skips_its_steps_and_starts_no_discovery(
    airflow: Airflow, incremental_run: dict
) -> None:
    airflow.succeeded_run("lakemeta_discovery")  # the discovery the first commit started
    dag_runs = "/api/v2/dags/lakemeta_incremental/dagRuns"
    airflow.request("POST", dag_runs, {"dag_run_id": "unchanged_lake", "logical_date": None})

    def finished() -> dict | None:
        run = airflow.request("GET", f"{dag_runs}/unchanged_lake")
        return run if run["state"] in ("success", "failed") else None

    assert airflow.wait(finished, "the run over the unchanged lake")["state"] == "success"
    instances = airflow.request("GET", f"{dag_runs}/unchanged_lake/taskInstances")["task_instances"]
    states = {instance["task_id"]: instance["state"] for instance in instances}
    assert states.pop("detect_batches") == "success"
    assert "commit_batches" in states and set(states.values()) == {"skipped"}
    events = airflow.request("GET", "/api/v2/assets/events?source_run_id=unchanged_lake")
    assert events["total_entries"] == 0  # no asset, so no discovery run
    runs = read_catalog_table(airflow.catalog, "runs", published=False)
    assert runs.run_id.tolist() == [1]  # and no run opened


# Written at different times, or only by DAG runs (publication, searches): not compared.
VOLATILE = {"updated_at", "started_at", "finished_at", "previous_discovery_at"}
# discovery_runs logs what ran: the DAG runs every discovery step on a commit, `lakemeta run` the stale ones.
NOT_COMPARED = {"published", "joinable_tables", "discovery_runs"}


def catalog_rows(catalog: Location) -> dict[str, list]:
    """Every catalog and state table's rows, without volatile columns, in a canonical order."""
    contents = {}
    for name in sorted(set(all_schemas()) - NOT_COMPARED):
        rows = (catalog / name).delta_dataset().to_table().to_pylist()
        contents[name] = sorted(repr({k: v for k, v in row.items() if k not in VOLATILE}) for row in rows)
    return contents


def test_the_catalog_built_on_the_cluster_equals_local_modes(
    airflow: Airflow, incremental_run: dict, spark, tmp_path: Path
) -> None:
    airflow.succeeded_run("lakemeta_discovery")
    local_lake = tmp_path / "lake"
    airflow.lake.copy_tree(Location.parse(local_lake))
    config = load_config(
        {"lake": local_lake, "catalog": tmp_path / "catalog"},
        environ={"LAKEMETA_CONFIG": str(airflow.config_file)},
    )
    Pipeline(spark, config).run()  # every step in this process, in local mode, on local disk
    on_the_cluster, in_local_mode = catalog_rows(airflow.catalog), catalog_rows(config.catalog)
    assert on_the_cluster["state/hll_counters"] and on_the_cluster["state/posting_lists"]
    assert on_the_cluster == in_local_mode


def test_the_secrets_are_in_no_command_line_log_event_log_database_or_catalog(
    airflow: Airflow, incremental_run: dict, cluster_folder: Path
) -> None:
    """The S3 secret reaches every process through its environment only, the cluster's secret through
    the spark-defaults.conf files that configure it (and the workers' environment of their executors):
    never a command line, an Airflow task log or its database, a Spark event log, a driver's or an
    executor's output, or the catalog."""
    airflow.succeeded_run("lakemeta_discovery")
    # The watcher saw the Connect servers (the first and its restart), and no other Spark JVM: no task
    # started one.
    jvms = airflow.command_lines.spark_jvms
    assert len(jvms) >= 2 and all(SERVER_CLASS in command for command in jvms.values()), jvms
    assert airflow.command_lines.holding_the_secret == []
    files = [p for folder in (airflow.root, cluster_folder) for p in folder.rglob("*") if p.is_file()]
    assert (airflow.home / "airflow.db") in files
    assert any("dag_id=lakemeta_incremental" in str(p) and p.suffix == ".log" for p in files)  # task logs
    event_logs = [p for p in files if "spark-events" in p.parts and p.name.startswith("events_")]
    assert any(b"SparkListenerEnvironmentUpdate" in p.read_bytes() for p in event_logs)  # read as written
    assert any(p.name == "stderr" and "/work/app-" in str(p) for p in files)  # executors' output
    secret, cluster_secret = SECRET_KEY.encode(), CLUSTER_SECRET.encode()
    assert [p for p in files if secret in p.read_bytes()] == []
    configured = [p for p in files if p.name == "spark-defaults.conf"]
    assert len(configured) == 2 and all(cluster_secret in p.read_bytes() for p in configured)
    assert [p for p in files if p not in configured and cluster_secret in p.read_bytes()] == []
    catalog = airflow.catalog
    for hidden in (secret, cluster_secret):
        assert [name for name in catalog.files() if hidden in (catalog / name).read_bytes()] == []
