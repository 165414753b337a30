"""A test's script run in a Python process of its own (a Connect client, a DAG parse without Java): pyspark
and Airflow keep process-wide state that one test must not leave to the next."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_script(
    script: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """``python -c script args...`` from the repository (so that it imports ``tests``), its output
    captured as text."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
