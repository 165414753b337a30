"""The Spark Connect server's command line, its binding rule and the clients' URL (no JVM)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lakemeta.cli import main
from lakemeta.config import Config
from lakemeta.ports import free_port
from lakemeta.spark import get_session
from lakemeta.spark.connect import (
    SERVER_CLASS,
    TOKEN_VARIABLE,
    check_binding,
    remote_url,
    server_command,
)
from lakemeta.spark.serving import ConnectServerMissingError, require_serving


def confs(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, part in enumerate(command) if part == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_the_server_is_spark_submit_of_connect_with_delta_the_metastore_and_the_configured_master(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, "a-token")
    config = Config(
        lake=tmp_path / "lake", catalog=tmp_path / "catalog", spark_master="spark://10.0.0.5:7077"
    )
    command = server_command(config, "127.0.0.1", 15123)
    assert Path(command[0]).name == "spark-submit"
    assert command[command.index("--class") + 1] == SERVER_CLASS
    assert command[command.index("--master") + 1] == "spark://10.0.0.5:7077"
    assert any("delta-spark" in jar for jar in command[command.index("--jars") + 1].split(","))
    conf = confs(command)
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert conf["spark.connect.grpc.binding.port"] == "15123"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    # The database lakemeta lives in the server's metastore, beside the catalog.
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "catalog" / "_warehouse")
    assert not any("a-token" in part for part in command)  # the token reaches it by its environment only


def test_the_server_needs_a_lake_and_a_catalog(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    for variable in ("LAKEMETA_CONFIG", "LAKEMETA_LAKE", "LAKEMETA_CATALOG"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["connect-server"]) == 2  # start.sh stops restarting it on this code
    assert "lake and catalog must be set" in capsys.readouterr().err


def test_a_warm_up_needs_a_server(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    monkeypatch.delenv("LAKEMETA_SPARK_REMOTE", raising=False)
    assert main(["warm-up", "--lake", str(tmp_path / "lake"), "--catalog", str(tmp_path / "catalog")]) == 2
    assert "give --remote" in capsys.readouterr().err
    assert not (tmp_path / "catalog").exists()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_the_loopback_interface_is_served_without_a_token(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    check_binding(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "lakemeta.example.org"])
def test_any_other_address_needs_a_token(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    with pytest.raises(ValueError, match=TOKEN_VARIABLE):
        check_binding(host)
    monkeypatch.setenv(TOKEN_VARIABLE, "a-token")
    check_binding(host)


def test_clients_name_the_server_localhost_and_carry_a_token_when_given() -> None:
    assert remote_url("localhost", 15002) == "sc://localhost:15002"
    assert remote_url("localhost", 15002, "t0k") == "sc://localhost:15002/;token=t0k"


def test_a_client_without_a_server_fails_in_seconds_naming_the_address_and_what_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ConnectServerMissingError) as missing:
        require_serving(remote_url("localhost", port, "a-token"), timeout=1.0)
    assert time.monotonic() - started < 5
    message = str(missing.value)
    assert f"localhost:{port}" in message and "a-token" not in message
    assert "make airflow" in message and "lakemeta connect-server" in message
    # the sessions of `lakemeta --remote` and of the steps ask the same before pyspark's retries begin
    monkeypatch.setattr("lakemeta.spark.serving.REQUIRE_SERVING_SECONDS", 1.0)
    with pytest.raises(ConnectServerMissingError):
        get_session(remote=remote_url("localhost", port))
