"""MATE posting lists as Delta state: after random insert / delete / update batches (duplicates, nulls,
empty tables, a table written by delta-rs, typed and nested columns) they equal the posting lists built
from the final snapshot, row ids included, and hold exactly the library's items of that snapshot; a
retried update applies once; another hasher is refused while items exist."""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import date
from decimal import Decimal
from pathlib import Path

import deltalake
import numpy as np
import pytest

from lakemeta.config import Config, JoinSearchConfig
from lakemeta.joinsearch.index import table_postings
from lakemeta.joinsearch.state import SCHEMA, STATE, PostingLists, posting_hasher, recorded_hasher
from lakemeta.joinsearch.superkey import super_keys_from_binary
from lakemeta.lake.ingest import TABLE_PROPERTIES
from lakemeta.pipeline import Pipeline

from ..lake_changes import create_foreign_table, create_spark_table, drop_table, random_change, random_rows

pytestmark = pytest.mark.spark

TYPED_SCHEMA = "k long, amount decimal(6,2), day date, blob binary, tags array<string>"


def typed_rows() -> list[tuple]:
    """Decimals and dates are indexed, binary and array cells are not (but tell rows apart)."""
    return [
        (1, Decimal("3.50"), date(2024, 1, 2), b"\x00\xff", ["x"]),
        (1, Decimal("3.50"), date(2024, 1, 2), b"\x00\xff", ["x"]),
        (1, Decimal("3.50"), date(2024, 1, 2), b"\x00\xff", ["y"]),
        (2, None, None, None, None),
        (None, None, None, b"\x01", None),
    ]


def posting_rows(pipeline: Pipeline) -> list[tuple]:
    columns = SCHEMA.fieldNames()
    return sorted(tuple(r) for r in pipeline.catalog.read(STATE).select(*columns).collect())


def rows_of_items(items: list[tuple]) -> dict[str, Counter]:
    """Per table, the multiset of rows as (sorted (column, value) cells, super key), row ids dropped."""
    cells: dict[tuple[str, int], list] = {}
    keys: dict[tuple[str, int], tuple] = {}
    for value, table, column, row_id, super_key in items:
        cells.setdefault((table, row_id), []).append((column, value))
        assert keys.setdefault((table, row_id), tuple(super_key)) == tuple(super_key)  # one key per row
    out: dict[str, Counter] = {}
    for (table, row_id), row in cells.items():
        out.setdefault(table, Counter())[(tuple(sorted(row)), keys[(table, row_id)])] += 1
    return out


def library_rows(lake: Path, tables: list[str]) -> dict[str, Counter]:
    """The same from the final snapshots, read by delta-rs and itemised by the library (index.py)."""
    hasher = posting_hasher(JoinSearchConfig())
    items = []
    for name in tables:
        snapshot = deltalake.DeltaTable(str(lake / name)).to_pyarrow_table()
        indexed = [n for n in snapshot.column_names if n not in ("blob", "tags")]
        batch = table_postings([snapshot[n] for n in indexed], np.arange(snapshot.num_rows), hasher)
        keys = super_keys_from_binary(batch.column("super_key")).view(np.int64)
        for value, column_id, row_id, key in zip(
            batch.column("value").to_pylist(),
            batch.column("column_id").to_pylist(),
            batch.column("row_id").to_pylist(),
            keys.tolist(),
            strict=True,
        ):
            items.append((value, name, indexed[column_id], row_id, key))
    return rows_of_items(items)


def process(pipeline: Pipeline) -> None:
    """One run of the posting lists: detect, update (and a retry that must apply nothing), commit."""
    plan = pipeline.detect_batches()
    posting_lists = PostingLists(pipeline.catalog, pipeline.lake, pipeline.config)
    posting_lists.update(plan)
    version = deltalake.DeltaTable(pipeline.catalog.path(STATE)).version()
    posting_lists.update(plan)
    assert deltalake.DeltaTable(pipeline.catalog.path(STATE)).version() == version
    pipeline.commit_batches(plan)


def test_random_batches_equal_the_posting_lists_of_the_final_snapshot(spark, tmp_path: Path):
    rng = np.random.default_rng(7)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "a", random_rows(rng, 8))
    create_spark_table(spark, lake / "web" / "b", random_rows(rng, 5))
    create_spark_table(spark, lake / "empty", [])
    create_foreign_table(lake / "foreign", random_rows(rng, 6))
    typed = spark.createDataFrame(typed_rows(), TYPED_SCHEMA).write.format("delta")
    for key, value in TABLE_PROPERTIES.items():
        typed = typed.option(key, value)
    typed.save(str(lake / "typed"))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline)
    typed = f"delta.`{lake / 'typed'}`"
    copy = "(1, 3.50, DATE'2024-01-02', X'00FF', array('x'))"  # the row typed_rows() holds twice
    # an update that changes only an array cell re-hashes the row; a third copy takes occurrence 2
    spark.sql(f"UPDATE {typed} SET tags = array('z') WHERE tags[0] = 'y'")
    spark.sql(f"INSERT INTO {typed} VALUES {copy}")
    applied = []
    for step in range(3):
        for name in ("a", "web/b", "foreign"):
            if rng.random() < 0.7:
                applied.append(random_change(spark, rng, lake / name, foreign=name == "foreign"))
        if step == 1:  # three copies become one: the batch removes occurrences 1 and 2
            spark.sql(f"DELETE FROM {typed} WHERE k = 2 OR tags[0] = 'x'")
            spark.sql(f"INSERT INTO {typed} VALUES {copy}")
        process(pipeline)
    drop_table(lake / "web" / "b")
    create_spark_table(spark, lake / "late", random_rows(rng, 3))
    process(pipeline)

    sources = set(pipeline.catalog.read_small("state/batches")["source"].to_pylist())
    assert sources >= {"cdf", "diff", "snapshot", "dropped"}
    reference = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "rebuilt"))
    process(reference)
    ours = posting_rows(pipeline)
    assert ours == posting_rows(reference), applied
    tables = ["a", "empty", "foreign", "late", "typed"]
    assert rows_of_items(ours) == {t: c for t, c in library_rows(lake, tables).items() if c}, applied
    assert recorded_hasher(pipeline.catalog) == posting_hasher(JoinSearchConfig())

    spark.sql(f"INSERT INTO delta.`{lake / 'a'}` VALUES (99, 'new', 1.0)")
    wider = dataclasses.replace(pipeline.config, joinsearch=JoinSearchConfig(hash_bits=256))
    with pytest.raises(ValueError, match="rebuild"):
        PostingLists(pipeline.catalog, lake, wider).update(pipeline.detect_batches())
    # another scheme at the same size: refused, naming both schemes and the rebuild
    eq5 = dataclasses.replace(pipeline.config, joinsearch=JoinSearchConfig(xash_scheme="eq5"))
    with pytest.raises(
        ValueError, match=r"scheme 'authors' version 1.*scheme 'eq5' version 1.*lakemeta rebuild"
    ):
        PostingLists(pipeline.catalog, lake, eq5).update(pipeline.detect_batches())
