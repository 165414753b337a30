"""After set-up nothing downloads: a Spark session with Delta works with the network gone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SCRIPT = """
import sys
from pathlib import Path
from lakemeta.spark import get_session
spark = get_session("local[1]", "offline check")
path = str(Path(sys.argv[1]) / "t")
spark.range(5).write.format("delta").save(path)
print("rows", spark.read.format("delta").load(path).count())
"""


def test_spark_with_delta_runs_without_network(tmp_path: Path):
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs root with unshare and ip to run in a network namespace without network")
    # A fresh network namespace has only a loopback interface: no route to any registry.
    command = f"ip link set lo up && {sys.executable} -c '{SCRIPT}' {tmp_path}"
    result = subprocess.run(
        ["unshare", "--net", "--", "bash", "-c", command], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rows 5" in result.stdout
