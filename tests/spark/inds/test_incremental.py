"""Incremental ``inclusion_dependencies`` equal a discovery from scratch and brute force after every run of
random batches: inserts, deletes and updates with duplicates and nulls, emptied tables, a new table, a
dropped table, an added column, a run with nothing changed, and other settings."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config, IndConfig
from lakemeta.inds.columns import INPUTS
from lakemeta.inds.config import many_config
from lakemeta.inds.discover import RESULTS, discover_inclusion_dependencies
from lakemeta.pipeline import Pipeline

from ..lake_changes import arrow_rows, drop_table, process, random_change, random_rows
from .test_discover import brute_force

pytestmark = pytest.mark.spark

COMPONENTS = ("column_profile", "column_values")


def _result_pairs(table: pa.Table) -> set[tuple]:
    names = ["dep_table", "dep_column", "ref_table", "ref_column", "dep_distinct", "ref_distinct"]
    return {tuple(row[name] for name in names) for row in table.to_pylist()}


def _check(pipeline: Pipeline, lake: Path, inds: IndConfig) -> None:
    """The stored result and inputs against a discovery from scratch, and the result against brute force."""
    catalog = pipeline.catalog
    stored = catalog.read_small(RESULTS).drop_columns(["first_run"])
    scratch = discover_inclusion_dependencies(catalog, many_config(inds), incremental=False)
    assert stored.equals(scratch.result.cast(stored.schema))
    by_column = [("table_name", "ascending"), ("column_name", "ascending")]
    kept = catalog.read_small(INPUTS).sort_by(by_column)
    assert kept.equals(scratch.inputs.to_arrow().cast(kept.schema).sort_by(by_column))
    names = sorted(path.name for path in lake.iterdir())
    assert _result_pairs(stored) == brute_force(lake, names, inds.filters)


def _add_column(rng: np.random.Generator, path: Path) -> None:
    """A column added by a write with the wider schema (delta-rs's schema merge)."""
    rows = arrow_rows(random_rows(rng, 3))
    rows = rows.append_column("extra", pa.array([str(v) for v in rng.integers(0, 4, 3)]))
    write_deltalake(str(path), rows, mode="append", schema_mode="merge")


def test_incremental_discovery_equals_discovery_from_scratch_after_random_batches(
    spark, tmp_path: Path, caplog
) -> None:
    rng = np.random.default_rng(11)
    lake = tmp_path / "lake"
    for i in range(5):
        write_deltalake(str(lake / f"t{i}"), arrow_rows(random_rows(rng, int(rng.integers(3, 9)))))
    inds = IndConfig(filters="none")
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog", inds=inds))
    changed_counts = []
    caplog.set_level(logging.INFO, logger="lakemeta.inds.discover")
    widened = "t1"  # gains a column in round 3; the random changes write the narrower rows
    for round_ in range(6):
        tables = sorted(path.name for path in lake.iterdir() if path.name != widened)
        if round_ == 2:
            write_deltalake(str(lake / "new"), arrow_rows(random_rows(rng, 5)))
        elif round_ == 3:
            drop_table(lake / "t0")
            _add_column(rng, lake / widened)
        elif round_ == 4:
            pass  # nothing changed: no run, and discovery keeps every IND without work
        else:
            for table in rng.choice(tables, 2, replace=False):
                random_change(spark, rng, lake / str(table), foreign=True)
        process(pipeline, *COMPONENTS)
        caplog.clear()
        pipeline.discover("inclusion_dependencies")
        logged = re.search(r"(\d+) tables \((\d+) changed\)", caplog.text)
        assert logged, caplog.text
        changed_counts.append((int(logged[1]), int(logged[2])))
        _check(pipeline, lake, inds)
    # the first discovery computes every table, later ones only the changed ones, none when nothing changed
    assert changed_counts[0][0] == changed_counts[0][1]
    assert all(changed < total for total, changed in changed_counts[1:]), changed_counts
    assert changed_counts[4][1] == 0, changed_counts
    # other settings: everything computed again, as from scratch
    web = IndConfig(filters="web")
    Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog", inds=web)).discover(
        "inclusion_dependencies"
    )
    _check(pipeline, lake, web)
