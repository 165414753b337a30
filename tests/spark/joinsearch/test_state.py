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
import pyarrow as pa
import pyspark.sql.functions as F
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from lakemeta.config import Config, JoinSearchConfig
from lakemeta.hashing import spark_xxhash64
from lakemeta.joinsearch.index import table_postings
from lakemeta.joinsearch.state import (
    PARTIAL_SCHEMA,
    SCHEMA,
    STATE,
    PostingLists,
    _merge_rows_on_driver,
    _merge_source,
    posting_hasher,
    recorded_hasher,
)
from lakemeta.joinsearch.superkey import super_keys_from_binary
from lakemeta.lake.ingest import TABLE_PROPERTIES
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.spark.portable import arrow_frame

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


def test_spark_xxhash64_of_two_longs_on_the_driver_equals_sparks(spark) -> None:
    rng = np.random.default_rng(3)
    extremes = np.array([0, 1, -1, 2**63 - 1, -(2**63), 42], dtype=np.int64)
    first = np.concatenate([extremes, rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64)])
    second = np.concatenate([extremes[::-1], rng.integers(-5, 1000, 200, dtype=np.int64)])
    pairs = pa.table({"first": first, "second": second, "position": np.arange(len(first))})
    hashed = arrow_frame(spark, pairs).select("position", F.xxhash64("first", "second").alias("id"))
    by_spark = hashed.toArrow().sort_by("position")["id"].to_numpy()
    assert (spark_xxhash64(first, second) == by_spark).all()


def random_partials(rng: np.random.Generator) -> pa.Table:
    """Staged posting-list rows of a few tables: signed items of contents (several columns, repeated and
    cancelling signs) and, for tables not replaced, each changed content's copies counted."""
    rows = []
    for table in ("t", "u", "v"):
        replaces = bool(rng.random() < 0.4)
        for content in rng.integers(0, 6, int(rng.integers(0, 6))):
            row_hash = int(content) * 7919 - 3
            super_key = [int(content), 1] if content % 3 else None
            columns = ["a", "b"][: int(rng.integers(1, 3))]
            for sign in rng.choice([-1, 1], int(rng.integers(1, 4))):
                for column in columns:
                    value = None if column == "b" and content % 2 else f"{column}{content}"
                    rows.append((table, row_hash, int(sign), column, value, super_key, replaces, None))
            if not replaces:
                rows.append((table, row_hash, None, None, None, None, None, int(rng.integers(0, 5))))
    schema = to_arrow_schema(PARTIAL_SCHEMA, timezone="UTC")
    return pa.Table.from_pylist([dict(zip(schema.names, row, strict=True)) for row in rows], schema=schema)


def test_the_merge_rows_on_the_driver_equal_sparks(spark) -> None:
    rng = np.random.default_rng(11)
    kinds: Counter = Counter()
    for _ in range(6):
        partials = random_partials(rng)
        on_driver = _merge_rows_on_driver(partials)
        by_spark = _merge_source(arrow_frame(spark, partials)).toArrow()
        columns = [*SCHEMA.fieldNames(), "_lm_delete"]
        assert Counter(map(repr, on_driver.select(columns).to_pylist())) == Counter(
            map(repr, by_spark.select(columns).to_pylist())
        )
        kinds.update(on_driver["_lm_delete"].to_pylist())
    assert kinds[True] and kinds[False], kinds  # items inserted and row ids removed
