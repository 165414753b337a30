"""How relationships evolve (lakemeta.catalog.relationships): INDs and accepted FKs carry the run since
which they hold, and every discovery that saw one appear or disappear records it once, with the batches
that caused it, even when it was killed between recording and replacing its result."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.config import Config, FkConfig
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.storage import Location

from .test_crash_recovery import run_killed_at

pytestmark = [pytest.mark.spark, pytest.mark.slow]

IND = ("shop/items", ("order_id",), "shop/orders", ("id",))
REVERSE = ("shop/orders", ("id",), "shop/items", ("order_id",))


def read(catalog: Path, name: str) -> list[dict]:
    return Location.parse(catalog / name).delta_table().to_pyarrow_table().to_pylist()


def first_runs(catalog: Path) -> tuple[dict, dict]:
    """The INDs and the accepted FKs, each with its ``first_run``."""
    inds = {
        (r["dep_table"], (r["dep_column"],), r["ref_table"], (r["ref_column"],)): r["first_run"]
        for r in read(catalog, "inclusion_dependencies")
    }
    fks = {
        (r["fk_table"], tuple(r["fk_columns"]), r["pk_table"], tuple(r["pk_columns"])): r["first_run"]
        for r in read(catalog, "fk_candidates")
        if r["accepted"]
    }
    assert all(r["first_run"] is None for r in read(catalog, "fk_candidates") if not r["accepted"])
    return inds, fks


def changes(catalog: Path, run: int) -> list[tuple]:
    fields = ("relationship", "change", "dep_table", "dep_columns", "ref_table", "ref_columns", "batches")
    return sorted(
        (*(tuple(r[f]) if isinstance(r[f], list) else r[f] for f in fields), r["settings_changed"])
        for r in read(catalog, "relationship_changes")
        if r["run_id"] == run
    )


def test_relationships_carry_their_first_run_and_each_change_is_recorded_once_with_its_cause(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    write_deltalake(str(lake / "shop" / "orders"), pa.table({"id": [1, 2, 3], "note": ["a", None, "c"]}))
    write_deltalake(str(lake / "shop" / "items"), pa.table({"order_id": [1, 1, 2, 3]}))
    config = Config(lake=lake, catalog=catalog)
    Pipeline(spark, config).run()
    assert first_runs(catalog) == ({IND: 1, REVERSE: 1}, {IND: 1})
    created = ("shop/items: run 1: full 0", "shop/orders: run 1: full 0")
    assert changes(catalog, 1) == [
        ("foreign_key", "appeared", *IND, created, False),
        ("inclusion_dependency", "appeared", *IND, created, False),
        ("inclusion_dependency", "appeared", *REVERSE, created[::-1], False),
    ]
    assert {r["previous_discovery_at"] for r in read(catalog, "relationship_changes")} == {None}

    # An item of an order that does not exist: the IND and the FK break; the reverse IND holds on.
    write_deltalake(str(lake / "shop" / "items"), pa.table({"order_id": [99]}), mode="append")
    Pipeline(spark, config).run()
    assert first_runs(catalog) == ({REVERSE: 1}, {})
    broken = ("shop/items: run 2: incremental 0→1",)
    assert changes(catalog, 2) == [
        ("foreign_key", "disappeared", *IND, broken, False),
        ("inclusion_dependency", "disappeared", *IND, broken, False),
    ]

    # Mended; the discovery is killed after recording the IND's return, before replacing its result.
    DeltaTable(str(lake / "shop" / "items")).delete("order_id = 99")

    run_killed_at(Pipeline(spark, config), "after append relationship_changes", monkeypatch)
    assert first_runs(catalog)[0] == {REVERSE: 1}  # the result not yet replaced
    Pipeline(spark, config).run()  # plans nothing; the stale discovery steps run again
    assert first_runs(catalog) == ({IND: 3, REVERSE: 1}, {IND: 3})
    mended = ("shop/items: run 3: incremental 1→2",)
    assert changes(catalog, 3) == [
        ("foreign_key", "appeared", *IND, mended, False),
        ("inclusion_dependency", "appeared", *IND, mended, False),
    ]

    # Other settings: every step runs again with them; no relationship changed, so none is recorded.
    stricter = Config(lake=lake, catalog=catalog, fks=FkConfig(inclusion_threshold=0.95))
    Pipeline(spark, stricter).run()
    newest = max(read(catalog, "discovery_runs"), key=lambda r: r["finished_at"])
    assert (newest["step"], newest["settings"]) == ("fk_candidates", stricter.discovery_settings())
    assert len(read(catalog, "relationship_changes")) == 7
