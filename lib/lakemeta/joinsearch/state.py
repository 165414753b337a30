"""MATE posting lists as incremental Delta state (``state/posting_lists``): MATE §5.1 items, §5.4 updates.

One item per non-null cell: the normalised value (``normalise``), the table, the column, the row id and
the row's XASH super key (§5.1; ``super_key`` holds the ``superkey`` words, most significant bit first,
as signed 64-bit integers). Inserted rows add their items, deleted rows remove theirs, an update (a delete
plus an insert) re-hashes the row (§5.4); a ``full`` batch replaces the table's items, a ``drop`` batch
removes them. Per-value work (normalising, XASH, OR-ing super keys: ``index.table_postings``) runs in the
tasks of the run's one scan (``lakemeta.scan``); the driver only plans.

Row ids: content-addressed occurrences
    The row id of the j-th copy (j = 0, 1, ...) of a row content r in a table is ``xxhash64(h(r), j)``
    (Spark's xxhash64; ``hashing.spark_xxhash64`` on the driver, for a small batch), where h(r) is
    ``lakemeta.lake.rows.content_hashes``: XXH64 over the hashes of the row's cells' canonical forms and their
    null flags (so that (null, "a") and ("a", null) differ), in column order; array, map and struct cells
    enter by their canonical strings. It does not depend on which reader read the row, and the scheme is
    recorded beside the hasher (:data:`ROW_IDS_PROPERTY`). Copies of one content have the same items up to the
    row id, so which physical copy holds which occurrence number does not matter: the posting lists are a
    function of the multiset of rows, and a rebuild from the final snapshot gives exactly the ids the
    incremental path gave.

    A batch changes the copies of a content r by ``net`` = inserted - deleted. With c' copies of r in
    the snapshot at the batch's ``to_version`` there were c = c' - net before, so a positive ``net`` adds
    occurrences c .. c'-1 and a negative one removes the highest, c' .. c-1: a delete removes exactly the
    items of the copies it deleted. c' is counted in the table's snapshot at ``to_version`` by the scan
    task that reads the batch, for the batch's contents only: a scan of the changed table, cheaper than a
    scan of the posting lists, which hold a row per cell plus its super key.

    Why not the alternatives: Delta's row tracking ids (``_metadata.row_id``) cannot be read together
    with the change feed, do not exist on tables other engines write, and are not what a rebuild sees (a
    table rewritten by OVERWRITE gets fresh ids for the same rows), so incremental state and rebuild would
    differ. Ids from a file and a position change whenever DELETE, UPDATE or OPTIMIZE rewrite a file.

    Ids are 64-bit: two rows of one table of n rows share an id with probability about n²/2^65
    (3·10^-8 for 10^6 rows, 3·10^-4 for 10^8).

    Binary cells and array, map or struct cells are not values a join key holds: they get no items and
    do not enter super keys, but they are part of a row's content (h).

Frozen XASH inputs
    The hasher is the configured XASH scheme (``joinsearch.xash_scheme``, ``xash``'s module docstring)
    at the configured size. The ``authors`` scheme (the default) reads nothing but the value. The ``eq5``
    scheme depends on the corpus: character frequencies rank the characters a value encodes (§5.3.2) and
    alpha follows from the number of unique values (Eq. 5). Computed from the data they would drift with
    every batch, and the super keys already stored would stop covering the keys of the same values hashed
    anew, breaking the no-false-negative lemma of §6.3. They are therefore fixed:
    :data:`DEFAULT_CHAR_FREQUENCIES` (character-class shares per million counted over the distinct
    normalised values of the MATE paper's sample tables, Dresden web tables and German open data) and alpha
    from ``joinsearch.unique_values`` (default the 700M unique values of the DWTC, §5.3.1: alpha = 6, 5, 4
    for 128, 256, 512 bits). Configuration may override both, and the hash size.

    The hasher in force, its scheme's name and version included (``XashHasher.to_dict``), is recorded as
    a table property of the posting lists (:data:`HASHER_PROPERTY`). An update whose configured hasher is
    another one (scheme, version, size or parameters) while items exist is refused with an error that
    names both and says to run ``lakemeta rebuild`` (a rebuild truncates the state, after which the new
    hasher is recorded); a version of a scheme that this code does not make cannot be read at all
    (``XashHasher.from_dict``). Searches hash their queries with the recorded hasher, so stored super keys
    and query keys always come from the same function.

Exactly once
    All changes of a run go into the posting lists in one commit tagged with the component's transaction
    (``lakemeta.posting_lists``, run id; docs/architecture.md, "The state component contract"); a retry of
    a run that committed finds the transaction in the table's log and writes nothing. The commit is a
    MERGE, or an append while the posting lists hold no items (a first run, a rebuild), where the MERGE
    would only insert. The MERGE is idempotent besides: row ids depend only on the versions the plan
    names, items are inserted only where absent and removed by id, so even a repeated MERGE would leave
    the same state.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
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
from lakemeta.catalog.merges import matched
from lakemeta.catalog.predicates import is_in_sql
from lakemeta.component import StateComponent, StateDelta
from lakemeta.config import JoinSearchConfig
from lakemeta.hashing import ColumnHashes, spark_xxhash64
from lakemeta.joinsearch.index import table_postings
from lakemeta.joinsearch.superkey import super_keys_from_binary
from lakemeta.joinsearch.xash import AUTHORS, EQ5, N_CHAR_CLASSES, XashHasher, ones_per_value
from lakemeta.lake.batches import Plan
from lakemeta.lake.rows import content_hashes
from lakemeta.lake.table_changes import SIGN, TableChange, TablePartial
from lakemeta.lake.tables import holds_plain_values
from lakemeta.scan import BatchScan

log = logging.getLogger(__name__)

STATE = "state/posting_lists"
HASHER_PROPERTY = "lakemeta.posting_lists.hasher"
ROW_IDS_PROPERTY = "lakemeta.posting_lists.row_ids"

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

# Per table, from the run's scan: the signed items of its changed rows (``copies`` null), and for an
# incremental batch the copies c' each changed content has in the snapshot at ``to_version`` (``copies``
# set, the item columns null).
PARTIAL_SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("row_hash", LongType()),
        StructField("sign", LongType()),
        StructField("column_name", StringType()),
        StructField("value", StringType()),
        StructField("super_key", ArrayType(LongType())),
        StructField("replaces", BooleanType()),
        StructField("copies", LongType()),
    ]
)
_DELETE = "_lm_delete"
# Row ids as the module docstring defines them (content hashes of ``lakemeta.lake.rows``); recorded with
# the hasher, as ids of another scheme cannot be removed by the ids of this one.
ROW_IDS = "content-xxh64-v2"


def posting_hasher(config: JoinSearchConfig) -> XashHasher:
    """The frozen XASH hasher of the posting lists (module docstring): the configured scheme and size;
    for ``eq5``, alpha from ``unique_values`` (Eq. 5) and the configured or default character shares."""
    if config.xash_scheme == AUTHORS:
        return XashHasher.authors(config.hash_bits)
    frequencies = config.char_frequencies or DEFAULT_CHAR_FREQUENCIES
    if len(frequencies) != N_CHAR_CLASSES:
        raise ValueError(f"joinsearch.char_frequencies needs {N_CHAR_CLASSES} shares, got {len(frequencies)}")
    alpha = ones_per_value(config.unique_values, config.hash_bits)
    return XashHasher.eq5(config.hash_bits, alpha, tuple(int(f) for f in frequencies))


def recorded_hasher(catalog: Catalog) -> XashHasher | None:
    """The hasher the stored super keys were made with (``None`` before the first update)."""
    recorded = catalog.location(STATE).delta_table().metadata().configuration.get(HASHER_PROPERTY)
    return None if recorded is None else XashHasher.from_dict(json.loads(recorded))


@dataclass(frozen=True)
class PostingDelta(StateDelta):
    """The posting lists' delta: ``rows`` are the items to insert and the row ids to remove, told apart by
    ``_lm_delete`` (:func:`_merge_source`), their super keys made with ``hasher``; ``indexed_batches``
    counts the batches with a column that can hold items."""

    hasher: XashHasher


class PostingLists(StateComponent):
    """MATE's posting lists (§5.1) maintained under insertions and deletions (§5.4): the module docstring."""

    name = "posting_lists"
    schema = SCHEMA
    bucketed_by_table = True
    config_section = "joinsearch"

    partial_schema = PARTIAL_SCHEMA

    def partial(self) -> functools.partial[_PostingPartial]:
        return functools.partial(_PostingPartial, hasher=posting_hasher(self.config.joinsearch))

    def delta(self, plan: Plan, partials: DataFrame) -> PostingDelta:
        """The items to insert and the row ids to remove (module docstring, "Row ids"), from the signed
        items and copy counts of the run's scan; normalising and XASH ran in the scan's tasks."""
        source = _merge_source(partials)
        return PostingDelta(source, plan.replaced_tables, posting_hasher(self.config.joinsearch))

    def delta_on_driver(self, plan: Plan, scan: BatchScan) -> PostingDelta:
        rows = _merge_rows_on_driver(scan.partials_on_driver(self))
        return PostingDelta(rows, plan.replaced_tables, posting_hasher(self.config.joinsearch))

    def merge(self, plan: Plan, delta: PostingDelta) -> bool:  # type: ignore[override]
        """Record the delta's hasher (refused while items of another one exist), then insert the new items
        and remove items by row id in one commit tagged with the run: an append while the posting lists
        hold no items (a first run, a rebuild), a MERGE otherwise."""
        table = self.catalog.location(STATE).delta_table()
        holds_items = self.catalog.holds_rows(STATE)
        _record_hasher(self.catalog, table, delta.hasher, holds_items)
        if isinstance(delta.rows, pa.Table):  # a small batch (``StateComponent.update``)
            return self._merge_on_driver(plan, delta.rows, delta.replaced_tables)
        if not holds_items:
            return self._append(plan, delta)
        columns = self.catalog.schemas[STATE].fieldNames()  # the component's and the table bucket
        clauses = [
            f"WHEN MATCHED AND s.{_DELETE} THEN DELETE",
            f"WHEN NOT MATCHED AND NOT s.{_DELETE} THEN INSERT ({', '.join(f'`{c}`' for c in columns)}) "
            f"VALUES ({', '.join(f's.`{c}`' for c in columns)})",
        ]
        if delta.replaced_tables:
            replaced = is_in_sql("t.table_name", delta.replaced_tables)
            clauses.append(f"WHEN NOT MATCHED BY SOURCE AND {replaced} THEN DELETE")
        on = (
            "t.table_name = s.table_name AND t.row_id = s.row_id "
            f"AND (s.{_DELETE} OR t.column_name = s.column_name)"
        )
        with self.catalog.transaction(self.txn(plan)), self.catalog.committing("merge", STATE) as fenced:
            metrics = self.catalog.merge_into(STATE, delta.rows, on, clauses, plan.tables, fenced)
        log.info(
            "run %d: posting lists: %d items inserted, %d removed",
            plan.run_id,
            metrics["num_inserted_rows"],
            metrics["num_deleted_rows"],
        )
        return True

    def _merge_on_driver(self, plan: Plan, rows: pa.Table, replaced_tables: Sequence[str]) -> bool:
        """The MERGE's outcome computed on the driver (:func:`merged_postings`), in one commit tagged with
        the run."""
        deleting = rows[_DELETE]
        inserted = rows.filter(pc.invert(deleting)).select(SCHEMA.fieldNames())
        removed = rows.filter(deleting).select(["table_name", "row_id"])
        merged = self.catalog.merge_small(
            STATE,
            sorted(set(plan.tables) | set(replaced_tables)),
            self.txn(plan),
            lambda stored: merged_postings(stored, inserted, removed, replaced_tables),
            SCHEMA.fieldNames(),
        )
        if merged:
            log.info(
                "run %d: posting lists: %d items inserted, %d row ids removed, on the driver",
                plan.run_id,
                inserted.num_rows,
                removed.num_rows,
            )
        return merged

    def _append(self, plan: Plan, delta: PostingDelta) -> bool:
        """Insert the delta's items into posting lists that hold none. Against an empty table the MERGE
        would insert every item and remove nothing, but it joins the delta with the table and computes
        the delta twice (once to find the files it touches, once to write): on a first run of TPC-H 1
        (116.6M items) the MERGE took far longer than the append (``bench/many_tables.py --tpch``;
        docs/performance.md, "Measurements behind the code")."""
        inserted = delta.rows.where(~F.col(_DELETE)).select(*SCHEMA.fieldNames())
        with self.catalog.transaction(self.txn(plan)), self.catalog.committing("append to", STATE) as fenced:
            self.catalog.append(STATE, inserted, fenced)
        log.info(
            "run %d: posting lists: %s items inserted into empty posting lists",
            plan.run_id,
            self.catalog.last_commit_metrics(STATE).get("numOutputRows", "?"),
        )
        return True


