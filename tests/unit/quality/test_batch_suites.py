"""The batch audit's checks (``lakemeta.quality.batch_suites``) without a JVM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

# In a process of its own: the suite's process has Great Expectations loaded by other tests.
CHECKS_OF_A_PLAN = """
import sys
import pandas as pd
from lakemeta.lake.batches import Batch
from lakemeta.quality.batch_suites import batch_checks
from lakemeta.storage import Location

columns = pd.DataFrame({"table_name": ["orders"], "column_name": ["id"], "data_type": ["bigint"]})
new = Batch("items", "full", "snapshot", None, 0, "t1")
dropped = Batch("orders", "drop", "dropped", 0, None, "t0")
described = Batch("orders", "incremental", "cdf", 0, 1, "t0")
lake = Location.parse(sys.argv[1])
assert batch_checks([new, dropped], columns, lake) == []
print("great_expectations" in sys.modules)
checks = batch_checks([new, dropped, described], columns, lake)
print([check.name for check in checks], "great_expectations" in sys.modules)
"""


def test_a_plan_without_a_described_table_is_checked_without_loading_great_expectations(
    tmp_path: Path,
) -> None:
    """New and dropped tables have nothing to drift from: no check, and Great Expectations, seconds to
    import, is not loaded for them (a first run's batch audit); a described table's batch is checked."""
    lake = tmp_path / "lake"
    write_deltalake(str(lake / "orders"), pa.table({"id": [1, 2]}))
    write_deltalake(str(lake / "orders"), pa.table({"id": [3]}), mode="append")
    checked = subprocess.run(
        [sys.executable, "-c", CHECKS_OF_A_PLAN, str(lake)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert checked.stdout.splitlines() == ["False", "['batch orders @ 1'] True"]
