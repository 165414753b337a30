"""The Airflow UI end to end in headless Chromium: sign in, open lakemeta_joinable_search, fill its trigger
form's params, trigger it, wait for the run to succeed, and find the search's answer in the catalog.

Airflow runs for real (infra/airflow/start.sh: scheduler, dag-processor, api-server, triggerer on SQLite,
sign-in required), and the triggered task is a real spark-submit of jobs/joinable_search.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config
from lakemeta.pipeline import Pipeline
from lakemeta.show import read_catalog_table

from ..spark.lake_changes import process

REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
SCREENSHOTS = REPO / "test-output" / "ui"
RUN_ID = "ui_trigger_form"

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def airflow_ui(tmp_path: Path, spark) -> Iterator[dict]:
    """A lake whose state is built, and Airflow's four components started on it; their environment."""
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    write_deltalake(str(lake / "shop" / "orders"), pa.table({"id": [1, 2, 3], "note": ["a", None, "c"]}))
    write_deltalake(str(lake / "regions"), pa.table({"region": ["north", "south"]}))
    (lake / "queries").mkdir()
    (lake / "queries" / "q.csv").write_text("key,label\n1,a\n3,c\n4,z\n")
    process(Pipeline(spark, Config(lake=lake, catalog=catalog)), "posting_lists")  # what the search reads
    port = free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__API__PORT": str(port),
        "LAKEMETA_LAKE": str(lake),
        "LAKEMETA_CATALOG": str(catalog),
    }
    log = (tmp_path / "airflow.log").open("w")
    airflow = subprocess.Popen(
        ["bash", str(REPO / "infra" / "airflow" / "start.sh")],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the teardown stops every component
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
                    health = json.load(response)
                if all(
                    health.get(part, {}).get("status") == "healthy" for part in ("metadatabase", "scheduler")
                ):
                    break
            except OSError:
                pass
            assert airflow.poll() is None and time.monotonic() < deadline, (
                tmp_path / "airflow.log"
            ).read_text()[-3000:]
            time.sleep(2)
        yield {
            "url": url,
            "env": env,
            "catalog": catalog,
            "home": tmp_path / "airflow",
            "log": tmp_path / "airflow.log",
        }
    finally:
        os.killpg(airflow.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            airflow.wait(timeout=60)
        # A component still shutting down (the scheduler may outlive start.sh) is stopped too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(airflow.pid, signal.SIGKILL)
        log.close()


def answered(catalog: Path) -> bool:
    table = read_catalog_table(catalog, "joinable_tables")
    return bool((table.query_id == RUN_ID).any())


def run_state(env: dict, dag_id: str, run_id: str) -> str | None:
    command = f"source {REPO / 'infra' / 'airflow' / 'env.sh'} && airflow dags list-runs {dag_id} -o json"
    listed = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
    # Airflow may print warnings on stdout before the JSON list of runs.
    starts = [i for i in (listed.stdout.find("[{"), listed.stdout.find("[]")) if i >= 0]
    runs = json.JSONDecoder().raw_decode(listed.stdout, min(starts))[0] if starts else []
    return next((run["state"] for run in runs if run["run_id"] == run_id), None)


def test_a_search_triggered_from_the_ui_form_lands_in_the_catalog(airflow_ui: dict) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

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
        url = airflow_ui["url"]
        browser.get(f"{url}/dags/lakemeta_joinable_search")
        wait.until(expected_conditions.url_contains("/auth/login"))  # sign-in is required
        password = json.loads(
            (airflow_ui["home"] / "simple_auth_manager_passwords.json.generated").read_text()
        )
        wait.until(expected_conditions.presence_of_element_located((By.NAME, "username"))).send_keys("admin")
        browser.find_element(By.NAME, "password").send_keys(password["admin"])
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(expected_conditions.url_contains("/dags/lakemeta_joinable_search"))

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
        wait.until(expected_conditions.visibility_of_element_located((By.NAME, "dagRunId"))).send_keys(RUN_ID)
        browser.save_screenshot(str(SCREENSHOTS / "trigger-form.png"))
        trigger = browser.find_elements(
            By.XPATH, "//div[@role='dialog']//button[normalize-space()='Trigger']"
        )
        trigger[-1].click()

        deadline = time.monotonic() + 600
        failure = airflow_ui["log"]
        while not answered(airflow_ui["catalog"]):  # cheap to poll, unlike Airflow's CLI
            assert time.monotonic() < deadline, failure.read_text()[-3000:]
            time.sleep(3)
        while (state := run_state(airflow_ui["env"], "lakemeta_joinable_search", RUN_ID)) != "success":
            assert state != "failed" and time.monotonic() < deadline, failure.read_text()[-3000:]
            time.sleep(10)
        browser.get(f"{url}/dags/lakemeta_joinable_search/runs/{RUN_ID}")
        time.sleep(3)
        browser.save_screenshot(str(SCREENSHOTS / "run-succeeded.png"))
    finally:
        browser.quit()
    found = read_catalog_table(airflow_ui["catalog"], "joinable_tables")
    assert [(r.query_id, r.rank, r.table_name, r.joinability) for r in found.itertuples()] == [
        (RUN_ID, 1, "shop/orders", 2)
    ]
    assert json.loads(found.column_mapping[0]) == {"key": "id", "label": "note"}