def merged_postings(
    stored: pa.Table, inserted: pa.Table, removed: pa.Table, replaced_tables: Sequence[str]
) -> pa.Table:
    """The items of the batch's tables after the posting lists' MERGE (:meth:`PostingLists.merge`), from
    their ``stored`` items: a stored item whose row id is ``removed`` goes; of a replaced table, a stored
    item goes unless ``inserted`` holds it again (by table, row id and column); an ``inserted`` item not
    stored is added."""
    items = ["table_name", "row_id", "column_name"]
    kept = ~matched(stored, removed, ["table_name", "row_id"])
    if replaced_tables:
        of_replaced = pc.is_in(stored["table_name"], pa.array(sorted(replaced_tables), pa.string()))
        kept &= ~of_replaced.to_numpy(zero_copy_only=False) | matched(stored, inserted, items)
    new = inserted.filter(pa.array(~matched(inserted, stored, items)))
    return pa.concat_tables([stored.filter(pa.array(kept)), new.cast(stored.schema)])


def _record_hasher(
    catalog: Catalog, table: deltalake.DeltaTable, hasher: XashHasher, holds_items: bool
) -> None:
    """Record ``hasher`` as the posting lists' hasher; refuse another one while items exist."""
    configuration = table.metadata().configuration
    wanted = {HASHER_PROPERTY: json.dumps(hasher.to_dict(), sort_keys=True), ROW_IDS_PROPERTY: ROW_IDS}
    recorded = {name: configuration.get(name) for name in wanted}
    if recorded == wanted:
        return
    if holds_items:
        raise ValueError(
            f"{STATE} holds items made with {_recorded_text(recorded[HASHER_PROPERTY])} and row ids "
            f"{recorded[ROW_IDS_PROPERTY]}; the configuration makes {hasher.describe()} and this version "
            f"row ids {ROW_IDS}: old super keys would not cover new query keys, and old row ids would not be "
            "removed by new ones. Run `lakemeta rebuild` to rebuild the posting lists with the configured "
            "hasher, or configure joinsearch (xash_scheme, hash_bits, unique_values, char_frequencies) as "
            "the posting lists were built"
        )
    with catalog.committing("set properties of", STATE) as fenced:
        table.alter.set_table_properties(
            wanted,
            raise_if_not_exists=False,
            commit_properties=deltalake.CommitProperties(custom_metadata=fenced),
        )


