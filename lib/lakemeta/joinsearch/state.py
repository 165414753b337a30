"""MATE posting lists as incremental Delta state (``state/posting_lists``): MATE §5.1 items, §5.4 updates.

One item per non-null cell: the normalised value (``normalise``), the table, the column, the row id and
the row's XASH super key (§5.1; ``super_key`` holds the ``superkey`` words, most significant bit first,
as signed 64-bit integers). Inserted rows add their items, deleted rows remove theirs, an update (a delete
plus an insert) re-hashes the row (§5.4); a ``full`` batch replaces the table's items, a ``drop`` batch
removes them. Per-value work (normalising, XASH, OR-ing super keys) runs in the executors (``mapInArrow``
over ``index.table_postings``); the driver only plans.

Row ids: content-addressed occurrences
    The row id of the j-th copy (j = 0, 1, ...) of a row content r in a table is ``xxhash64(h(r), j)``
    (Spark's xxhash64), where h(r) is the xxhash64 of all the row's cells, each followed by its null flag
    (so that (null, "a") and ("a", null) differ), in column order; array, map and struct cells enter as
    their JSON form. Copies of one content have the same items up to the row id, so which physical copy
    holds which occurrence number does not matter: the posting lists are a function of the multiset of
    rows, and a rebuild from the final snapshot gives exactly the ids the incremental path gave.

    A batch changes the copies of a content r by ``net`` = inserted - deleted. With c' copies of r in
    the snapshot at the batch's ``to_version`` there were c = c' - net before, so a positive ``net`` adds
    occurrences c .. c'-1 and a negative one removes the highest, c' .. c-1: a delete removes exactly the
    items of the copies it deleted. c' is counted in the table's snapshot at ``to_version``, hashed in the
    JVM (no Python) and semi-joined with the batch's contents: a scan of the changed table, cheaper than
    a scan of the posting lists, which hold a row per cell plus its super key.

    Why not the alternatives: Delta's row tracking ids (``_metadata.row_id``) cannot be read together
    with the change feed, do not exist on tables other engines write, and are not what a rebuild sees (a
    table rewritten by OVERWRITE gets fresh ids for the same rows), so incremental state and rebuild would
    differ. Ids from a file and a position change whenever DELETE, UPDATE or OPTIMIZE rewrite a file.

    Ids are 64-bit: two rows of one table of n rows share an id with probability about n²/2^65
    (3·10^-8 for 10^6 rows, 3·10^-4 for 10^8).

    Binary cells and array, map or struct cells are not values a join key holds: they get no items and
    do not enter super keys, but they are part of a row's content (h).

Frozen XASH inputs
    XASH (§5.3) depends on the corpus: character frequencies rank the characters a value encodes
    (§5.3.2) and alpha follows from the number of unique values (Eq. 5). Computed from the data they would
    drift with every batch, and the super keys already stored would stop covering the keys of the same
    values hashed anew, breaking the no-false-negative lemma of §6.3. They are therefore fixed:
    :data:`DEFAULT_CHAR_FREQUENCIES` (character-class shares per million counted over the distinct
    normalised values of the MATE paper's sample tables, Dresden web tables and German open data) and alpha
    from ``joinsearch.unique_values`` (default the 700M unique values of the DWTC, §5.3.1: alpha = 6, 5, 4
    for 128, 256, 512 bits). Configuration may override both, and the hash size; the hasher in force is
    recorded as a table property of the posting lists (:data:`HASHER_PROPERTY`). An update with another
    hasher while items exist is refused (a rebuild truncates the state, after which the new hasher is
    recorded), and searches hash their queries with the recorded hasher.

Exactly once
    All changes of a run go into the posting lists in one MERGE tagged with the component's transaction
    (``lakemeta.posting_lists``, run id; docs/architecture.md, "The state component contract"); a retry of
    a run that committed finds the transaction in the table's log and writes nothing. The MERGE is
    idempotent besides: row ids depend only on the versions the plan names, items are inserted only where
    absent and removed by id, so even a repeated MERGE would leave the same state.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from lakemeta.catalog import Catalog
from lakemeta.component import StateComponent, StateDelta
from lakemeta.config import JoinSearchConfig
from lakemeta.joinsearch.index import table_postings
from lakemeta.joinsearch.superkey import super_keys_from_binary
from lakemeta.joinsearch.xash import N_CHAR_CLASSES, XashHasher, ones_per_value
from lakemeta.lake.batches import SIGN, Batch, Plan, changes, union_all
from lakemeta.lake.snapshots import snapshot
from lakemeta.lake.tables import holds_plain_values, source_column, table_path

log = logging.getLogger(__name__)

STATE = "state/posting_lists"
HASHER_PROPERTY = "lakemeta.posting_lists.hasher"

# Shares per million of the 37 character classes (xash: '0'-'9', 'a'-'z', other) over the distinct
# normalised values of the MATE paper's sample tables; only their order matters (§5.3.2).
DEFAULT_CHAR_FREQUENCIES: tuple[int, ...] = (
    78037, 78099, 61321, 45010, 55998, 59658, 43375, 41581, 40914, 44321,  # 0-9
    22515, 7533, 9808, 13698, 41613, 6499, 13087, 13786, 17879, 1518,  # a-j
    6110, 17271, 9087, 24775, 18626, 9261, 234, 22664, 21461, 20401,  # k-t
    12023, 2515, 4506, 692, 4047, 2318,  # u-z
    127758,  # space and every other character
)  # fmt: skip

# The state table: one item per cell (module docstring), ``super_key`` as signed 64-bit words.
SCHEMA = StructType(
    [
        StructField("value", StringType()),
        StructField("table_name", StringType()),
        StructField("column_name", StringType()),
        StructField("row_id", LongType()),
        StructField("super_key", ArrayType(LongType())),
    ]
)

_ITEM_SCHEMA = StructType(
    [
        StructField("value", StringType()),
        StructField("column_name", StringType()),
        StructField("row_hash", LongType()),
        StructField("sign", LongType()),
        StructField("super_key", ArrayType(LongType())),
    ]
)
_DELETE = "_lm_delete"


def posting_hasher(config: JoinSearchConfig) -> XashHasher:
    """The frozen XASH hasher of the posting lists (module docstring); alpha from ``unique_values``, Eq. 5."""
    frequencies = config.char_frequencies or DEFAULT_CHAR_FREQUENCIES
    if len(frequencies) != N_CHAR_CLASSES:
        raise ValueError(f"joinsearch.char_frequencies needs {N_CHAR_CLASSES} shares, got {len(frequencies)}")
    alpha = ones_per_value(config.unique_values, config.hash_bits)
    return XashHasher(config.hash_bits, alpha, tuple(int(f) for f in frequencies))


def recorded_hasher(catalog: Catalog) -> XashHasher | None:
    """The hasher the stored super keys were made with (``None`` before the first update)."""
    recorded = deltalake.DeltaTable(catalog.path(STATE)).metadata().configuration.get(HASHER_PROPERTY)
    return None if recorded is None else XashHasher.from_dict(json.loads(recorded))


@dataclass(frozen=True)
class PostingDelta(StateDelta):
    """The posting lists' delta: ``rows`` are the items to insert and the row ids to remove, told apart by
    ``_lm_delete`` (:func:`_merge_source`), their super keys made with ``hasher``; ``indexed_batches``
    counts the batches with a column that can hold items."""

    hasher: XashHasher
    indexed_batches: int


class PostingLists(StateComponent):
    """MATE's posting lists (§5.1) maintained under insertions and deletions (§5.4): the module docstring."""

    name = "posting_lists"
    schema = SCHEMA
    config_section = "joinsearch"

    def delta(self, plan: Plan) -> PostingDelta:
        """The items of the plan's changed rows, signed, and the row ids they remove (module docstring,
        "Row ids"); normalising and XASH run in the executors when the MERGE executes."""
        hasher = posting_hasher(self.config.joinsearch)
        spark = self.catalog.spark
        signed_items: list[DataFrame] = []
        final_copies: list[DataFrame] = []
        for batch in plan.batches:
            if batch.kind == "drop":
                continue
            rows = changes(spark, self.lake, batch)
            fields = [field for field in rows.schema.fields if field.name != SIGN]
            indexed = [field.name for field in fields if _indexed(field.dataType)]
            if not indexed:  # no cell of this table can ever be an item
                continue
            signed_items.append(_signed_items(rows, batch, fields, indexed, hasher))
            if batch.kind == "incremental":
                after = snapshot(spark, table_path(self.lake, batch.table_name), batch.to_version)
                final_copies.append(
                    after.select(
                        F.lit(batch.table_name).alias("table_name"), _content_hash(fields).alias("row_hash")
                    )
                )
        source = _merge_source(self.catalog, signed_items, final_copies)
        return PostingDelta(source, plan.replaced_tables, hasher, len(signed_items))

    def merge(self, plan: Plan, delta: PostingDelta) -> bool:  # type: ignore[override]
        """Record the delta's hasher (refused while items of another one exist), then insert the new items
        and remove items by row id in one MERGE tagged with the run; a plan with no indexed batch and no
        replaced table writes nothing."""
        _record_hasher(self.catalog, delta.hasher)
        replaced = list(delta.replaced_tables)
        if not delta.indexed_batches and not replaced:
            return True
        merge = (
            self.catalog.delta_table(STATE)
            .alias("t")
            .merge(
                delta.rows.alias("s"),
                "t.table_name = s.table_name AND t.row_id = s.row_id "
                f"AND (s.{_DELETE} OR t.column_name = s.column_name)",
            )
            .whenMatchedDelete(condition=f"s.{_DELETE}")
            .whenNotMatchedInsert(
                condition=f"NOT s.{_DELETE}", values={c: f"s.`{c}`" for c in SCHEMA.fieldNames()}
            )
        )
        if replaced:
            merge = merge.whenNotMatchedBySourceDelete(condition=F.col("t.table_name").isin(replaced))
        with self.catalog.transaction(self.txn(plan)), self.catalog.committing("merge", STATE):
            metrics = merge.execute().first()
        log.info(
            "run %d: posting lists: %d items inserted, %d removed",
            plan.run_id,
            metrics["num_inserted_rows"],
            metrics["num_deleted_rows"],
        )
        return True


