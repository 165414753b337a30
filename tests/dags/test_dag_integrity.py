"""Every DAG file imports cleanly, and its wiring is what the pipeline expects."""

from __future__ import annotations

import contextlib
import copy
import email
import inspect
import json
import socket
import threading
from pathlib import Path

import pytest

from ..scripts import run_script

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.airflow


# What the DAG files read when they are parsed (lakemeta.orchestration.dag_settings): unset, each has its
# default.
DAG_VARIABLES = (
    "LAKEMETA_INCREMENTAL_SCHEDULE",
    "LAKEMETA_TASK_TIMEOUT_MINUTES",
    "LAKEMETA_DAG_RUN_TIMEOUT_MINUTES",
    "LAKEMETA_NOTIFY_EMAIL",
)


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory: pytest.TempPathFactory):
    import os

    os.environ.setdefault("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow-home")))
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    with pytest.MonkeyPatch.context() as environment:
        for variable in DAG_VARIABLES:
            environment.delenv(variable, raising=False)
        yield parse()


def parse(folder: Path = REPO / "dags"):
    """The DagBag of ``folder``, parsed in this environment."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(folder))


DAG_IDS = {
    "lakemeta_incremental",
    "lakemeta_discovery",
    "lakemeta_joinable_search",
    "lakemeta_rebuild",
    "lakemeta_maintenance",
}


def test_dags_import_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == DAG_IDS


# Parses the DAG folder argv[1] with the configuration reader and the jar lookup made to fail if called.
PARSE = """
import json, shutil, sys
import lakemeta.config
def refuse(*args, **kwargs):
    raise AssertionError("called while the DAG files were parsed")