def _recorded_text(record: str | None) -> str:
    """A recorded hasher in words; a record without a scheme is an ``eq5`` one (``XashHasher.from_dict``)."""
    if record is None:
        return "no recorded hasher"
    data = json.loads(record)
    return (
        f"XASH scheme {data.get('scheme', EQ5)!r} version {data.get('version', 1)}, "
        f"{data.get('hash_bits')} bits, alpha {data.get('alpha')}"
    )


def _indexed(kind: DataType) -> bool:
    """Plain values other than binary are values a join key can hold (module docstring)."""
    return holds_plain_values(kind) and not isinstance(kind, BinaryType)


class _PostingPartial(TablePartial):
    """A table's signed items and, for an incremental batch, the copies of its changed contents."""

    def __init__(self, change: TableChange, hasher: XashHasher) -> None:
        super().__init__(change)
        self.hasher = hasher
        self.indexed = [field.name for field in change.schema.fields if _indexed(field.dataType)]
        self.changed: list[np.ndarray] = []

    def add(self, rows: pa.Table, hashes: ColumnHashes) -> pa.Table | None:
        if not self.indexed:  # no cell of this table can ever be an item
            return None
        row_hashes = content_hashes(rows.drop_columns([SIGN]))
        if not self.change.replaces_state:
            self.changed.append(row_hashes)
        postings = table_postings(
            [rows[name] for name in self.indexed], np.arange(rows.num_rows), self.hasher
        )
        taken = postings.column("row_id")
        words = super_keys_from_binary(postings.column("super_key")).view(np.int64).ravel()
        offsets = np.arange(0, len(words) + 1, self.hasher.n_words, dtype=np.int32)
        n = len(taken)
        return pa.table(
            {
                "table_name": pa.array(np.full(n, self.change.table_name, dtype=object), pa.string()),
                "row_hash": pa.array(row_hashes).take(taken),
                "sign": rows[SIGN].take(taken),
                "column_name": pa.array(self.indexed, pa.string()).take(postings.column("column_id")),
                "value": postings.column("value").cast(pa.string()),
                "super_key": pa.ListArray.from_arrays(pa.array(offsets), pa.array(words)),
                "replaces": pa.array(np.full(n, self.change.replaces_state), pa.bool_()),
                "copies": pa.nulls(n, pa.int64()),
            }
        )

    def finish(self) -> pa.Table | None:
        """c' of the module docstring: the copies each changed content has in the snapshot at
        ``to_version``, counted in the executor over the snapshot's slices."""
        if not self.changed:
            return None
        changed = np.unique(np.concatenate(self.changed))
        names = [field.name for field in self.change.schema.fields]
        kept = [np.zeros(0, np.int64)]
        for rows in self.change.snapshot_slices():
            hashes = content_hashes(rows.select(names))
            kept.append(hashes[np.isin(hashes, changed)])
        contents, copies = np.unique(np.concatenate(kept), return_counts=True)
        n = len(contents)
        return pa.table(
            {
                "table_name": pa.array(np.full(n, self.change.table_name, dtype=object), pa.string()),
                "row_hash": pa.array(contents),
                "sign": pa.nulls(n, pa.int64()),
                "column_name": pa.nulls(n, pa.string()),
                "value": pa.nulls(n, pa.string()),
                "super_key": pa.nulls(n, pa.list_(pa.int64())),
                "replaces": pa.nulls(n, pa.bool_()),
                "copies": pa.array(copies.astype(np.int64)),
            }
        )


