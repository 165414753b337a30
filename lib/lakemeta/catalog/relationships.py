"""How relationships evolve. Each inclusion dependency and each accepted foreign key carries ``first_run``,
the committed run since which it has held without a break, and ``relationship_changes`` records, for every
discovery that found one appear or disappear, which, over which run, compared with which earlier
discovery, and why: the batches since that discovery of the relationship's two tables, and whether the
discovery ran with other settings. So "which relationships broke last week, and why" is a query.

A discovery step writes its result through :func:`replace_relationships`, which records the changes
before it replaces the result, tagged with the previous discovery's time (Delta's transaction ids): a
step killed between the two writes and run again finds the same old result and the same previous
discovery, and its record is skipped as written; killed after both, it finds no change. Nothing is
recorded twice or lost.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import ArrayType

from lakemeta.catalog.freshness import committed_batches
from lakemeta.catalog.predicates import is_in_sql, of_tables
from lakemeta.catalog.store import Catalog, Txn
from lakemeta.spark.portable import arrow_frame

CHANGES = "relationship_changes"


@dataclass(frozen=True)
class Tracked:
    """A result table holding relationships: its kind and the columns naming the two sides."""

    relationship: str
    dependent: tuple[str, str]  # (table, column or columns)
    referenced: tuple[str, str]
    accepted_only: bool  # only rows whose ``accepted`` is true are relationships (FK candidates)


TRACKED = {
    "inclusion_dependencies": Tracked(
        "inclusion_dependency", ("dep_table", "dep_column"), ("ref_table", "ref_column"), False
    ),
    "fk_candidates": Tracked("foreign_key", ("fk_table", "fk_columns"), ("pk_table", "pk_columns"), True),
}

Identity = tuple[str, tuple[str, ...], str, tuple[str, ...]]


def _identities(rows: pa.Table, tracked: Tracked) -> list[Identity | None]:
    """Each row's relationship (dependent table and columns, referenced table and columns); None for a row
    that is none (an FK candidate not accepted)."""

    def columns(name: str) -> list[tuple[str, ...]]:
        values = rows[name].to_pylist()
        return [(value,) if isinstance(value, str) else tuple(value) for value in values]

    dep_tables, ref_tables = rows[tracked.dependent[0]].to_pylist(), rows[tracked.referenced[0]].to_pylist()
    dep_columns, ref_columns = columns(tracked.dependent[1]), columns(tracked.referenced[1])
    accepted = rows["accepted"].to_pylist() if tracked.accepted_only else [True] * rows.num_rows
    return [
        (dep_table, dep, ref_table, ref) if holds else None
        for dep_table, dep, ref_table, ref, holds in zip(
            dep_tables, dep_columns, ref_tables, ref_columns, accepted, strict=True
        )
    ]


def _keys(rows: pa.Table, tracked: Tracked) -> tuple[pa.Array, pa.Array]:
    """Each row's relationship as one string (its two tables and columns, NUL-separated: a character no
    table or column name holds), and whether the row is one: vectorised, for results of 10^5 rows."""

    def text(name: str) -> pa.Array:
        values = rows[name].combine_chunks()
        if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
            values = pc.binary_join(values, "\x00")
        return values.cast(pa.string())

    sides = [text(name) for side in (tracked.dependent, tracked.referenced) for name in side]
    keys = pc.binary_join_element_wise(*sides, "\x00")
    if not tracked.accepted_only:
        return keys, pa.array(np.ones(rows.num_rows, bool))
    return keys, pc.fill_null(rows["accepted"].combine_chunks(), False)


def touching(rows: pa.Table, name: str, tables: Collection[str]) -> np.ndarray:
    """Whether each row of the result table ``name`` (a key of ``TRACKED``) has one of ``tables`` on a
    side, dependent or referenced: a mask."""
    tracked = TRACKED[name]
    return of_tables(rows[tracked.dependent[0]], tables) | of_tables(rows[tracked.referenced[0]], tables)


def replace_relationships(
    catalog: Catalog,
    name: str,
    rows: pa.Table | DataFrame,
    settings: str,
    run: int | None,
    reflects: dict | None = None,
    stored: pa.Table | None = None,
    changed_tables: Collection[str] | None = None,
) -> int:
    """Replace the result table ``name`` (written by the discovery step of the same name, run with
    ``settings`` over the state of the committed run ``run``) with ``rows`` (all its columns but
    ``first_run``): each relationship kept keeps its ``first_run``, a new one gets ``run``, and the
    relationships that appeared or disappeared are recorded first. ``reflects`` goes with the new result's
    commit (``Catalog.replace_small``). ``stored``: the table's current content when the step has read it
    already (a step reusing its last result), read here otherwise. ``changed_tables``: when the step
    computed again only the relationships with one of these tables on a side and kept the others as
    stored, in their order: only the relationships of those tables are compared (10^5 INDs reused after
    a batch of a few tables). ``rows`` a DataFrame the executors hold: compared and written there
    (``_replace_in_executors``). Returns the rows written."""
    if isinstance(rows, DataFrame):
        return _replace_in_executors(catalog, name, rows, settings, run, reflects, changed_tables)
    step = name
    tracked = TRACKED[name]
    if stored is None:
        stored = catalog.read_small(name)
    first_runs = np.zeros(rows.num_rows, np.int64)
    has_first_run = np.zeros(rows.num_rows, bool)
    compared, stored_compared = np.arange(rows.num_rows), np.arange(stored.num_rows)
    if changed_tables is not None:
        in_rows, in_stored = touching(rows, name, changed_tables), touching(stored, name, changed_tables)
        sides = [*tracked.dependent, *tracked.referenced]
        kept = rows.select(sides).filter(pa.array(~in_rows))
        # the others are those stored, in their order (checked: two tables equal column for column, a
        # millisecond): each keeps its stored first run; otherwise every row is compared by its key
        if kept.equals(stored.select(sides).filter(pa.array(~in_stored))):
            kept_first_runs = stored["first_run"].combine_chunks().filter(pa.array(~in_stored))
            first_runs[~in_rows] = pc.fill_null(kept_first_runs, 0).to_numpy()
            has_first_run[~in_rows] = kept_first_runs.is_valid().to_numpy(zero_copy_only=False)
            compared, stored_compared = np.flatnonzero(in_rows), np.flatnonzero(in_stored)
    rows_compared, stored = rows.take(pa.array(compared)), stored.take(pa.array(stored_compared))
    stored_keys, stored_holds = _keys(stored, tracked)
    stored = stored.filter(stored_holds)
    stored_keys = stored_keys.filter(stored_holds)
    keys, holds = _keys(rows_compared, tracked)
    at = pc.index_in(keys, value_set=stored_keys)  # each row's relationship among the stored ones
    compared_first_runs = pc.if_else(
        holds,
        pc.coalesce(stored["first_run"].combine_chunks().take(at), pa.scalar(run, pa.int64())),
        pa.scalar(None, pa.int64()),
    )
    first_runs[compared] = pc.fill_null(compared_first_runs, 0).to_numpy()
    has_first_run[compared] = compared_first_runs.is_valid().to_numpy(zero_copy_only=False)
    new = pc.and_(holds, pc.is_null(at))
    gone = pc.invert(pc.is_in(stored_keys, value_set=keys.filter(holds)))
    appeared = sorted(set(_identities(rows_compared.filter(new), tracked)))
    disappeared = sorted(set(_identities(stored.filter(gone), tracked)))
    _record_changes(catalog, tracked, step, run, settings, appeared, disappeared)
    written = rows.append_column("first_run", pa.array(first_runs, pa.int64(), mask=~has_first_run))
    schema = catalog.arrow_schema(name)
    catalog.replace_small(name, written.select(schema.names).cast(schema), reflects=reflects)
    return written.num_rows


def _replace_in_executors(
    catalog: Catalog,
    name: str,
    rows: DataFrame,
    settings: str,
    run: int | None,
    reflects: dict | None,
    changed_tables: Collection[str] | None,
) -> int:
    """``replace_relationships`` for rows the executors hold (millions of INDs in a lake of small real
    tables): ``rows`` (a DataFrame of all the result's columns but ``first_run``) are the relationships with
    one of ``changed_tables`` on a side (every relationship when that is None); the stored rows they
    replace are compared with them by joins in the executors, the changes appended, then the rows written
    with their first runs, replacing the stored rows of those tables only (Delta's ``replaceWhere``).
    Of a result whose rows are candidates (``Tracked.accepted_only``), only the accepted rows are
    relationships, and only they carry a first run. Returns the rows written."""
    tracked = TRACKED[name]
    sides = [*tracked.dependent, *tracked.referenced]
    stored = catalog.read(name)
    predicate = None
    if changed_tables is not None:
        tables = sorted(changed_tables)
        predicate = f"{is_in_sql(tracked.dependent[0], tables)} OR {is_in_sql(tracked.referenced[0], tables)}"
        stored = stored.where(predicate)
    holds = F.col("accepted") if tracked.accepted_only else F.lit(True)
    stored = stored.where(F.coalesce(holds, F.lit(False))).select(*sides, "first_run").persist()
    rows = rows.persist()
    try:
        relationships = rows.where(F.coalesce(holds, F.lit(False))).select(*sides)
        appeared = relationships.join(stored, sides, "left_anti").select(
            *sides, F.lit("appeared").alias("change")
        )
        disappeared = stored.join(relationships, sides, "left_anti").select(
            *sides, F.lit("disappeared").alias("change")
        )
        _record_changes_in_executors(catalog, tracked, name, run, settings, appeared.unionByName(disappeared))
        first_run = F.coalesce(F.col("first_run"), F.lit(run).cast("long"))
        written = rows.join(stored, sides, "left").withColumn(
            "first_run", F.when(F.coalesce(holds, F.lit(False)), first_run)
        )
        return catalog.replace(name, written, predicate, reflects)
    finally:
        stored.unpersist()
        rows.unpersist()


def _record_changes_in_executors(
    catalog: Catalog, tracked: Tracked, step: str, run: int | None, settings: str, changes: DataFrame
) -> None:
    """``_record_changes`` for changes the executors hold (``changes``: the two sides' columns and
    ``change``); nothing is appended when there are none."""
    if changes.isEmpty():
        return
    previous_at, settings_changed, touched, txn = _compared_with(catalog, step, run, settings)
    # a row per table with batches since the previous discovery: small by construction
    batches = F.broadcast(
        arrow_frame(
            catalog.spark,
            pa.table(
                {
                    "table": pa.array(list(touched), pa.string()),
                    "listed": pa.array(list(touched.values()), pa.list_(pa.string())),
                }
            ),
        )
    )
    (dep_table, dep_column), (ref_table, ref_column) = tracked.dependent, tracked.referenced
    none = F.array().cast("array<string>")
    of = {
        side: batches.select(F.col("table").alias(table), F.col("listed").alias(f"{side}_batches"))
        for side, table in (("dep", dep_table), ("ref", ref_table))
    }
    listed = (
        changes.join(of["dep"], dep_table, "left")
        .join(of["ref"], ref_table, "left")
        .select(
            F.lit(run).cast("long").alias("run_id"),
            F.lit(previous_at).cast("timestamp").alias("previous_discovery_at"),
            F.lit(tracked.relationship).alias("relationship"),
            "change",
            F.col(dep_table).alias("dep_table"),
            _as_list(changes, dep_column).alias("dep_columns"),
            F.col(ref_table).alias("ref_table"),
            _as_list(changes, ref_column).alias("ref_columns"),
            F.concat(
                F.transform(
                    F.coalesce("dep_batches", none), lambda b: F.concat(F.col(dep_table), F.lit(": "), b)
                ),
                F.when(F.col(ref_table) == F.col(dep_table), none).otherwise(
                    F.transform(
                        F.coalesce("ref_batches", none), lambda b: F.concat(F.col(ref_table), F.lit(": "), b)
                    )
                ),
            ).alias("batches"),
            F.lit(settings_changed).alias("settings_changed"),
        )
    )
    catalog.append_once(CHANGES, listed, txn)


def _as_list(rows: DataFrame, column: str) -> Column:
    """A side's column or columns as a list (an IND names one column, an FK a list)."""
    if isinstance(rows.schema[column].dataType, ArrayType):
        return F.col(column)
    return F.array(F.col(column))


def _record_changes(
    catalog: Catalog,
    tracked: Tracked,
    step: str,
    run: int | None,
    settings: str,
    appeared: Sequence[Identity],
    disappeared: Sequence[Identity],
) -> None:
    if not appeared and not disappeared:
        return
    previous_at, settings_changed, touched, txn = _compared_with(catalog, step, run, settings)
    changes = [("appeared", identity) for identity in appeared] + [
        ("disappeared", identity) for identity in disappeared
    ]
    table = pa.table(
        {
            "run_id": pa.array([run] * len(changes), pa.int64()),
            "previous_discovery_at": pa.array([previous_at] * len(changes), pa.timestamp("us", tz="UTC")),
            "relationship": [tracked.relationship] * len(changes),
            "change": [change for change, _ in changes],
            "dep_table": [identity[0] for _, identity in changes],
            "dep_columns": [list(identity[1]) for _, identity in changes],
            "ref_table": [identity[2] for _, identity in changes],
            "ref_columns": [list(identity[3]) for _, identity in changes],
            "batches": [
                [
                    f"{table}: {batch}"
                    for table in dict.fromkeys((identity[0], identity[2]))
                    for batch in touched.get(table, [])
                ]
                for _, identity in changes
            ],
            "settings_changed": [settings_changed] * len(changes),
        }
    )
    catalog.append_small(CHANGES, table, txn)


def _compared_with(
    catalog: Catalog, step: str, run: int | None, settings: str
) -> tuple[object, bool, dict[str, list[str]], Txn]:
    """What a discovery of ``step`` is compared with: the previous discovery's time, whether the settings
    changed since, each table's batches in between, and the changes' write identity (once per discovery:
    a retry compares with the same previous discovery)."""
    previous = _previous_discovery(catalog, step)
    previous_at = None if previous is None else previous["finished_at"]
    settings_changed = previous is not None and previous["settings"] != settings
    touched = _batches_between(catalog, None if previous is None else previous["run_id"], run)
    version = 0 if previous_at is None else int(previous_at.timestamp() * 1_000_000)
    return previous_at, settings_changed, touched, Txn(f"relationships {step}", version)


def _previous_discovery(catalog: Catalog, step: str) -> dict | None:
    """The newest completed discovery of ``step``: its run, settings and time (None before the first)."""
    records = catalog.read_small("discovery_runs")
    mine = records.filter(pc.equal(records["step"], step)).sort_by("finished_at").to_pylist()
    return mine[-1] if mine else None


def _batches_between(catalog: Catalog, after_run: int | None, run: int | None) -> dict[str, list[str]]:
    """Per table, its committed batches of the runs after ``after_run`` up to ``run``, each as
    ``run 7: incremental 3→5``, ``run 1: full 4`` or ``run 9: drop``."""
    if run is None:
        return {}
    touched: dict[str, list[str]] = {}
    for batch in committed_batches(catalog, after_run, run).to_pylist():
        if batch["kind"] == "drop":
            what = "drop"
        elif batch["from_version"] is None:
            what = f"{batch['kind']} {batch['to_version']}"
        else:
            what = f"{batch['kind']} {batch['from_version']}→{batch['to_version']}"
        touched.setdefault(batch["table_name"], []).append(f"run {batch['run_id']}: {what}")
    return touched