def _record_hasher(catalog: Catalog, hasher: XashHasher) -> None:
    """Record ``hasher`` as the posting lists' hasher; refuse another one while items exist."""
    table = deltalake.DeltaTable(catalog.path(STATE))
    wanted = json.dumps(hasher.to_dict(), sort_keys=True)
    recorded = table.metadata().configuration.get(HASHER_PROPERTY)
    if recorded == wanted:
        return
    if recorded is not None and _holds_items(table):
        raise ValueError(
            f"{STATE} holds super keys made with XASH {recorded}, the configuration asks for {wanted}: "
            "old super keys would not cover new query keys; run `lakemeta rebuild` to change the hasher"
        )
    with catalog.committing("set properties of", STATE):
        table.alter.set_table_properties({HASHER_PROPERTY: wanted}, raise_if_not_exists=False)


def _holds_items(table: deltalake.DeltaTable) -> bool:
    records = pa.table(table.get_add_actions(flatten=True)).column("num_records")
    return len(records) > 0 and (records.null_count > 0 or pc.sum(records).as_py() > 0)


def _indexed(kind: DataType) -> bool:
    """Plain values other than binary are values a join key can hold (module docstring)."""
    return holds_plain_values(kind) and not isinstance(kind, BinaryType)


def _content_hash(fields: Sequence[StructField]) -> Column:
    """h(r) of the module docstring: xxhash64 over every cell and its null flag, nested cells as JSON."""
    parts: list[Column] = []
    for field in fields:
        cell = source_column(field.name)
        hashed = cell if holds_plain_values(field.dataType) else F.to_json(F.struct(cell))
        parts += [hashed, cell.isNull()]
    return F.xxhash64(*parts)