def _merge_source(partials: DataFrame) -> DataFrame:
    """Items to insert and row ids to remove (module docstring, "Row ids"), told apart by ``_lm_delete``.

    Copies of a row content have equal items, so the signed items grouped by (table, content, column,
    value) give each item's ``net`` change, the same for all items of a content. A content's copies
    after the batch (c') are ``net`` itself for a replaced table and counted by the scan otherwise.
    """
    rows = ["table_name", "row_hash"]
    per_item = (
        partials.where(F.col("copies").isNull())
        .groupBy(*rows, "column_name", "value")
        .agg(
            F.sum("sign").alias("net"),
            F.first("super_key").alias("super_key"),
            F.first("replaces").alias("replaces"),
        )
        .where(F.col("net") != 0)
    )
    counted = partials.where(F.col("copies").isNotNull()).select(*rows, F.col("copies").alias("counted"))
    per_item = per_item.join(counted, rows, "left")
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


def _merge_rows_on_driver(partials: pa.Table) -> pa.Table:
    """``_merge_source``'s rows computed with Arrow and numpy, for a batch merged on the driver."""
    rows = ["table_name", "row_hash"]
    items = partials.filter(pc.is_null(partials["copies"]))
    items = items.append_column("position", pa.array(np.arange(items.num_rows), pa.int64()))
    grouped = items.group_by([*rows, "column_name", "value"]).aggregate(
        [("sign", "sum"), ("position", "min")]
    )
    grouped = grouped.filter(pc.not_equal(grouped["sign_sum"], 0))
    # each group's first row holds its super key and flag, as F.first takes them (a list column cannot
    # pass through Acero's join: it is taken by this position after it)
    first = grouped["position_min"]
    per_item = grouped.select([*rows, "column_name", "value"]).append_column("net", grouped["sign_sum"])
    per_item = per_item.append_column("first", first)
    per_item = per_item.append_column("replaces", pc.fill_null(items["replaces"].take(first), False))
    counted = partials.filter(pc.is_valid(partials["copies"])).select([*rows, "copies"])
    per_item = per_item.join(counted.rename_columns([*rows, "counted"]), rows, join_type="left outer")
    final = pc.if_else(per_item["replaces"], per_item["net"], pc.fill_null(per_item["counted"], 0))
    per_item = per_item.append_column("final", final).append_column(
        "before", pc.subtract(final, per_item["net"])
    )
    inserted = per_item.filter(pc.greater(per_item["net"], 0))
    inserted_ids, inserted_at = _occurrences_on_driver(inserted, "before", "final")
    removed = per_item.filter(pc.less(per_item["net"], 0)).select([*rows, "final", "before"])
    removed = removed.group_by([*rows, "final", "before"]).aggregate([])
    removed_ids, removed_at = _occurrences_on_driver(removed, "final", "before")
    n_removed = len(removed_ids)
    return pa.concat_tables(
        [
            pa.table(
                {
                    "value": inserted["value"].take(inserted_at),
                    "table_name": inserted["table_name"].take(inserted_at),
                    "column_name": inserted["column_name"].take(inserted_at),
                    "row_id": inserted_ids,
                    "super_key": items["super_key"].take(inserted["first"].take(inserted_at)),
                    _DELETE: pa.array(np.zeros(len(inserted_ids), dtype=bool)),
                }
            ),
            pa.table(
                {
                    "value": pa.nulls(n_removed, pa.string()),
                    "table_name": removed["table_name"].take(removed_at),
                    "column_name": pa.nulls(n_removed, pa.string()),
                    "row_id": removed_ids,
                    "super_key": pa.nulls(n_removed, pa.list_(pa.int64())),
                    _DELETE: pa.array(np.ones(n_removed, dtype=bool)),
                }
            ),
        ]
    )


