"""The tables a DAG task's step read and wrote, as the OpenLineage provider receives them (no JVM: the
catalog's delta-rs commits, which report to the same observers as its Spark commits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakemeta.catalog import Catalog, Txn, store
from lakemeta.catalog.contract import ensure_tables
from lakemeta.orchestration.lineage import StepWatch, TableVersion, dataset_name
from lakemeta.registry import state_schemas
from lakemeta.storage import Location


def test_datasets_are_named_as_openlineage_names_object_storage_and_files() -> None:
    assert dataset_name(Location.parse("s3://bucket/lake/shop/orders")) == ("s3://bucket", "lake/shop/orders")
    assert dataset_name(Location.parse("/data/catalog/state/hll_counters")) == (
        "file",
        "/data/catalog/state/hll_counters",
    )


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    """An empty catalog, which the configuration of the task's process names (no JVM: delta-rs)."""
    root = Location.parse(tmp_path / "catalog")
    monkeypatch.setenv("LAKEMETA_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("LAKEMETA_CATALOG", str(root))
    return Catalog(None, root, state_schemas())


def test_the_outputs_are_the_tables_the_step_committed_to_and_the_inputs_the_state(catalog: Catalog) -> None:
    root = catalog.root
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
    assert store.write_observers == []  # the observer is gone


def test_a_write_an_earlier_attempt_committed_is_still_the_retried_steps_output(catalog: Catalog) -> None:
    root = catalog.root
    ensure_tables(catalog)
    changes = catalog.arrow_schema("relationship_changes").empty_table()
    txn = Txn("a step", 1)
    catalog.append_small("relationship_changes", changes, txn)  # the killed attempt's commit
    watch = StepWatch("discover")  # its retry
    catalog.append_small("relationship_changes", changes, txn)
    version = (root / "relationship_changes").delta_table().version()
    assert watch.finish().outputs == [TableVersion(root / "relationship_changes", version)]
