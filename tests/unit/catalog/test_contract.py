"""A catalog whose tables were found to meet the contract records it (``_contract.json``); a handle with the
same contract then opens no table to check it, and one whose contract changed checks and fixes the tables
again. On delta-rs, no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.storage import Location

STATE = StructType([StructField("table_name", StringType()), StructField("count", LongType())])


@pytest.fixture
def opened_tables(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The catalog tables whose Delta logs are opened, in order."""
    opened: list[str] = []
    open_table = Location.delta_table

    def counted(self: Location, version: int | None = None):
        opened.append(self.name)
        return open_table(self, version)

    monkeypatch.setattr(Location, "delta_table", counted)
    return opened


def test_a_catalog_checked_once_is_not_checked_table_by_table_again(
    tmp_path: Path, opened_tables: list
) -> None:
    root = Location.parse(tmp_path)
    ensure_tables(Catalog(None, root, {"state/counts": STATE}))
    recorded = json.loads((tmp_path / "_contract.json").read_text())
    assert recorded["tables"]["state/counts"] == STATE.jsonValue()
    ensure_tables(Catalog(None, root, {"state/counts": STATE}))
    ensure_tables(Catalog(None, root, {"state/counts": STATE}))
    assert opened_tables == []  # the tables were created, never opened, and then only the record was read


def test_a_changed_contract_is_checked_again_and_recorded(tmp_path: Path, opened_tables: list) -> None:
    root = Location.parse(tmp_path)
    ensure_tables(Catalog(None, root, {"state/counts": STATE}))
    grown = StructType([*STATE.fields, StructField("note", StringType())])
    catalog = Catalog(None, root, {"state/counts": grown})
    ensure_tables(catalog)
    assert "counts" in opened_tables  # every table was opened: the new column is in the table
    assert [field.name for field in catalog.delta_table("state/counts").schema().fields] == [
        "table_name",
        "count",
        "note",
    ]
    recorded = json.loads((tmp_path / "_contract.json").read_text())
    assert recorded["tables"]["state/counts"] == grown.jsonValue()
    opened_tables.clear()
    ensure_tables(Catalog(None, root, {"state/counts": grown}))
    assert opened_tables == []


def test_a_record_of_another_contract_does_not_hide_a_missing_table(tmp_path: Path) -> None:
    root = Location.parse(tmp_path)
    ensure_tables(Catalog(None, root))  # recorded without the state table
    ensure_tables(Catalog(None, root, {"state/counts": STATE}))
    assert (root / "state" / "counts").is_delta_table()