def _occurrences_on_driver(frame: pa.Table, first: str, end: str) -> tuple[pa.Array, pa.Array]:
    """``_occurrences``' row ids and, for each, the position of its row in ``frame``."""
    starts = frame[first].to_numpy(zero_copy_only=False).astype(np.int64)
    counts = np.maximum(frame[end].to_numpy(zero_copy_only=False).astype(np.int64) - starts, 0)
    at = np.repeat(np.arange(frame.num_rows), counts)
    occurrence = starts[at] + np.arange(len(at)) - np.repeat(np.cumsum(counts) - counts, counts)
    row_hashes = frame["row_hash"].to_numpy(zero_copy_only=False)[at]
    return pa.array(spark_xxhash64(row_hashes, occurrence), pa.int64()), pa.array(at, pa.int64())


def _occurrences(frame: DataFrame, first: str, end: str) -> DataFrame:
    """One row per occurrence number j in [first, end) of each content, with its row id xxhash64(h, j)."""
    numbers = F.when(F.col(end) > F.col(first), F.sequence(F.col(first), F.col(end) - 1))
    occurrence = frame.withColumn("occurrence", F.explode(numbers))
    return occurrence.withColumn("row_id", F.xxhash64(F.col("row_hash"), F.col("occurrence").cast("long")))
