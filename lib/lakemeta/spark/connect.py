"""The Spark Connect server that the DAGs' tasks, and ``lakemeta --remote``, run their steps on.

One long-running Spark driver serves every step: a task pays no JVM start, no Delta or numba warm-up and
no new Spark application. The tasks of a DAG run share a Connect session (``attach_session``), which the
server ends once idle; a task killed mid-step leaves the server serving. The server holds what is fixed
for a deployment: Delta's jars and SQL extension, the storage settings of the lake and catalog, the
metastore of the database ``lakemeta`` (the embedded one beside the catalog admits one JVM: the
server's), and the master, ``local[*]`` or a standalone cluster's ``spark://host:7077`` whose
application it then is.

Authentication is Spark's: a bearer token in ``SPARK_CONNECT_AUTHENTICATE_TOKEN``, read by the server and by
pyspark's client alike, never on a command line. The server binds 127.0.0.1 unless told otherwise, and
refuses to bind any other address without a token. Spark Connect speaks plain gRPC: across hosts, put TLS
in front of it (infra/production/README.md).

Started by ``lakemeta connect-server`` (infra/airflow/start.sh, infra/production's systemd unit, the tests).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lakemeta.config import Config
from lakemeta.spark.serving import DEFAULT_PORT, wait_until_serving
from lakemeta.spark.session import (
    delta_jars,
    metastore_conf,
    spark_conf,
    spark_environment,
    with_prompt_retries,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_HOST = "127.0.0.1"
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
# The Airflow connection (type spark_connect) the DAGs' Spark tasks run through.
AIRFLOW_CONNECTION = "lakemeta_connect"
# Namespace of the session ids of DAG runs (``run_session_id``).
_RUN_SESSIONS = uuid.UUID("7f3c9a52-1f0e-4d4b-9a55-0c6e2b8d4a17")


def server_command(config: Config, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> list[str]:
    """spark-submit of the Connect server for ``config``'s lake, catalog, metastore and master."""
    lake, catalog = config.require_paths()
    conf = {
        **spark_conf(catalog, [lake], config.spark_master),
        **metastore_conf(config.metastore_uri),
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
    }
    command = [
        str(Path(sys.executable).with_name("spark-submit")),
        "--class", SERVER_CLASS,
        "--name", "lakemeta-connect",
        "--master", config.spark_master,
        "--driver-memory", os.environ.get("LAKEMETA_DRIVER_MEMORY", "4g"),
        "--jars", ",".join(delta_jars()),
    ]  # fmt: skip
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def check_binding(host: str) -> None:
    """Refuse to serve beyond the loopback interface without a token: anyone reaching the port could run
    code as the server's user."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost: whatever it resolves to, not only loopback
        loopback = False
    if not loopback and not os.environ.get(TOKEN_VARIABLE):
        raise ValueError(
            f"the Connect server would listen on {host} without authentication: set {TOKEN_VARIABLE} "
            "(a long random token) or bind 127.0.0.1"
        )


def serve(config: Config, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Become the Connect server (exec): its process is the one a supervisor (systemd, start.sh) watches."""
    check_binding(host)
    command = server_command(config, host, port)
    os.execve(command[0], command, {**os.environ, **spark_environment()})


def remote_url(host: str = "localhost", port: int = DEFAULT_PORT, token: str | None = None) -> str:
    """The client's URL of a server, with ``token`` or without (pyspark's client then takes
    ``SPARK_CONNECT_AUTHENTICATE_TOKEN``). A token is sent only over a secure channel; pyspark treats the
    host ``localhost`` as one (gRPC's local credentials), so a server on this host is named ``localhost``,
    not 127.0.0.1."""
    return f"sc://{host}:{port}" + (f"/;token={token}" if token else "")


@contextlib.contextmanager
def running_server(
    config: Config, port: int, log: Path, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """A Connect server for ``config`` on 127.0.0.1:``port`` while the block runs (the demo, benchmarks);
    its client URL, with the server's token. ``env`` is the server's environment (the token among it); its
    output goes to ``log``."""
    env = {**(os.environ if env is None else env), **spark_environment()}
    command = server_command(config, DEFAULT_HOST, port)
    with log.open("w") as output:
        server = subprocess.Popen(
            command,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the JVM and its Python workers stop together
        )
    try:
        wait_until_serving(DEFAULT_HOST, port, process=server)
        yield remote_url("localhost", port, env.get(TOKEN_VARIABLE))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def run_session_id(dag_id: str, run_id: str) -> str:
    """The id of the Connect session that the tasks of one DAG run share: the same for every task and
    every retry of the run, another for every other run."""
    return str(uuid.uuid5(_RUN_SESSIONS, f"{dag_id}/{run_id}"))


def session_url(url: str, session_id: str) -> str:
    """``url`` (``sc://host:port`` with or without ``/;param=value...``) naming the session ``session_id``."""
    base, _, params = url.partition("/;")
    kept = [param for param in params.split(";") if param and not param.startswith("session_id=")]
    return f"{base.rstrip('/')}/;" + ";".join([*kept, f"session_id={session_id}"])


def open_session(url: str, conf: Mapping[str, str] | None = None) -> SparkSession:
    """A new session of the server at ``url`` with ``conf`` set in it, released when it is stopped."""
    from pyspark.sql import SparkSession

    return with_prompt_retries(SparkSession.builder.remote(url).config(map=dict(conf or {})).create())


def interrupt_on_server(url: str, tag: str) -> list[str]:
    """From a client of its own, interrupt the operations tagged ``tag`` of the session that ``url`` names
    (``session_url``) until none runs (``interruption.interrupt_tagged``); nothing where that session has
    ended, which ended its operations. Returns the operations interrupted."""
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from lakemeta.spark.interruption import interrupt_tagged

    client = SparkSession.builder.remote(url).create()
    client.release_session_on_close = False  # the session is the task's, or its DAG run's
    try:
        return interrupt_tagged(client, tag)
    except PySparkException as error:
        if "SESSION_CLOSED" not in str(error) and "SESSION_NOT_FOUND" not in str(error):
            raise
        return []
    finally:
        client.stop()


def attach_session(
    url: str, session_id: str, app_name: str, conf: Mapping[str, str] | None = None
) -> tuple[SparkSession, bool]:
    """A client of the server's session ``session_id`` (created by the first client that names it), with
    ``app_name`` and ``conf`` set in it, and whether it is that shared session. A session the server has
    ended (released, or idle past ``spark.connect.session.manager.defaultSessionTimeout``) cannot be
    opened again: then a session of its own, which ``stop()`` releases.

    Sharing the session is what makes a DAG run's tasks cheap: Spark runs each session's Python UDFs in
    workers of its own (keyed by the session's artifact id), so a task in a new session starts Python
    workers and imports numba, pyarrow and the kernels again, where a task in its run's session finds them
    warm: a first ``mapInArrow`` that loads the kernels took several times as long in a new session as in a
    warm one, although through both DAGs (``bench/small_change.py``) the difference was within noise
    (docs/performance.md, "Measurements behind the code")."""
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    settings = {"spark.app.name": app_name, **(conf or {})}
    spark = with_prompt_retries(SparkSession.builder.remote(session_url(url, session_id)).create())
    spark.release_session_on_close = False  # stop() leaves it to the run's next task
    try:
        for key, value in settings.items():  # the session's first call: it fails if the session ended
            spark.conf.set(key, value)
    except PySparkException as error:
        spark.stop()
        if "SESSION_CLOSED" not in str(error):
            raise
        log.warning("the session %s of this run has ended on the server: the task opens its own", session_id)
        return open_session(url, settings), False
    return spark, True
