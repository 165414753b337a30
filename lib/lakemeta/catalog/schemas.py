"""Delta schemas of the catalog's own tables: the results analysts query, and the batches (watermarks).

Names and the listed columns are a contract that tests, DAGs and analysts rely on: add columns, rename none
(docs/architecture.md, "The catalog contract"). The state tables' schemas belong to their state components
(``lakemeta.component``), each declared beside the code that maintains it.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def _schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in fields])  # type: ignore[arg-type]


STRINGS = ArrayType(StringType())

# An FK candidate (fk_candidates, and the outcomes kept in state/fk_scored): its columns, phase 1's estimate
# and bound, the EMD it ranks by, how the key was found (agree_sets: a minimal UCC; checked: exactly,
# without agree-sets; declared), and the signals the choice reads (lakemeta.fks.signals).
FK_PAIR = (
    ("fk_table", StringType()),
    ("fk_columns", STRINGS),
    ("pk_table", StringType()),
    ("pk_columns", STRINGS),
)
FK_SCORE = (("inclusion_estimate", DoubleType()), ("inclusion_error", DoubleType()), ("emd", DoubleType()))
FK_KEY_SOURCE = ("pk_source", StringType())
FK_SIGNALS = (
    ("inclusion", DoubleType()),
    ("coverage", DoubleType()),
    ("fk_distinct", LongType()),
    ("pk_distinct", LongType()),
    ("span_start", DoubleType()),
    ("span_end", DoubleType()),
    ("pk_is_integer", BooleanType()),
    ("pk_is_range", BooleanType()),
    ("fk_step", LongType()),
)

# A dependent column and the column it is (estimated to be) included in.
COLUMN_PAIR = (
    ("dep_table", StringType()),
    ("dep_column", StringType()),
    ("ref_table", StringType()),
    ("ref_column", StringType()),
)

CATALOG_SCHEMAS: dict[str, StructType] = {
    "tables": _schema(
        ("table_name", StringType()),
        ("n_rows", LongType()),
        ("n_columns", IntegerType()),
        ("last_version", LongType()),
        ("updated_at", TimestampType()),
    ),
    "columns": _schema(
        ("table_name", StringType()),
        ("column_name", StringType()),
        ("ordinal", IntegerType()),
        ("data_type", StringType()),
        ("n_rows", LongType()),
        ("n_nulls", LongType()),
        ("n_distinct_estimate", LongType()),
        ("is_unique", BooleanType()),
        ("n_distinct", LongType()),  # exact (lakemeta.values.state)
    ),
    "unique_column_combinations": _schema(("table_name", StringType()), ("columns", STRINGS)),
    "functional_dependencies": _schema(
        ("table_name", StringType()),
        ("lhs", STRINGS),
        ("rhs", StringType()),
        ("error", DoubleType()),
    ),
    "inclusion_dependencies": _schema(
        *COLUMN_PAIR,
        ("dep_distinct", LongType()),
        ("ref_distinct", LongType()),
        ("coverage", DoubleType()),
        # The run since which the IND has held without a break (lakemeta.catalog.relationships).
        ("first_run", LongType()),
    ),
    "inclusion_estimates": _schema(
        *COLUMN_PAIR,
        ("estimate", DoubleType()),
        ("error_bound", DoubleType()),
        # exact (counted from the value sets), estimated, or undetermined (no estimate: bound too wide)
        ("status", StringType()),
    ),
    "fk_candidates": _schema(
        *FK_PAIR,
        *FK_SCORE,
        ("rank", IntegerType()),
        ("accepted", BooleanType()),
        ("name_match", BooleanType()),
        FK_KEY_SOURCE,
        *FK_SIGNALS,
        # Signals of the candidate among the others, and what the choice made of them (lakemeta.fks.choice):
        # the learned score (lakemeta.fks.model) and the features that moved it most (evidence).
        ("fk_is_key", BooleanType()),
        ("pk_ordinal", IntegerType()),
        ("tables_overlap", BooleanType()),
        ("keys_both_ways", BooleanType()),
        ("same_folder", BooleanType()),
        ("name_similarity", DoubleType()),
        ("name_equal", BooleanType()),
        ("names_key_table", BooleanType()),
        ("score", DoubleType()),
        ("evidence", StringType()),
        ("schema_graph", StringType()),
        ("choice", IntegerType()),
        ("answer_set", IntegerType()),
        ("reason", StringType()),
        # Of an accepted FK: the run since which it has been accepted without a break.
        ("first_run", LongType()),
    ),
    # Tables that are copies, samples, versions or extracts of one another (lakemeta.fks.overlaps).
    "table_overlaps": _schema(
        ("left_table", StringType()),
        ("right_table", StringType()),
        ("columns", STRINGS),
        ("left_in_right", DoubleType()),
        ("right_in_left", DoubleType()),
        ("mutual_keys", BooleanType()),
        ("same_shape", BooleanType()),
    ),
    "joinable_tables": _schema(
        ("query_id", StringType()),
        ("rank", IntegerType()),
        ("table_name", StringType()),
        ("joinability", LongType()),
        ("column_mapping", StringType()),
    ),
    "runs": _schema(
        ("run_id", LongType()),
        ("started_at", TimestampType()),
        ("finished_at", TimestampType()),
        ("status", StringType()),
        ("tables_changed", IntegerType()),
        ("rows_inserted", LongType()),
        ("rows_deleted", LongType()),
    ),
    # Each IND and accepted FK that appeared or disappeared, per discovery (lakemeta.catalog.relationships):
    # the committed run it read, when the discovery it is compared with finished, and why: the batches
    # since then of the relationship's two tables, and whether the settings changed.
    "relationship_changes": _schema(
        ("run_id", LongType()),
        ("previous_discovery_at", TimestampType()),
        ("relationship", StringType()),  # inclusion_dependency or foreign_key
        ("change", StringType()),  # appeared or disappeared
        ("dep_table", StringType()),
        ("dep_columns", STRINGS),
        ("ref_table", StringType()),
        ("ref_columns", STRINGS),
        ("batches", STRINGS),
        ("settings_changed", BooleanType()),
    ),
    # Each discovery step's completions: the newest committed run whose state it read and the settings it
    # ran with (Config.discovery_settings); a step's newest row says what its results reflect.
    "discovery_runs": _schema(
        ("step", StringType()),
        ("run_id", LongType()),
        ("settings", StringType()),
        ("finished_at", TimestampType()),
    ),
    # Write-audit-publish: per catalog table, the versions that passed the quality gate and were published
    # (the views of the Spark SQL database `lakemeta` and `lakemeta show` read the last one).
    "published": _schema(
        ("table_name", StringType()),
        ("version", LongType()),
        ("published_at", TimestampType()),
        ("audit", StringType()),
    ),
}

# The catalog's bookkeeping: the runs' plans, whose committed rows are the watermarks.
BOOKKEEPING_SCHEMAS: dict[str, StructType] = {
    # One row per table and run: which versions the run's batch covers; `committed` turns true only
    # when every state update of the batch has committed, and the committed rows are the watermarks.
    "state/batches": _schema(
        ("run_id", LongType()),
        ("table_name", StringType()),
        ("kind", StringType()),
        ("source", StringType()),
        ("from_version", LongType()),
        ("to_version", LongType()),
        ("table_id", StringType()),
        ("rows_inserted", LongType()),
        ("rows_deleted", LongType()),
        ("committed", BooleanType()),
        # Rows and bytes of the snapshot at to_version, from the log's file statistics: what the scan
        # packs tasks by, without opening the table again.
        ("snapshot_rows", LongType()),
        ("snapshot_bytes", LongType()),
        # Why the batch could not be read: it stays uncommitted (the table keeps its watermark and is
        # planned again by the next run) while the run's other batches commit.
        ("error", StringType()),
    ),
}


# What discovery keeps between runs so that it recomputes only what changed: derived from the state, with
# the run and settings it reflects in its newest commit that wrote rows, and dropped with the state on a
# rebuild.
DISCOVERY_STATE_SCHEMAS: dict[str, StructType] = {
    # Many's inputs per column (lakemeta.inds.columns): Bloom signature and filter statistics, and the
    # sorted value hashes of a column small enough to be validated on the driver (lakemeta.inds.containment);
    # the signature is null where it is the paper's (level 0) of those hashes, which give it back.
    # A batch's columns are appended: a column's row of the newest computed_in (the committed run it was
    # computed over) holds its inputs, and the older ones are dropped when the table is rewritten.
    "state/ind_columns": _schema(
        ("table_name", StringType()),
        ("column_name", StringType()),
        ("signature", BinaryType()),
        ("set_size", LongType()),
        ("n_values", LongType()),
        ("n_distinct", LongType()),
        ("all_integer", BooleanType()),
        ("value_hashes", BinaryType()),
        ("computed_in", LongType()),
    ),
    # The FK step's outcome for every candidate it proposed (lakemeta.fks.discover): pruned (passed false)
    # or scored with its signals; a candidate whose two tables did not change keeps its outcome.
    "state/fk_scored": _schema(
        *FK_PAIR,
        FK_KEY_SOURCE,
        *FK_SCORE,
        *FK_SIGNALS,
        ("proposed_estimate", DoubleType()),  # phase 1's estimate and bound it was proposed with
        ("proposed_error", DoubleType()),
        ("passed", BooleanType()),
    ),
    # The exact key checks of tables without agree-sets (lakemeta.fks.keys): the table's version, the
    # columns and combinations asked, the keys found; a check asked again with the same inputs is reused.
    "state/fk_key_checks": _schema(
        ("table_name", StringType()),
        ("version", LongType()),
        ("singles", STRINGS),
        ("combinations", ArrayType(STRINGS)),
        ("keys", ArrayType(STRINGS)),
    ),
}


# The tables every catalog holds, whatever state components are registered.
OWN_SCHEMAS: dict[str, StructType] = {**CATALOG_SCHEMAS, **BOOKKEEPING_SCHEMAS, **DISCOVERY_STATE_SCHEMAS}
