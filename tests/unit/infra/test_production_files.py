"""The production deployment's files agree with one another and with the repository (no processes started):
each unit starts a program the project installs, the tasks' unit carries the Connect server's token, and
the history server reads the folder the applications write their events to."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PRODUCTION = REPO / "infra" / "production"
UNITS = sorted((PRODUCTION / "systemd").glob("*.service"))


def unit(path: Path) -> dict[str, list[str]]:
    """A unit's [Service] settings, each with every value it is given (a key may repeat)."""
    parser = configparser.ConfigParser(strict=False, interpolation=None, dict_type=_MultiDict)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(path.read_text())
    return {key: value.split("\n") for key, value in parser["Service"].items()}


class _MultiDict(dict):
    """configparser's dict that keeps every value of a repeated key (joined by newlines)."""

    def __setitem__(self, key, value):
        if isinstance(value, list) and key in self:
            self[key].extend(value)
            return
        super().__setitem__(key, value)


def spark_defaults() -> dict[str, str]:
    lines = (PRODUCTION / "spark-defaults.conf").read_text().splitlines()
    return dict(line.split(maxsplit=1) for line in lines if line.strip() and not line.startswith("#"))


@pytest.mark.parametrize("path", UNITS, ids=[path.stem for path in UNITS])
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
    settings = spark_defaults()
    assert settings["spark.eventLog.enabled"] == "true"
    assert settings["spark.history.fs.logDirectory"] == settings["spark.eventLog.dir"]
    folder = settings["spark.eventLog.dir"].removeprefix("file:")
    for name in ("lakemeta-connect", "spark-history"):
        made = unit(PRODUCTION / "systemd" / f"{name}.service")["ExecStartPre"]
        assert any(command.endswith(f"install -d -m 0750 {folder}") for command in made), name


def test_every_connection_and_local_file_of_the_cluster_is_protected() -> None:
    settings = spark_defaults()
    assert (
        settings["spark.authenticate"] == "true" and settings["spark.authenticate.secret"] == "SPARK_SECRET"
    )
    assert settings["spark.network.crypto.enabled"] == "true"
    assert settings["spark.io.encryption.enabled"] == "true"
    assert settings["spark.master.rest.enabled"] == "false" and settings["spark.ui.killEnabled"] == "false"