lakemeta.config.load_config = refuse
import lakemeta.spark, lakemeta.spark.session
lakemeta.spark.delta_jars = lakemeta.spark.session.delta_jars = refuse
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({"java": shutil.which("java"), "dags": sorted(bag.dag_ids), "errors": bag.import_errors}))
"""


def test_dag_files_parse_without_java_or_configuration(tmp_path: Path):
    """The dag-processor builds the DAGs and nothing more: no Java, no configuration file, no jars."""
    import os

    environment = {
        name: value
        for name, value in os.environ.items()
        if name != "JAVA_HOME" and not name.startswith(("LAKEMETA_", "AIRFLOW"))
    }
    environment.update(
        PATH=str(tmp_path),  # no java on it
        AIRFLOW_HOME=str(tmp_path / "airflow"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        LAKEMETA_CONFIG=str(tmp_path / "missing.yaml"),  # reading it would fail
        LAKEMETA_JARS=str(tmp_path / "no-jars"),
    )
    parsed = run_script(PARSE, str(REPO / "dags"), env=environment)
    assert parsed.returncode == 0, parsed.stderr[-3000:]
    outcome = json.loads(parsed.stdout.strip().splitlines()[-1])
    assert outcome == {"java": None, "dags": sorted(DAG_IDS), "errors": {}}


def upstream(dag) -> dict[str, list[str]]:
    return {task.task_id: sorted(task.upstream_task_ids) for task in dag.tasks}


def step_of(task) -> str:
    """The step of ``lakemeta.orchestration.steps.STEPS`` a Spark task runs."""
    return task.op_args[0]


def parameters_of(task) -> dict:
    """The parameters (templates) a Spark task hands its step."""
    return task.op_kwargs["parameters"]


def test_every_task_but_planning_and_the_audits_is_a_retried_step_on_the_connect_server_in_the_pool(
    dagbag,
):
    from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator

    from lakemeta.orchestration.steps import STEPS, run_step

    for dag_id in DAG_IDS:
        for task in dagbag.dags[dag_id].tasks:
            assert task.retries >= 1 and task.retry_exponential_backoff
            # No Spark: planning reads Delta logs, the batch audit runs Great Expectations over files,
            # the maintenance is delta-rs's. (The quality gate is a step: the server loads the snapshots
            # the publication reads while it audits.)
            if task.task_id in ("detect_batches", "batch_audit", "maintain_catalog"):
                assert task.python_callable.__module__ == "lakemeta.orchestration.python_tasks"
                assert task.pool == "default_pool"
                continue
            assert isinstance(task, PySparkOperator) and task.python_callable is run_step
            assert task.conn_id == "lakemeta_connect"
            assert task.pool == "lakemeta_spark" and task.pool_slots == 1  # the server's steps are capped
            # The same step a job under jobs/ runs, with parameters its function takes.
            assert (REPO / "jobs" / f"{step_of(task)}.py").exists()
            accepted = inspect.signature(STEPS[step_of(task)].run).parameters
            assert set(parameters_of(task)) <= set(accepted) - {"pipeline"}


def test_incremental_dag_updates_state_and_publishes_the_asset_discovery_runs_on(dagbag):
    from lakemeta.registry import STATE_COMPONENTS

    dag = dagbag.dags["lakemeta_incremental"]
    assert dag.max_active_runs == 1
    state_updates = [entry.task_id for entry in STATE_COMPONENTS]
    assert state_updates == [
        "update_column_profile",
        "update_hll_counters",
        "update_column_values",
        "update_agree_sets",
        "update_posting_lists",
    ]
    for entry in STATE_COMPONENTS:  # one job for every component, which it names
        task = dag.get_task(entry.task_id)
        assert step_of(task) == "update_state"
        assert parameters_of(task) == {"component": entry.name}
    assert upstream(dag) == {
        "detect_batches": [],
        "scan_batches": ["detect_batches"],
        "batch_audit": ["detect_batches"],
        **{task: ["scan_batches"] for task in state_updates},
        "commit_batches": sorted(["batch_audit", *state_updates]),
    }
    # No table changed: planning returns False, which skips every task after it, the commit with its
    # asset among them (not only the direct downstream tasks).
    detect = dag.get_task("detect_batches")
    assert (
        type(detect).__name__ == "_ShortCircuitDecoratedOperator" and detect.ignore_downstream_trigger_rules
    )
    (asset,) = dag.get_task("commit_batches").outlets
    assert (asset.name, asset.uri) == ("lakemeta_state", "lakemeta://catalog/state")
    discovery = dagbag.dags["lakemeta_discovery"]
    assert [a.name for a in discovery.timetable.asset_condition.objects] == ["lakemeta_state"]


def test_a_registered_state_component_gets_its_task(dagbag, monkeypatch: pytest.MonkeyPatch):
    """A new component is a module and a registry entry: the incremental DAG then runs it like the others
    (the toy component of tests/spark/test_registry.py)."""
    from airflow.dag_processing.dagbag import DagBag

    from lakemeta import registry

    entry = registry.ComponentEntry("row_counts", "tests.spark.test_registry:RowCounts")
    monkeypatch.setattr(registry, "STATE_COMPONENTS", (*registry.STATE_COMPONENTS, entry))
    dag = DagBag(dag_folder=str(REPO / "dags" / "lakemeta_incremental.py")).dags["lakemeta_incremental"]
    assert parameters_of(dag.get_task("update_row_counts")) == {"component": "row_counts"}
    assert upstream(dag)["update_row_counts"] == ["scan_batches"]
    assert "update_row_counts" in dag.get_task("commit_batches").upstream_task_ids


def test_discovery_dag_wiring_and_params(dagbag, tmp_path: Path):
    from airflow.exceptions import ParamValidationError

    from lakemeta.registry import DISCOVERY_STEPS

    dag = dagbag.dags["lakemeta_discovery"]
    assert dag.max_active_runs == 1
    for step in DISCOVERY_STEPS:  # the registry's steps, each after the steps it reads
        task = dag.get_task(step.name)
        assert step_of(task) == "discover"
        assert parameters_of(task) == {"step": step.name}
        assert set(step.after) <= task.upstream_task_ids
    assert upstream(dag) == {
        "keys_and_dependencies": [],
        "inclusion_estimates": [],
        "inclusion_dependencies": [],
        "fk_candidates": ["inclusion_estimates", "keys_and_dependencies"],
        "quality_gate": ["fk_candidates", "inclusion_dependencies"],
        "publish": ["quality_gate"],
    }
    assert parameters_of(dag.get_task("publish")) == {"audit": "{{ ti.xcom_pull(task_ids='quality_gate') }}"}
    # No param has a default of its own: the configuration the task reads decides.
    assert set(triggered(dag.params, {}).values()) == {None}
    for bad in (
        {"inclusion_floor": 1.5},
        {"exact_max_distinct": -1},
        {"fk_inclusion_threshold": 0},
        {"ind_filters": "all"},
        {"require_name_match": "yes"},
        {"fk_min_score": -0.1},
    ):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, bad)
    # The params a run is triggered with reach every discovery step as typed configuration settings; the
    # ones left empty leave the configuration file's values (or the built-in ones) in force.
    config_file = tmp_path / "lakemeta.yaml"
    config_file.write_text("sketches:\n  inclusion_floor: 0.7\nfks:\n  min_score: 0.1\n")
    chosen = triggered(
        dag.params, {"ind_filters": "web", "require_name_match": True, "fk_name_signal": False}
    )
    for task_id in (
        "keys_and_dependencies",
        "inclusion_estimates",
        "inclusion_dependencies",
        "fk_candidates",
    ):
        config = configuration_of(dag.get_task(task_id), chosen, config_file)
        assert (config.sketches.inclusion_floor, config.inds.filters, config.fks.require_name_match) == (
            0.7,
            "web",
            True,
        )
        assert (config.agree_sets.max_fd_error, config.fks.inclusion_threshold) == (0.01, 0.9)
        assert (config.fks.name_signal, config.fks.min_score) == (False, 0.1)
    given = triggered(dag.params, {"inclusion_floor": 0.6, "fk_min_score": 0.02})
    config = configuration_of(dag.get_task("inclusion_estimates"), given, config_file)
    assert (config.sketches.inclusion_floor, config.fks.min_score) == (0.6, 0.02)


def configuration_of(task, params: dict, config_file: Path):
    """The configuration the task's step reads: the file's, overridden by the settings it is handed."""
    from lakemeta.config import load_config, parse_settings

    settings = task.render_template(task.op_kwargs["settings"], {"params": params, "run_id": "manual__1"})
    return load_config(parse_settings(settings), environ={"LAKEMETA_CONFIG": str(config_file)})


def test_maintenance_runs_daily_one_task_without_spark(dagbag):
    dag = dagbag.dags["lakemeta_maintenance"]
    assert upstream(dag) == {"maintain_catalog": []}
    assert dag.max_active_runs == 1
    assert dag.schedule == "@daily"


def test_rebuild_dag_asks_for_confirmation(dagbag):
    from airflow.exceptions import ParamValidationError

    dag = dagbag.dags["lakemeta_rebuild"]
    assert upstream(dag) == {
        "rebuild_state": [],
        "quality_gate": ["rebuild_state"],
        "publish": ["quality_gate"],
    }
    assert triggered(dag.params, {"confirm": "rebuild"}) == {"confirm": "rebuild"}
    for bad in ({}, {"confirm": "yes"}):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, bad)


def triggered(params, values: dict) -> dict:
    """The params of a run triggered with ``values``, resolved and validated as the trigger form does."""
    chosen = copy.deepcopy(params)
    chosen.update(values)
    return chosen.validate()


def test_joinable_search_dag_validates_its_params(dagbag, tmp_path: Path):
    from airflow.exceptions import ParamValidationError

    dag = dagbag.dags["lakemeta_joinable_search"]
    assert dag.schedule is None or dag.timetable.summary == "None"
    (task,) = dag.tasks
    assert step_of(task) == "joinable_search"
    assert parameters_of(task) == {
        "query": "{{ params.query }}",
        "key": "{{ params.key_columns | join(',') }}",
        "query_id": "{{ run_id }}",
    }
    good = {"query": "shop/orders", "key_columns": ["id", "note"], "k": 5, "hash_bits": 128}
    assert triggered(dag.params, good) == good
    for query in ("queries/q.csv", "sales 2024 ü", "a..b/c.csv"):
        assert triggered(dag.params, {**good, "query": query})["query"] == query
    for bad in (
        {"key_columns": []},
        {"key_columns": ["id", "id"]},
        {"k": 0},
        {"hash_bits": 100},
        {"query": ""},
        {"query": "/etc/passwd"},
        {"query": "../outside.csv"},
        {"query": "shop/../../outside.csv"},
        {"key_columns": ["id,note"]},
    ):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, {**good, **bad})
    with pytest.raises(ParamValidationError):  # the query and its key columns have no default
        triggered(dag.params, {"k": 5})
    # k and the super-key size left empty are the configuration's; given, they override it.
    config_file = tmp_path / "lakemeta.yaml"
    config_file.write_text("joinsearch:\n  hash_bits: 256\n")
    chosen = triggered(dag.params, {"query": "shop/orders", "key_columns": ["id"]})
    config = configuration_of(task, chosen, config_file)
    assert (config.joinsearch.k, config.joinsearch.hash_bits) == (10, 256)
    config = configuration_of(task, triggered(dag.params, good), config_file)
    assert (config.joinsearch.k, config.joinsearch.hash_bits) == (5, 128)


def test_every_task_has_an_execution_timeout_and_every_dag_a_run_timeout(dagbag, monkeypatch):
    from datetime import timedelta

    for dag_id in DAG_IDS:
        dag = dagbag.dags[dag_id]
        assert dag.dagrun_timeout == timedelta(hours=12)
        assert {task.execution_timeout for task in dag.tasks} == {timedelta(hours=2)}
        assert {task.retry_delay for task in dag.tasks} == {timedelta(seconds=30)}
    assert dagbag.dags["lakemeta_incremental"].schedule == "@hourly"
    monkeypatch.setenv("LAKEMETA_TASK_TIMEOUT_MINUTES", "45")
    monkeypatch.setenv("LAKEMETA_RETRY_DELAY_SECONDS", "5")
    monkeypatch.setenv("LAKEMETA_DAG_RUN_TIMEOUT_MINUTES", "90")
    monkeypatch.setenv("LAKEMETA_INCREMENTAL_SCHEDULE", "*/15 * * * *")
    configured = parse()
    assert configured.import_errors == {}
    for dag_id in DAG_IDS:
        dag = configured.dags[dag_id]
        assert dag.dagrun_timeout == timedelta(minutes=90)
        assert {task.execution_timeout for task in dag.tasks} == {timedelta(minutes=45)}
        assert {task.retry_delay for task in dag.tasks} == {timedelta(seconds=5)}
    assert configured.dags["lakemeta_incremental"].schedule == "*/15 * * * *"
    monkeypatch.setenv("LAKEMETA_TASK_TIMEOUT_MINUTES", "2h")  # a mistake is an import error naming it
    errors = parse().import_errors
    assert len(errors) == len(DAG_IDS)
    assert all("LAKEMETA_TASK_TIMEOUT_MINUTES" in error for error in errors.values())
    monkeypatch.setenv("LAKEMETA_TASK_TIMEOUT_MINUTES", "45")
    monkeypatch.setenv("LAKEMETA_RETRY_DELAY_SECONDS", "-5")
    errors = parse().import_errors
    assert errors and all("LAKEMETA_RETRY_DELAY_SECONDS" in error for error in errors.values())


def test_publish_emits_the_asset_a_downstream_dag_is_scheduled_on(dagbag, tmp_path: Path):
    """A user's DAG scheduled on the documented asset is triggered by either publish task's success: the
    asset it waits for is the one both publish tasks emit, and no other task emits it."""
    consumer = tmp_path / "downstream.py"
    consumer.write_text(
        "import pendulum\n"
        "from airflow.sdk import Asset, dag, task\n"
        "published = Asset(name='lakemeta_catalog_published', uri='lakemeta://catalog/published')\n"
        "@dag(schedule=[published], start_date=pendulum.datetime(2026, 1, 1, tz='UTC'))\n"
        "def downstream():\n"
        "    task(task_id='report')(lambda: None)()\n"
        "downstream()\n"
    )
    downstream = parse(tmp_path).dags["downstream"]
    (awaited,) = downstream.timetable.asset_condition.objects
    emitters = {
        (dag_id, task.task_id)
        for dag_id in DAG_IDS
        for task in dagbag.dags[dag_id].tasks
        if awaited in task.outlets
    }
    assert emitters == {("lakemeta_discovery", "publish"), ("lakemeta_rebuild", "publish")}
    for dag_id in ("lakemeta_discovery", "lakemeta_rebuild"):
        publish = dagbag.dags[dag_id].get_task("publish")
        assert step_of(publish) == "publish_catalog" and publish.outlets == [awaited]


def test_failure_notifications_are_off_by_default_and_mail_a_failed_run_when_enabled(dagbag, monkeypatch):
    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    assert all(not dagbag.dags[dag_id].on_failure_callback for dag_id in DAG_IDS)
    with SmtpSink() as sink:
        monkeypatch.setenv("LAKEMETA_NOTIFY_EMAIL", "ops@example.com, data@example.com")
        monkeypatch.setenv(
            "AIRFLOW_CONN_SMTP_DEFAULT",
            json.dumps(
                {
                    "conn_type": "smtp",
                    "host": "127.0.0.1",
                    "port": sink.port,
                    "extra": {"from_email": "airflow@example.com", "disable_ssl": True, "disable_tls": True},
                }
            ),
        )
        notified = parse()
        for dag_id in DAG_IDS:
            (notifier,) = notified.dags[dag_id].on_failure_callback
            assert isinstance(notifier, SmtpNotifier)
        # The context Airflow hands a DAG's failure callback (a run that timed out has no task instance).
        dag = notified.dags["lakemeta_incremental"]
        dag.on_failure_callback[0]({"dag": dag, "run_id": "scheduled__1", "reason": "timed_out"})
    (message,) = sink.messages
    assert message["to"] == ["ops@example.com", "data@example.com"]
    mail = email.message_from_string(message["data"])
    assert mail["Subject"] == "lakemeta: lakemeta_incremental run scheduled__1 failed"
    (body,) = [part.get_payload(decode=True).decode() for part in mail.walk() if not part.is_multipart()]
    assert body == "<p>lakemeta_incremental run scheduled__1 failed: timed_out</p>"


class SmtpSink(threading.Thread):
    """A one-connection-at-a-time SMTP server on 127.0.0.1 that keeps what it is sent."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.messages: list[dict] = []

    def __enter__(self) -> SmtpSink:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.close()

    def run(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.server.accept()
                with connection, connection.makefile("rwb") as stream:
                    self._serve(stream)

    def _serve(self, stream) -> None:
        def reply(line: str) -> None:
            stream.write(f"{line}\r\n".encode())
            stream.flush()

        reply("220 sink")
        message: dict = {"to": []}
        while line := stream.readline().decode():
            command = line.strip().upper()
            if command.startswith(("EHLO", "HELO")):
                reply("250 sink")
            elif command.startswith("RCPT TO:"):
                message["to"].append(line.strip()[8:].strip("<> "))
                reply("250 ok")
            elif command == "DATA":
                reply("354 go on")
                lines = []
                while (data := stream.readline().decode()) not in (".\r\n", ""):
                    lines.append(data)
                message["data"] = "".join(lines)
                self.messages.append(message)
                message = {"to": []}
                reply("250 ok")
            elif command == "QUIT":
                reply("221 bye")
                return
            else:  # MAIL FROM, RSET, NOOP
                reply("250 ok")


def test_only_operators_run_the_lakemeta_dags_and_analysts_the_joinable_search_alone(dagbag):
    # the FAB auth manager's DAG-level permissions (infra/production/README.md, "Roles"); the deployment
    # test signs in as an analyst and is refused a rebuild
    for dag_id in DAG_IDS:
        control = dagbag.dags[dag_id].access_control
        assert "can_create" in control["lakemeta_operator"]["DAG Runs"], dag_id
        analyst = control.get("lakemeta_analyst", {})
        triggers = "can_create" in analyst.get("DAG Runs", set())
        assert triggers == (dag_id == "lakemeta_joinable_search"), dag_id
