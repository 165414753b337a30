"""The spark-submit jobs under jobs/: each parses its command line into its step's parameters and the
configuration, and runs the step of ``lakemeta.orchestration.steps`` by that name. The steps themselves
run in the Spark tests and under Airflow; here ``run_step`` is replaced by a recorder, so that a job's
command line is checked without a session."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from lakemeta.orchestration import steps

JOBS = Path(__file__).resolve().parents[3] / "jobs"


def test_every_step_has_its_job_and_every_job_its_step():
    assert {path.stem for path in JOBS.glob("*.py")} == set(steps.STEPS)


@pytest.mark.parametrize(
    ("job", "argv", "parameters"),
    [
        ("scan_batches", [], {}),
        ("update_state", ["hll_counters"], {"component": "hll_counters"}),
        ("commit_batches", [], {}),
        ("discover", ["keys_and_dependencies"], {"step": "keys_and_dependencies"}),
        ("rebuild_state", [], {}),
        (
            "joinable_search",
            ["--query", "shop/orders", "--key", "id,note", "--query-id", "q1", "--k", "5"],
            {"query": "shop/orders", "key": "id,note", "query_id": "q1", "k": 5, "hash_bits": None},
        ),
        ("audit_catalog", [], {}),
        ("publish_catalog", ["--audit", "/c/_quality/audit.json"], {"audit": "/c/_quality/audit.json"}),
    ],
)
def test_a_job_runs_its_step_with_the_parameters_of_its_command_line(
    job: str, argv: list[str], parameters: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    monkeypatch.setattr(steps, "run_step", lambda *args: calls.append(args))
    command = ["--lake", str(tmp_path / "lake"), "--catalog", str(tmp_path / "catalog")]
    monkeypatch.setattr(sys, "argv", [f"{job}.py", *command, "--set", "fks.min_score=0.2", *argv])
    runpy.run_path(str(JOBS / f"{job}.py"), run_name="__main__")
    ((name, given, config),) = calls
    assert (name, given) == (job, parameters)
    assert config.fks.min_score == 0.2
    assert config.lake.local_path() == tmp_path / "lake"
