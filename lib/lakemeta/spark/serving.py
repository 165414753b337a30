"""Whether a Spark Connect server accepts connections at an address, and the error that says what to start
when none does: what the Connect server's clients (the tasks, ``--remote``, the warm-up) and its
launcher (``connect.running_server``) ask before they talk to it."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.parse

DEFAULT_PORT = 15002


def wait_until_serving(
    host: str, port: int, timeout: float = 120, process: subprocess.Popen | None = None
) -> None:
    """Return once the server accepts connections on ``host:port``; an error if ``process`` (the server)
    exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited with {process.returncode} before serving")
        try:
            with socket.create_connection((host, port), timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no Spark Connect server on {host}:{port} after {timeout} s") from None
            time.sleep(0.5)


def _address(url: str) -> tuple[str, int]:
    """The host and port of a client URL (``sc://host:port/;token=...``)."""
    address = urllib.parse.urlsplit(url.replace("sc://", "http://", 1))
    return address.hostname or "localhost", address.port or DEFAULT_PORT


def wait_until_serving_url(url: str, timeout: float = 120) -> None:
    """``wait_until_serving`` for the server of a client URL (``sc://host:port/;token=...``)."""
    wait_until_serving(*_address(url), timeout)


class ConnectServerMissingError(RuntimeError):
    """No Spark Connect server accepts connections where a task or ``--remote`` looks for one."""


REQUIRE_SERVING_SECONDS = 30.0
"""How long a task waits for its server before it fails: a server restarting (its unit, start.sh) is back
within it; Airflow's retry waits out a longer restart."""


def require_serving(url: str, timeout: float | None = None) -> None:
    """Fail within ``timeout`` seconds (``REQUIRE_SERVING_SECONDS``), naming the address and how to start
    a server, where no Connect server accepts connections at ``url``'s address: pyspark's client would
    otherwise retry for some ten minutes (``session.prompt_retry_policy``) before saying anything."""
    host, port = _address(url)
    timeout = REQUIRE_SERVING_SECONDS if timeout is None else timeout
    try:
        wait_until_serving(host, port, timeout)
    except TimeoutError:
        raise ConnectServerMissingError(
            f"no Spark Connect server accepts connections on {host}:{port} (waited {timeout:.0f} s): "
            "start one with `make airflow` (Airflow and the server on this machine), "
            "`lakemeta connect-server` (the server alone), or the unit lakemeta-connect in production"
        ) from None
