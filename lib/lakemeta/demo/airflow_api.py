"""A running Airflow's REST API (v2), signed in as one of its users: how the running-Airflow and deployment
tests and the benchmarks drive an Airflow.

Airflow's simple auth manager (`make airflow`, infra/airflow/start.sh) writes the admin's generated password
to ``$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated``, the default password here; with the FAB
auth manager the users have the passwords they were created with. A JWT from ``POST /auth/token`` signs
every later call."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path


class AirflowApi:
    """The REST API at ``url`` of the Airflow whose home is ``home``, as ``user`` (with ``password``, or the
    simple auth manager's generated one)."""

    def __init__(self, url: str, home: Path, user: str = "admin", password: str | None = None) -> None:
        self.url, self.home, self.user, self._password = url, home, user, password
        self._token: str | None = None

    @property
    def password(self) -> str:
        if self._password is not None:
            return self._password
        generated = self.home / "simple_auth_manager_passwords.json.generated"
        return json.loads(generated.read_text())[self.user]

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        """One call as the user (signs in on the first)."""
        if self._token is None:
            credentials = {"username": self.user, "password": self.password}
            self._token = self.call("POST", "/auth/token", credentials)["access_token"]
        return self.call(method, path, body, {"Authorization": f"Bearer {self._token}"})

    def call(self, method: str, path: str, body: dict | None, headers: dict[str, str] | None = None) -> dict:
        """One call with only the credentials ``headers`` carry."""
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def healthy(self) -> bool:
        """The metadata database and the scheduler report healthy (False while the API server does not
        serve yet)."""
        try:
            health = self.call("GET", "/api/v2/monitor/health", None)
        except OSError:  # refused, reset or timed out: still starting
            return False
        return all(health.get(part, {}).get("status") == "healthy" for part in ("metadatabase", "scheduler"))

    def parsed(self, dag_id: str) -> bool:
        """The dag-processor has parsed ``dag_id``."""
        try:
            self.request("GET", f"/api/v2/dags/{dag_id}")
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return False
            raise
        return True

    def unpause(self, dag_id: str) -> None:
        """Unpause ``dag_id`` (once ``parsed``)."""
        self.request("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def runs(self, dag_id: str) -> list[dict]:
        """The runs of ``dag_id``, latest first."""
        return self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns?order_by=-run_after")["dag_runs"]

    def trigger(self, dag_id: str, conf: dict | None = None) -> dict:
        """A manual run of ``dag_id`` now, with ``conf`` (its params)."""
        body = {"logical_date": None, "conf": conf or {}}
        return self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        return self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
