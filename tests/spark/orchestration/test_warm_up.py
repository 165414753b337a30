"""The warm-up: the pipeline twice over a tiny lake of its own, leaving the configured places as they were."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.config import Config
from lakemeta.orchestration.warm_up import warm_up

pytestmark = pytest.mark.spark


def test_warm_up_runs_a_first_and_an_incremental_run_and_leaves_nothing(spark, tmp_path: Path, caplog):
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    write_deltalake(str(lake / "users"), pa.table({"id": [1, 2]}))
    caplog.set_level(logging.INFO, logger="lakemeta")
    assert warm_up(spark, Config(lake=lake, catalog=catalog)) > 0
    runs = [
        r.getMessage()
        for r in caplog.records
        if r.name == "lakemeta.orchestration.pipeline" and "tables changed" in r.getMessage()
    ]
    assert [message.split(",")[0] for message in runs] == [
        "run 1: 3 tables changed",
        "run 2: 1 tables changed",
    ]
    assert [path for path in catalog.rglob("*") if path.is_file()] == []  # the scratch folder is gone
    assert DeltaTable(str(lake / "users")).version() == 0  # the configured lake is not written