def _signed_items(
    rows: DataFrame, batch: Batch, fields: list[StructField], indexed: list[str], hasher: XashHasher
) -> DataFrame:
    """The items of every changed row, with the row's content hash and its sign (+1 inserted, -1 deleted):
    normalising and XASH run in the executors, once per row copy."""
    cells = [source_column(name).alias(f"c{i}") for i, name in enumerate(indexed)]
    prepared = rows.select(
        _content_hash(fields).alias("row_hash"), F.col(SIGN).cast("long").alias("sign"), *cells
    )
    return prepared.mapInArrow(_item_maker(indexed, hasher), _ITEM_SCHEMA).select(
        F.lit(batch.table_name).alias("table_name"),
        F.lit(batch.kind == "full").alias("replaces"),
        "*",
    )


def _item_maker(
    column_names: list[str], hasher: XashHasher
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: the items of each row (``index.table_postings``), with its hash and sign.

    Input columns: row_hash, sign, then the indexed cells c0, c1, ... (Arrow types as Spark hands them
    over; ``normalise`` turns them into strings).
    """
    names = pa.array(column_names, pa.string())
    n_words = hasher.n_words
    schema = pa.schema(
        [
            ("value", pa.string()),
            ("column_name", pa.string()),
            ("row_hash", pa.int64()),
            ("sign", pa.int64()),
            ("super_key", pa.list_(pa.int64())),
        ]
    )

    def make_items(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            cells = [batch.column(2 + i) for i in range(len(column_names))]
            postings = table_postings(cells, np.arange(batch.num_rows), hasher)
            rows = postings.column("row_id")
            words = super_keys_from_binary(postings.column("super_key")).view(np.int64).ravel()
            offsets = np.arange(0, len(words) + 1, n_words, dtype=np.int32)
            yield pa.RecordBatch.from_arrays(
                [
                    postings.column("value").cast(pa.string()),
                    names.take(postings.column("column_id")),
                    batch.column(0).take(rows),
                    batch.column(1).take(rows),
                    pa.ListArray.from_arrays(pa.array(offsets), pa.array(words)),
                ],
                schema=schema,
            )

    return make_items


def _merge_source(
    catalog: Catalog, signed_items: list[DataFrame], final_copies: list[DataFrame]
) -> DataFrame:
    """Items to insert and row ids to remove (module docstring, "Row ids"), told apart by ``_lm_delete``.

    Copies of a row content have equal items, so the signed items grouped by (table, content, column,
    value) give each item's ``net`` change, the same for all items of a content. A content's copies
    after the batch (c') are ``net`` itself for a replaced table and counted in the snapshot otherwise.
    """
    if not signed_items:
        empty = StructType([*SCHEMA.fields, StructField(_DELETE, BooleanType())])
        return catalog.spark.createDataFrame([], empty)
    rows = ["table_name", "row_hash"]
    per_item = (
        union_all(signed_items)
        .groupBy(*rows, "column_name", "value")
        .agg(
            F.sum("sign").alias("net"),
            F.first("super_key").alias("super_key"),
            F.first("replaces").alias("replaces"),
        )
        .where(F.col("net") != 0)
    )
    if final_copies:
        counted = (
            union_all(final_copies)
            .join(per_item.where(~F.col("replaces")).select(*rows), rows, "left_semi")
            .groupBy(*rows)
            .agg(F.count(F.lit(1)).alias("counted"))
        )
        per_item = per_item.join(counted, rows, "left")
    else:
        per_item = per_item.withColumn("counted", F.lit(None).cast("long"))
    final = F.when(F.col("replaces"), F.col("net")).otherwise(F.coalesce(F.col("counted"), F.lit(0)))
    per_item = per_item.withColumn("final", final.cast("long")).withColumn(
        "before", F.col("final") - F.col("net")
    )
    inserted = _occurrences(per_item.where(F.col("net") > 0), "before", "final").select(
        "value", "table_name", "column_name", "row_id", "super_key", F.lit(False).alias(_DELETE)
    )
    removed_rows = per_item.where(F.col("net") < 0).select(*rows, "final", "before").distinct()
    removed = _occurrences(removed_rows, "final", "before").select(
        F.lit(None).cast("string").alias("value"),
        "table_name",
        F.lit(None).cast("string").alias("column_name"),
        "row_id",
        F.lit(None).cast(ArrayType(LongType())).alias("super_key"),
        F.lit(True).alias(_DELETE),
    )
    return inserted.unionByName(removed)


def _occurrences(frame: DataFrame, first: str, end: str) -> DataFrame:
    """One row per occurrence number j in [first, end) of each content, with its row id xxhash64(h, j)."""
    numbers = F.when(F.col(end) > F.col(first), F.sequence(F.col(first), F.col(end) - 1))
    occurrence = frame.withColumn("occurrence", F.explode(numbers))
    return occurrence.withColumn("row_id", F.xxhash64(F.col("row_hash"), F.col("occurrence").cast("long")))
