"""The counted-state MERGE, through Spark and on the driver: replace, add, drop zeros, refuse negatives,
apply once per transaction, append into empty state; the layout bucketed by table (MERGEs and reads open
only their tables' buckets, older layouts refused until maintenance rewrites them); the contract's tables
gain the columns added to their schemas."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

from lakemeta.catalog import Catalog, NegativeCountError, Txn
from lakemeta.catalog.contract import OutdatedLayoutError, ensure_tables
from lakemeta.catalog.counts import merge_counts
from lakemeta.catalog.layout import BUCKET_COLUMN, bucket_column, bucket_of
from lakemeta.catalog.reflects import recorded_reflects
from lakemeta.catalog.store import LEASES_METADATA, arrow_schema
from lakemeta.registry import open_catalog
from lakemeta.storage import Location

pytestmark = pytest.mark.spark

STATE = "state/agree_sets"
SCHEMA = "table_name string, agree_set array<string>, count long"


def stored(catalog: Catalog) -> list[tuple]:
    return sorted((r.table_name, tuple(r.agree_set), r["count"]) for r in catalog.read(STATE).collect())


def merge(
    catalog: Catalog, rows: list[tuple], run: int, replaced: list[str] = (), on_driver: bool = False
) -> None:
    """Through Spark's MERGE, or on the driver (the delta as an Arrow table: a small batch's)."""
    delta = catalog.spark.createDataFrame(rows, SCHEMA)
    tables = sorted({row[0] for row in rows} | set(replaced))
    keys, txn = ["table_name", "agree_set"], Txn("test", run)
    delta = delta.toArrow() if on_driver else delta
    merge_counts(catalog, STATE, delta, keys, ["count"], tables, list(replaced), txn)


@pytest.mark.parametrize("on_driver", [False, True], ids=["spark", "driver"])
def test_counts_add_drop_at_zero_replace_and_apply_once(spark, tmp_path: Path, on_driver: bool):
    catalog = open_catalog(spark, tmp_path)
    ensure_tables(catalog)
    merge(catalog, [("t", ["a"], 2), ("t", ["a", "b"], 1), ("u", ["x"], 4)], 1, on_driver=on_driver)
    merge(catalog, [("t", ["a"], -2), ("t", ["a", "b"], 3), ("t", ["b"], 1)], 2, on_driver=on_driver)
    merge(catalog, [("t", ["a"], 99)], 2, on_driver=on_driver)  # a retry of run 2 carries no new change
    assert stored(catalog) == [("t", ("a", "b"), 4), ("t", ("b",), 1), ("u", ("x",), 4)]
    merge(catalog, [("u", ["y"], 1)], 3, replaced=["u", "gone"], on_driver=on_driver)
    assert stored(catalog) == [("t", ("a", "b"), 4), ("t", ("b",), 1), ("u", ("y",), 1)]
    merge(catalog, [("u", ["y"], -1)], 4, on_driver=on_driver)  # u's last row goes: no rows of u are left
    assert stored(catalog) == [("t", ("a", "b"), 4), ("t", ("b",), 1)]
    merge(catalog, [], 5, on_driver=on_driver)  # a plan whose every table failed to read: no tables
    assert stored(catalog) == [("t", ("a", "b"), 4), ("t", ("b",), 1)]


@pytest.mark.parametrize("on_driver", [False, True], ids=["spark", "driver"])
@pytest.mark.parametrize("rows", [[("t", ["a"], -2)], [("t", ["new"], -1)]], ids=["below-zero", "absent"])
def test_negative_counts_fail_without_writing(spark, tmp_path: Path, rows, on_driver: bool):
    catalog = open_catalog(spark, tmp_path)
    ensure_tables(catalog)
    merge(catalog, [("t", ["a"], 1)], run=1)
    with pytest.raises(
        NegativeCountError, match=r"negative count in state/agree_sets at \[{'table_name': 't'"
    ):
        merge(catalog, rows, run=2, on_driver=on_driver)
    assert stored(catalog) == [("t", ("a",), 1)]
    assert not catalog.already_applied(STATE, Txn("test", 2))


def test_an_empty_state_is_appended_to_once_and_refuses_negative_counts(spark, tmp_path: Path):
    catalog = open_catalog(spark, tmp_path)
    ensure_tables(catalog)
    with pytest.raises(
        NegativeCountError, match=r"negative count in state/agree_sets at \[{'table_name': 'u'"
    ):
        merge(catalog, [("t", ["a"], 2), ("u", ["x"], -1)], run=1)
    assert stored(catalog) == []
    assert not catalog.already_applied(STATE, Txn("test", 1))
    merge(catalog, [("t", ["a"], 2), ("u", ["x"], 1)], run=1)
    assert catalog.delta_table(STATE).history(1)[0]["operation"] == "WRITE"  # an append, not a MERGE
    merge(catalog, [("t", ["a"], 5)], run=1)  # a retry: skipped
    assert stored(catalog) == [("t", ("a",), 2), ("u", ("x",), 1)]
    merge(catalog, [("t", ["a"], -2)], run=2)
    assert catalog.delta_table(STATE).history(1)[0]["operation"] == "MERGE"
    assert stored(catalog) == [("u", ("x",), 1)]


@pytest.mark.parametrize("on_driver", [False, True], ids=["spark", "driver"])
def test_a_merge_into_state_bucketed_by_table_reads_only_the_changed_tables_buckets(
    spark, tmp_path: Path, on_driver: bool
):
    from lakemeta.registry import state_schemas

    catalog = Catalog(spark, tmp_path, {STATE: state_schemas()[STATE]}, bucketed_by_table=[STATE])
    ensure_tables(catalog)
    assert deltalake.DeltaTable(catalog.path(STATE)).metadata().partition_columns == [BUCKET_COLUMN]
    assert (bucket_of("t"), bucket_of("u")) == (168, 62)  # different buckets
    merge(catalog, [("t", ["a"], 1), ("t", ["b"], 1), ("u", ["x"], 4)], run=1)
    assert sorted({(r.table_name, r[BUCKET_COLUMN]) for r in catalog.read(STATE).collect()}) == [
        ("t", 168),
        ("u", 62),
    ]
    # u's file gone: a MERGE or a read that opened it (to look for rows of t) would fail.
    (u_file,) = (tmp_path / STATE / f"{BUCKET_COLUMN}=62").glob("*.parquet")
    u_file.unlink()
    merge(catalog, [("t", ["a"], 1), ("t", ["c"], 1)], run=2, on_driver=on_driver)
    assert catalog.stored_bytes(STATE, ["t"]) < catalog.stored_bytes(STATE, ["t", "u"])  # u's file in the log
    t_rows = catalog.read(STATE, ["t"]).collect()
    assert sorted((tuple(r.agree_set), r["count"]) for r in t_rows) == [(("a",), 2), (("b",), 1), (("c",), 1)]
    on_driver = catalog.read_small(STATE, ["t"]).to_pylist()  # with delta-rs, t's bucket alone
    assert sorted((tuple(r["agree_set"]), r["count"]) for r in on_driver) == [
        (("a",), 2),
        (("b",), 1),
        (("c",), 1),
    ]
    if not on_driver:
        metrics = catalog.last_commit_metrics(STATE)
        assert (metrics["numTargetRowsCopied"], metrics["numTargetFilesRemoved"]) == ("1", "1")


def test_spark_and_python_put_a_table_in_the_same_bucket(spark):
    names = ["t", "", "shop/orders", "web/tbl_00017", "naïve ünïcode/日本", "it's \\ quoted", "x" * 300]
    computed = spark.createDataFrame([(n,) for n in names], "table_name string").select(
        "table_name", bucket_column().alias("bucket")
    )
    assert sorted(tuple(r) for r in computed.collect()) == sorted((n, bucket_of(n)) for n in names)
    assert len({bucket_of(n) for n in names}) > 1


def test_a_catalog_of_an_older_layout_is_refused_until_maintenance_rewrites_it(spark, tmp_path: Path):
    from lakemeta.orchestration.maintenance import maintain_tables
    from lakemeta.values.state import ColumnValues

    catalog = open_catalog(spark, tmp_path)
    ensure_tables(catalog)
    values = ColumnValues.state_table()
    rows = pa.table(
        {
            "table_name": ["a", "b"],
            "column_name": ["x", "y"],
            "hash": [1, 2],
            "count": [3, 4],
            "integer": [True, False],
        }
    )
    # as the catalogs of an older lakemeta hold it: partitioned by table_name, no bucket, and no record of
    # a contract checked (``catalog.contract.ensure_tables``)
    (tmp_path / "_contract.json").unlink()
    (tmp_path / values).rename(tmp_path / "gone")
    deltalake.write_deltalake(str(tmp_path / values), rows, partition_by=["table_name"])
    with pytest.raises(
        OutdatedLayoutError,
        match=r"state/column_values .* has no table_bucket.*lakemeta maintain",
    ):
        ensure_tables(open_catalog(spark, tmp_path))
    maintain_tables(Location.parse(tmp_path), timedelta(days=7))
    ensure_tables(catalog)
    stored_values = catalog.read(values, ["b"]).collect()
    assert [(r.table_name, r.column_name, r.hash, r["count"], r[BUCKET_COLUMN]) for r in stored_values] == [
        ("b", "y", 2, 4, bucket_of("b"))
    ]


def test_a_catalog_made_before_a_column_was_added_gains_it(spark, tmp_path: Path):
    current = arrow_schema("fk_candidates")
    older = current.remove(len(current) - 1)  # columns are added at the end, as Delta's schema evolution does
    deltalake.DeltaTable.create(str(tmp_path / "fk_candidates"), schema=older)
    catalog = open_catalog(spark, tmp_path)
    ensure_tables(catalog)
    catalog.replace_small("fk_candidates", arrow_schema("fk_candidates").empty_table())
    assert catalog.read_small("fk_candidates").schema.names == current.names


def test_spark_commits_carry_the_epochs_of_their_leases(spark, tmp_path: Path):
    """Every commit Spark makes to the catalog (an append into empty state, a MERGE, a replace with what it
    reflects) carries the epochs of the leases it was made under, as delta-rs commits do."""
    catalog = open_catalog(spark, tmp_path)
    ensure_tables(catalog)
    merge(catalog, [("t", ["a"], 2)], 1)  # into empty state: an append
    merge(catalog, [("t", ["a"], 1)], 2)
    rows = spark.createDataFrame([("t", ["id"])], "table_name string, columns array<string>")
    with catalog.using_state("a step"):
        catalog.replace("unique_column_combinations", rows, reflects={"run": 2})
    for name, leases in [
        (STATE, {"tables/" + STATE}),
        ("unique_column_combinations", {"state", "tables/unique_column_combinations"}),
    ]:
        commits = catalog.delta_table(name).history()
        written = [c for c in commits if c["operation"] in {"WRITE", "MERGE"}]
        assert written and all(
            set(json.loads(json.loads(c["userMetadata"])[LEASES_METADATA])) == leases for c in written
        )
    assert recorded_reflects(catalog.delta_table("unique_column_combinations")) == {"run": 2}
