"""The tables a DAG task's step read and wrote, as the OpenLineage provider receives them (no JVM: the
catalog's delta-rs commits, which pass the same crash points as its Spark commits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakemeta import crash_points
from lakemeta.catalog import Catalog
from lakemeta.lineage import StepWatch, TableVersion, dataset_name
from lakemeta.registry import state_schemas
from lakemeta.storage import Location


def test_datasets_are_named_as_openlineage_names_object_storage_and_files() -> None:
    assert dataset_name(Location.parse("s3://bucket/lake/shop/orders")) == ("s3://bucket", "lake/shop/orders")
    assert dataset_name(Location.parse("/data/catalog/state/hll_counters")) == (
        "file",
        "/data/catalog/state/hll_counters",
    )


def test_the_outputs_are_the_tables_the_step_committed_to_and_the_inputs_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Location.parse(tmp_path / "catalog")
    monkeypatch.setenv("LAKEMETA_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("LAKEMETA_CATALOG", str(root))
    catalog = Catalog(None, root, state_schemas())
    catalog.truncate("state/column_profile")  # before the step: read, not written
    catalog.truncate("fk_candidates")
    watch = StepWatch("discover")
    catalog.truncate("fk_candidates")  # the step's two commits
    catalog.truncate("fk_candidates")
    catalog.truncate("inclusion_estimates")  # a table the step creates
    lineage = watch.finish()
    catalog.truncate("tables")  # after the step: not its
    assert lineage.inputs == [TableVersion(root / "state" / "column_profile", 0)]
    assert lineage.outputs == [
        TableVersion(root / "fk_candidates", 2),
        TableVersion(root / "inclusion_estimates", 0),
    ]
    assert crash_points.on_reach is crash_points.kill_when_named  # the observer is gone
