"""The production deployment's files agree with one another and with the repository (no processes started):
each unit starts a program the project installs, the tasks' unit carries the Connect server's token, and
the history server reads the folder the applications write their events to."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...production import PRODUCTION, REPO, UNITS, service_settings, spark_defaults

SERVICES = sorted(UNITS.glob("*.service"))


def unit(path: Path) -> dict[str, list[str]]:
    return service_settings(path.read_text())


def production_spark_defaults() -> dict[str, str]:
    return spark_defaults((PRODUCTION / "spark-defaults.conf").read_text())


@pytest.mark.parametrize("path", SERVICES, ids=[path.stem for path in SERVICES])
def test_every_unit_starts_a_program_of_the_projects_venv(path: Path) -> None:
    for command in unit(path)["ExecStart"]:
        program = command.split()[0].lstrip("-")
        assert program.startswith("/opt/lakemeta/.venv/bin/"), command
        assert (REPO / program.removeprefix("/opt/lakemeta/")).exists(), f"{path.name}: {program}"


def test_the_unit_that_runs_the_tasks_carries_the_connect_servers_token() -> None:
    # the LocalExecutor of the scheduler starts the task processes, whose Spark Connect client reads the
    # token from its environment: the same file as the server's
    scheduler = unit(PRODUCTION / "systemd" / "airflow-scheduler.service")["EnvironmentFile"]
    server = unit(PRODUCTION / "systemd" / "lakemeta-connect.service")["EnvironmentFile"]
    assert "/etc/lakemeta/connect-secrets.env" in scheduler and "/etc/lakemeta/connect-secrets.env" in server
    assert "token" not in (PRODUCTION / "airflow.env").read_text().split("AIRFLOW_CONN_LAKEMETA_CONNECT=")[1]


def test_the_history_server_reads_where_the_applications_write_and_the_folder_is_made_first() -> None:
    settings = production_spark_defaults()
    assert settings["spark.eventLog.enabled"] == "true"
    assert settings["spark.history.fs.logDirectory"] == settings["spark.eventLog.dir"]
    folder = settings["spark.eventLog.dir"].removeprefix("file:")
    for name in ("lakemeta-connect", "spark-history"):
        made = unit(PRODUCTION / "systemd" / f"{name}.service")["ExecStartPre"]
        assert any(command.endswith(f"install -d -m 0750 {folder}") for command in made), name


def test_every_connection_and_local_file_of_the_cluster_is_protected() -> None:
    settings = production_spark_defaults()
    assert (
        settings["spark.authenticate"] == "true" and settings["spark.authenticate.secret"] == "SPARK_SECRET"
    )
    assert settings["spark.network.crypto.enabled"] == "true"
    assert settings["spark.io.encryption.enabled"] == "true"
    assert settings["spark.master.rest.enabled"] == "false" and settings["spark.ui.killEnabled"] == "false"
