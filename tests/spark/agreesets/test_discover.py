"""The minimal FD and UCC counts of the fd/ datasets (../shared/data/README.md), through the pipeline: CSV
ingest into a lake, a run of the profile and agree-set state (detect, update, commit, which derives the
keys and FDs from them), and the catalog's ``functional_dependencies`` and ``unique_column_combinations``.

The files are header-less and comma-separated. Ingest infers column types; equality of the typed values is
equality of the original strings on these files, and the empty cells become nulls, which equal each
other - the README's semantics.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lakemeta.config import AgreeSetConfig, Config, IngestConfig
from lakemeta.lake.ingest import find_sources, ingest
from lakemeta.orchestration.pipeline import Pipeline
from tests.unit.agreesets.test_dependencies import EXPECTED

from ..lake_changes import process

pytestmark = pytest.mark.spark


def test_fd_and_ucc_counts_through_the_pipeline(spark, shared_data: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ingest(spark, lake, find_sources([shared_data / "fd"]), IngestConfig(separator=",", header=False))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, "column_profile", "agree_sets")
    fds = pipeline.catalog.read_small("functional_dependencies").to_pylist()
    uccs = pipeline.catalog.read_small("unique_column_combinations").to_pylist()
    exact = Counter(row["table_name"] for row in fds if row["error"] == 0.0)
    keys = Counter(row["table_name"] for row in uccs)
    assert {name: (exact[f"fd/{name}"], keys[f"fd/{name}"]) for name in EXPECTED} == EXPECTED
    default_bound = AgreeSetConfig().max_fd_error
    assert all(0.0 <= row["error"] <= default_bound for row in fds)  # approximate ones within the default
