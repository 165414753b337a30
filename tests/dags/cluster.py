"""A real Spark standalone cluster on 127.0.0.1 for the tests: a master and two workers started with
spark-class from the project's venv, as infra/production/systemd starts them (the pip package has no
start-master.sh), with their settings in a spark-defaults.conf of their own, as production's
SPARK_CONF_DIR holds them."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from lakemeta.ports import free_port
from lakemeta.spark.session import spark_environment

REPO = Path(__file__).resolve().parents[2]
SPARK_CLASS = str(REPO / ".venv" / "bin" / "spark-class")


def _wait_for(log: Path, text: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"{log.name}: exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"{log.name}: no {text!r} within {timeout} s:\n{log.read_text()[-3000:]}")


@contextmanager
def standalone_cluster(
    logs: Path,
    workers: int = 2,
    cores: int = 2,
    memory: str = "2g",
    env: dict[str, str] | None = None,
    conf: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """The master's URL while a master and ``workers`` workers (``cores`` and ``memory`` each) run with the
    Spark settings ``conf`` (their spark-defaults.conf, mode 0600: it may hold the cluster's secret); their
    logs, and the applications' folders (executors' output), go to ``logs``."""
    logs.mkdir(parents=True, exist_ok=True)
    conf_dir = logs / "conf"
    conf_dir.mkdir()
    defaults = conf_dir / "spark-defaults.conf"
    defaults.touch(mode=0o600)
    defaults.write_text("".join(f"{key} {value}\n" for key, value in (conf or {}).items()))
    # spark-class finds SPARK_HOME with PYSPARK_PYTHON, and executors run it: the project's Python.
    env = {**os.environ, **spark_environment(), **(env or {}), "SPARK_CONF_DIR": str(conf_dir)}
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> tuple[Path, subprocess.Popen]:
        log = logs / f"{name}.log"
        with log.open("w") as out:
            process = subprocess.Popen([SPARK_CLASS, *args], stdout=out, stderr=subprocess.STDOUT, env=env)
        processes.append(process)
        return log, process

    try:
        log, master = start(
            "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", str(free_port()),
        )  # fmt: skip
        _wait_for(log, "I have been elected leader", master)
        for index in range(workers):
            log, worker = start(
                f"worker-{index}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                "--work-dir", str(logs / "work"), master_url,
            )  # fmt: skip
            _wait_for(log, "Successfully registered with master", worker)
        yield master_url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
