"""``fk_candidates`` through the pipeline: ranges of a key ranked below random samples of it, multi-column
candidates pruned on their tuples (TPC-H's foreign keys: ``test_tpch``; the choice in a lake of two
schemas: ``test_choice``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config, FkConfig
from lakemeta.fks.schema_view import write_catalog_page
from lakemeta.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark


def candidates(pipeline: Pipeline) -> list[dict]:
    rows = pipeline.catalog.read_small("fk_candidates").sort_by("rank").to_pylist()
    assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1))
    ordered = [(row["answer_set"] or 3, row["emd"]) for row in rows]
    assert ordered == sorted(ordered)  # answer set 1, then 2, then the rest, each by EMD_n
    return rows


def discover_fks(pipeline: Pipeline) -> list[dict]:
    process(pipeline, "column_profile", "hll_counters", "agree_sets")  # keys come from the agree-sets
    pipeline.discover("inclusion_estimates")
    pipeline.discover("fk_candidates")
    return candidates(pipeline)


def test_ranges_of_a_key_rank_below_random_samples_and_tuples_prune_multi_column_candidates(
    spark, tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)
    lake = tmp_path / "lake"
    key = np.arange(1, 4001)
    write_deltalake(str(lake / "accounts"), pa.table({"account": key, "region": key % 7}))
    samples = {
        "sampled": rng.choice(key, 2500),  # random subset, with repeats
        "prefix": rng.choice(key[:2500], 2500),
        "suffix": rng.choice(key[-2500:], 2500),
    }
    for name, values in samples.items():
        write_deltalake(str(lake / name), pa.table({"ref": values}))
    # A two-column key (x, y) = (a, a + d mod 60), d < 10, and candidates whose columns are each included
    # in x and y: one holding the key's tuples, one holding (a, a + 30 + d mod 60), none of them the key's.
    tuples = [(a, (a + d) % 60) for a in range(60) for d in range(10)]
    write_deltalake(str(lake / "grid"), pa.table({"x": [a for a, _ in tuples], "y": [b for _, b in tuples]}))
    chosen = [tuples[i] for i in rng.choice(len(tuples), 400, replace=False)]
    write_deltalake(
        str(lake / "grid_refs"), pa.table({"gx": [a for a, _ in chosen], "gy": [b for _, b in chosen]})
    )
    crossed = [(a, (b + 30) % 60) for a, b in tuples]
    write_deltalake(
        str(lake / "crossed"), pa.table({"cx": [a for a, _ in crossed], "cy": [b for _, b in crossed]})
    )
    rows = discover_fks(Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog")))
    single = {row["fk_table"]: row for row in rows if row["pk_columns"] == ["account"]}
    assert set(single) >= {"sampled", "prefix", "suffix"}
    assert single["sampled"]["emd"] <= FkConfig().sample_emd < single["prefix"]["emd"]
    assert single["sampled"]["rank"] < single["prefix"]["rank"]
    assert single["sampled"]["rank"] < single["suffix"]["rank"]
    assert single["suffix"]["emd"] > FkConfig().sample_emd
    # no sample, but the lake's only key holding them: accepted (``choice``)
    assert all(single[name]["accepted"] for name in ("sampled", "prefix", "suffix"))
    several = {(row["fk_table"], tuple(row["fk_columns"])): row for row in rows if row["pk_table"] == "grid"}
    assert several[("grid_refs", ("gx", "gy"))]["accepted"]
    assert several[("grid_refs", ("gx", "gy"))]["inclusion_estimate"] >= 0.9
    assert not [table for table, _ in several if table == "crossed"]  # pruned on its tuples
    write_catalog_page(tmp_path / "catalog", tmp_path / "schemas.html")
    assert "(ref) \u2192 (account)" in (tmp_path / "schemas.html").read_text(encoding="utf-8")  # FKs drawn
