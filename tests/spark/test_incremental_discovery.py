"""Incremental discovery equals discovery from scratch after every run of random batches (inserts, deletes
and updates with duplicates and nulls, emptied tables, a new table, a dropped table, an added column, a
run with nothing changed, other settings): ``inclusion_dependencies`` (and brute force),
``inclusion_estimates`` and ``fk_candidates`` (with the exact key checks of tables without agree-sets),
each computed again only for the changed tables."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import AgreeSetConfig, Config, IndConfig, SketchConfig
from lakemeta.fks.discover import RESULTS as FK_RESULTS
from lakemeta.fks.discover import SCORED_STATE, discover_fk_candidates
from lakemeta.inds.config import many_config
from lakemeta.inds.discover import RESULTS, discover_inclusion_dependencies
from lakemeta.inds.kept_inputs import COMPUTED_IN, read_kept_inputs
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.sketches.discover import TARGET, estimate_inclusions
from lakemeta.values.inclusion import PAIR

from .inds.test_discover import brute_force
from .lake_changes import arrow_rows, drop_table, process, random_change, random_rows

pytestmark = pytest.mark.spark

COMPONENTS = ("column_profile", "hll_counters", "column_values", "agree_sets")
STEPS = ("inclusion_estimates", "inclusion_dependencies", "fk_candidates")
# a block per column or two: the changed columns' tiles are few of many
SKETCHES = SketchConfig(tile_bytes=20_000)
# Tables above 8 rows keep no agree-sets: their keys are checked exactly, and the checks kept (fks.keys).
AGREE_SETS = AgreeSetConfig(max_rows=8)


def _result_pairs(table: pa.Table) -> set[tuple]:
    names = ["dep_table", "dep_column", "ref_table", "ref_column", "dep_distinct", "ref_distinct"]
    return {tuple(row[name] for name in names) for row in table.to_pylist()}


def _check_estimates(pipeline: Pipeline, sketches: SketchConfig) -> None:
    """The stored estimates against estimates from scratch, on the driver and in the executors."""
    stored = pipeline.catalog.read_small(TARGET).sort_by([(name, "ascending") for name in PAIR])
    assert len(stored)
    # on the driver; begun there and moved to the executors past a bound of one pair; in the executors
    for driver_state_bytes, max_pairs, on_driver in (
        (16 << 20, 1 << 21, True),
        (16 << 20, 1, False),
        (0, 0, False),
    ):
        run = estimate_inclusions(pipeline.catalog, sketches, False, driver_state_bytes, max_pairs)
        assert run.on_driver == on_driver
        assert stored.equals(run.table().cast(stored.schema)), (driver_state_bytes, max_pairs)


def _check_fks(pipeline: Pipeline) -> int:
    """The stored FK candidates and outcomes against a run from scratch; the number of candidates."""
    catalog = pipeline.catalog
    stored = catalog.read_small(FK_RESULTS).drop_columns(["first_run"])
    outcomes = catalog.read_small(SCORED_STATE)
    # on the driver, and in the executors
    in_executors = dataclasses.replace(pipeline.config.scan, driver_state_bytes=0)
    for scan, on_driver in ((pipeline.config.scan, True), (in_executors, False)):
        config = dataclasses.replace(pipeline.config, scan=scan)
        scratch = discover_fk_candidates(catalog, pipeline.lake, config, incremental=False)
        assert scratch.on_driver == on_driver
        ranked = scratch.table("ranked")
        assert stored.equals(ranked.select(stored.column_names).cast(stored.schema)), on_driver
        assert outcomes.equals(scratch.table("outcomes").cast(outcomes.schema)), on_driver
        scratch.release()
    return len(stored)


def _check(pipeline: Pipeline, lake: Path, inds: IndConfig) -> None:
    """The stored result and inputs against a discovery from scratch, and the result against brute force."""
    catalog = pipeline.catalog
    stored = catalog.read_small(RESULTS).drop_columns(["first_run"]).sort_by([(c, "ascending") for c in PAIR])
    # in the executors: no driver bytes, or more candidates than a bound of one pair; on the driver
    for driver_state_bytes, max_pairs, on_driver in (
        (0, 1 << 21, False),
        (16 << 20, 1, False),
        (16 << 20, 1 << 21, True),
    ):
        scratch = discover_inclusion_dependencies(
            catalog, many_config(inds), False, driver_state_bytes, max_pairs
        )
        # (a lake of at most one IND may have no more candidates than the bound)
        assert scratch.on_driver == on_driver or len(stored) <= max_pairs
        assert stored.equals(scratch.table().select(stored.column_names).cast(stored.schema))
    kept = read_kept_inputs(catalog, scratch.inputs.table_names, scratch.inputs.column_names)
    assert (kept.at >= 0).all() and not kept.unlisted
    current = kept.current_rows().drop_columns([COMPUTED_IN])
    assert current.equals(scratch.inputs.to_arrow().cast(current.schema))
    names = sorted(path.name for path in lake.iterdir())
    assert _result_pairs(stored) == brute_force(lake, names, inds.filters)


def _ids(ids: range | list[int]) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "code": [f"k{i}" for i in ids]})


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
    # a key the random tables' ids reference: FK candidates, of which a batch changes some
    write_deltalake(str(lake / "ids"), _ids(range(12)))
    # both validations, driver's and Spark's; the inputs of a batch's columns computed on the driver, those
    # of every column (the first discovery, the discovery from scratch) by Spark
    inds = IndConfig(filters="none", driver_validation_values=4, driver_signature_values=60)
    config = Config(
        lake=lake, catalog=tmp_path / "catalog", inds=inds, sketches=SKETCHES, agree_sets=AGREE_SETS
    )
    pipeline = Pipeline(spark, config)
    changed_counts, estimated_counts, fk_counts, key_reads, computed = [], [], [], [], []
    caplog.set_level(logging.INFO, logger="lakemeta")
    widened = "t1"  # gains a column; the random changes write the narrower rows
    rounds = ["random", "new table", "dropped table, added column", "nothing", "random, and the key"]
    for kind in rounds:
        tables = sorted(path.name for path in lake.iterdir() if path.name not in (widened, "ids"))
        if kind == "new table":
            write_deltalake(str(lake / "new"), arrow_rows(random_rows(rng, 5)))
        elif kind == "dropped table, added column":
            drop_table(lake / "t0")
            _add_column(rng, lake / widened)
        elif kind.startswith("random"):
            for table in rng.choice(tables, 2, replace=False):
                random_change(spark, rng, lake / str(table), foreign=True)
        if kind == "random, and the key":
            write_deltalake(str(lake / "ids"), _ids([12]), mode="append")
        # "nothing": no run, and discovery keeps every result without work
        process(pipeline, *COMPONENTS)
        caplog.clear()
        for step in STEPS:
            pipeline.discover(step)
        logged = re.search(r"(\d+) tables \((\d+) changed\)", caplog.text)
        assert logged, caplog.text
        changed_counts.append((int(logged[1]), int(logged[2])))
        computed.append(re.findall(r"distinct values\) (on the driver|by Spark)", caplog.text))
        estimated = re.search(r"inclusion estimates: (\d+) columns \((\w+) changed\)", caplog.text)
        estimated_counts.append(estimated and (int(estimated[1]), estimated[2]))
        _check(pipeline, lake, inds)
        _check_estimates(pipeline, SKETCHES)
        scored = re.search(r"reaching theta=[\d.]+ \((\d+) scored", caplog.text)
        fk_counts.append((_check_fks(pipeline), int(scored[1])))
        checked = re.search(r"FK keys: (\d+) tables checked, (\d+) of them read", caplog.text)
        key_reads.append((int(checked[1]), int(checked[2])))
    # the first discovery computes every table, later ones only the changed ones, none when nothing changed
    assert changed_counts[0][0] == changed_counts[0][1]
    assert all(changed < total for total, changed in changed_counts[1:]), changed_counts
    nothing = rounds.index("nothing")
    assert changed_counts[nothing][1] == 0, changed_counts
    # Many's inputs of every column by Spark the first time, of a batch's columns on the driver later
    assert computed[0] == ["by Spark"] and computed[nothing] == [], computed
    assert ["on the driver"] in computed[1:], computed
    # the estimates likewise: all columns first, a few of them after a batch, nothing when nothing changed
    assert estimated_counts[0] is not None and estimated_counts[0][1] == "all", estimated_counts
    after_batches = [counts for i, counts in enumerate(estimated_counts[1:], 1) if i != nothing]
    assert all(0 < int(changed) < total for total, changed in after_batches), estimated_counts
    assert estimated_counts[nothing] is None, estimated_counts
    # FK candidates found, and after a batch only some of them scored again
    assert all(found > 0 for found, _ in fk_counts), fk_counts
    assert any(scored < fk_counts[0][1] for _, scored in fk_counts[1:]), fk_counts
    # keys checked exactly (of "ids"): read the first time, then not until the last round changes "ids"
    assert key_reads[0][0] == key_reads[0][1] > 0, key_reads
    assert all(read == 0 for _, read in key_reads[1:-1]) and key_reads[-1][1] > 0, key_reads
    # other settings: everything computed again, as from scratch
    web, stricter = (
        IndConfig(filters="web"),
        SketchConfig(inclusion_floor=0.8, tile_bytes=SKETCHES.tile_bytes),
    )
    other = Pipeline(spark, dataclasses.replace(config, inds=web, sketches=stricter))
    for step in STEPS:
        other.discover(step)
    _check(pipeline, lake, web)
    _check_estimates(pipeline, stricter)
