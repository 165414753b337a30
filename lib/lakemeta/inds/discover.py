"""Many over the lake's value sets with Spark: the catalog's ``inclusion_dependencies`` (Many Alg. 8-11,
distributed), recomputed for what changed.

Many needs, per column, its Bloom signature and filter statistics, and for validation its distinct values.
Both come from the state, not from the tables: ``state/column_values`` holds every column's distinct
canonical values as 64-bit hashes with their row counts, maintained per batch with deletes.

1. Signature-Generator (Alg. 3 with the passes of §4.3): each column's signature, set size and filter
   statistics from its value set, in the executors (``inds.columns``), kept in ``state/ind_columns``.
2. The signature matrix (Alg. 3) is built on the driver from the signatures (small by construction:
   p·m bits per column) and shipped to the tasks; the IND-Proposer (Alg. 4-6 with the indexed
   bit-vectors of §4.5) runs on column ranges in parallel tasks, as Alg. 8's workers (Alg. 9), with the
   filters of Alg. 10; the same task drops what needs no value set read: a dependent with more values
   than its referenced column, the sized signatures' finer check (``inds.sized_signatures``), and a candidate
   between two small columns checked on their kept value hashes (``inds.containment``).
3. The IND-Validator (Alg. 7) checks every candidate left exactly against the stored value sets: the
   dependent column's value hashes joined with the candidate and anti-joined with the referenced column's,
   a candidate with no value left over being valid. Then the coverage filter of Alg. 11.

Where it runs, decided once per run: a lake of small real tables has millions of candidates and INDs,
so unless the candidates are few (at most ``scan.driver_max_pairs``, counted before any is collected)
they stay in the executors (a DataFrame of column ids), are validated there, named by a broadcast join of one
row per column, compared with the stored INDs and written by Spark (``relationships``); the driver holds
one row per column. Fewer candidates are collected (a few changed columns are tested on the driver
itself) and validated there, by an anti-join in Arrow where the value sets read are at most
``scan.driver_state_bytes``.

What a batch changes. An IND's validity, its distinct counts and its filters depend on its two columns'
value sets only. So a discovery after some batches reuses the last result and the kept inputs, both
written with today's Many settings (their commits' ``lakemeta.reflects``), and computes again only what
involves a column of a table changed since then (a committed batch after the run they reflect, or
columns added or dropped): that table's inputs; the candidates with such a column as dependent
(dep2refs over the changed columns) or as referenced side (ref2deps over them), which together are
exactly the pairs it takes part in (for a few changed columns, the same pairs from one pass of subset tests
over the signatures: ``proposer.propose_changed``); their validation. INDs between unchanged columns are
kept as they are. Other settings, a rebuild (which drops the kept inputs) or a first run compute
everything. The changed tables' inputs are appended to the kept ones (a column's newest row holds its
inputs): a batch writes its few tables' rows, not the inputs of every column; the table is rewritten with
only the current rows when older rows would pass a quarter of it, or rows of dropped tables or columns
are stored. Either way the result is the one a discovery from scratch gives
(tests/spark/test_incremental_discovery.py).

Beyond the paper, exactness with hashes. Values are compared by their 64-bit hash: an IND that does not
hold is reported only if each dependent value outside the referenced column shares its hash with one
inside, with probability at most |ref| / 2^64 for one such value (5·10^-13 for a column of 10^7 values);
distinct counts are undercounted only by a collision within one column, |X|^2 / 2^65. Reading values
from the tables instead would cost a read of every table per run, which this step exists to avoid.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from lakemeta.arrays import one_array
from lakemeta.catalog import Catalog
from lakemeta.catalog.freshness import changed_since, reflecting
from lakemeta.catalog.predicates import of_tables
from lakemeta.catalog.relationships import replace_relationships, touching
from lakemeta.config import Config, ScanConfig, settings_of
from lakemeta.inds.columns import INPUTS, ColumnInputs, compute_inputs
from lakemeta.inds.config import ManyConfig, many_config
from lakemeta.inds.containment import contained
from lakemeta.inds.filters import column_filters, coverage, low_coverage
from lakemeta.inds.kept_inputs import KeptInputs, keep_inputs, read_kept_inputs
from lakemeta.inds.matrix import SignatureMatrix
from lakemeta.inds.proposer import STRATEGIES, column_ranges, propose_changed, propose_range
from lakemeta.inds.sized_signatures import may_be_contained
from lakemeta.lake.tables import is_plain_type_name
from lakemeta.spark.placement import MapBody
from lakemeta.spark.portable import arrow_frame, default_parallelism, describe_jobs
from lakemeta.storage import Location
from lakemeta.values.state import ColumnValues

log = logging.getLogger(__name__)

RESULTS = "inclusion_dependencies"
PAIR = ["dep_table", "dep_column", "ref_table", "ref_column"]
# Changed columns up to which their candidates are proposed on the driver (``proposer.propose_changed``: one
# pass over 10^5 signatures tests them all) rather than by the matrix in tasks.
DRIVER_PROPOSALS = 1_000


@dataclass(frozen=True)
class ManyRun:
    """What one discovery found and what it cost: the valid INDs after the filters (``RESULTS``'s
    schema, sorted by pair), the inputs of every column, the counts of each stage and its wall time."""

    result: pa.Table | DataFrame
    inputs: ColumnInputs
    changed_tables: set[str] | None  # the tables whose inputs were computed again; None: every table's
    kept: KeptInputs | None  # the kept inputs reused (None: none were)
    n_tables: int
    n_candidates: int  # proposed by the matrix (Alg. 4-6)
    n_checked: int  # left for the validator by the size rule and the sized signatures
    n_validated_on_driver: int  # candidates between two small columns, on their kept hashes (``containment``)
    n_valid: int
    stage_seconds: dict[str, float]
    last_result: pa.Table | None  # the stored result this one reused in part (None: nothing reused)
    on_driver: bool = True  # where it ran: ``result`` is an Arrow table of every IND, else a DataFrame of
    # the INDs with a changed column (all when ``changed_tables`` is None)
    persisted: list[DataFrame] = dataclasses.field(default_factory=list)  # what the executors keep for it

    def release(self) -> None:
        """Drop what the executors keep for ``result`` (after it is written)."""
        for frame in self.persisted:
            frame.unpersist()

    def table(self) -> pa.Table:
        """``result`` as an Arrow table sorted by pair (for tests and benchmarks: the step never collects
        the executors' rows)."""
        # every IND of the run, for the tests' small lakes and the benchmarks: the step never calls it
        rows = self.result if isinstance(self.result, pa.Table) else self.result.toArrow()
        self.release()
        return rows.sort_by([(name, "ascending") for name in PAIR])

    @property
    def n_changed_tables(self) -> int:
        """The current tables computed again (all of them when everything was)."""
        current = set(pc.unique(self.inputs.table_names).to_pylist())
        return len(current) if self.changed_tables is None else len(self.changed_tables & current)


@dataclass(frozen=True)
class LakeColumns:
    """The columns taking part, in table and ordinal order, with their exact distinct counts."""

    table_names: pa.StringArray
    column_names: pa.StringArray
    n_distinct: np.ndarray  # int64, 0 for a column without a value

    def take(self, at: np.ndarray) -> LakeColumns:
        rows = pa.array(at, pa.int64())
        return LakeColumns(self.table_names.take(rows), self.column_names.take(rows), self.n_distinct[at])


def lake_columns(catalog: Catalog) -> LakeColumns:
    """Every column of plain, non-binary values of the listed tables, from the catalog's ``columns``, in the
    order its files hold them (no step depends on the order: the result is sorted by name)."""
    columns = catalog.read_small("columns", columns=["table_name", "column_name", "data_type", "n_distinct"])
    # one test per distinct type name, not per column (10^5 columns, a few dozen type names)
    type_names = pc.unique(columns["data_type"]).to_pylist()
    plain = [name for name in type_names if is_plain_type_name(name) and name != "binary"]
    kept = columns.filter(pc.is_in(columns["data_type"], pa.array(plain, pa.string())))
    return LakeColumns(
        one_array(kept["table_name"]).cast(pa.string()),
        one_array(kept["column_name"]).cast(pa.string()),
        pc.fill_null(kept["n_distinct"], 0).to_numpy().astype(np.int64),
    )


def _kept_inputs(
    catalog: Catalog, settings: str, table_names: pa.StringArray, column_names: pa.StringArray
) -> tuple[KeptInputs, set[str]] | None:
    """The kept inputs and the tables whose inputs are to be computed again, when the kept inputs and the
    last result were computed with ``settings``; None when every input is to be computed."""
    changed = changed_since(catalog, [INPUTS, RESULTS], settings)
    if changed is None:
        return None
    kept = read_kept_inputs(catalog, table_names, column_names)
    # Columns added or dropped without a batch of the table recorded (a rebuild drops the inputs).
    added = table_names.filter(pa.array(kept.at < 0))
    return kept, changed | set(pc.unique(added).to_pylist()) | kept.unlisted


def _inputs(
    catalog: Catalog, config: ManyConfig, columns: LakeColumns, kept: KeptInputs | None, changed: set[str]
) -> ColumnInputs:
    """Every column's inputs in the given order: kept ones for unchanged tables, computed for the
    ``changed`` ones (every table's when nothing is ``kept``)."""
    if kept is None:
        return compute_inputs(catalog, columns.table_names, columns.column_names, columns.n_distinct, config)
    is_changed = of_tables(columns.table_names, changed)
    at = np.flatnonzero(is_changed)
    asked = columns.take(at)
    fresh = compute_inputs(
        catalog, asked.table_names, asked.column_names, asked.n_distinct, config
    ).to_arrow()
    # Row i of the result: its kept row for an unchanged column, a fresh one (after the kept rows) for a
    # changed one; one take of the stored rows and the fresh ones together, in the given order.
    rows = kept.at.astype(np.int64)
    rows[at] = kept.rows.num_rows + np.arange(len(at))
    combined = pa.concat_tables([kept.rows.select(fresh.column_names), fresh])
    return ColumnInputs.from_arrow(combined.take(pa.array(rows)), config.params)


# What a candidate task returns: the candidates left after the cheap checks, by column id, ``checked``
# where their kept value hashes validated them already (valid), else to be validated against the stored
# value sets; and one row (dep = -1) with the task's counts.
_FOUND = pa.schema(
    [
        ("dep", pa.int64()),
        ("ref", pa.int64()),
        ("checked", pa.bool_()),
        ("proposed", pa.int64()),
        ("possible", pa.int64()),
        ("on_hashes", pa.int64()),
    ]
)


def _checked(inputs: ColumnInputs, config: ManyConfig, candidates: np.ndarray) -> pa.RecordBatch:
    """The candidates (dep, ref) that may be INDs after the checks that read no value set, as ``_FOUND``
    rows. Beyond Alg. 7: a dependent column with more distinct values than its referenced one cannot be
    included in it (Bloom signatures of large columns fill up and propose both directions of such pairs;
    the larger dependent side is the costliest to validate, and it is left out unread); then the
    signatures sized to their columns rule out most of the rest (``inds.sized_signatures``); then a candidate
    between two columns whose value hashes are kept is validated on them (``containment``)."""
    possible = inputs.set_sizes[candidates[:, 0]] <= inputs.set_sizes[candidates[:, 1]]
    possible[possible] = _finer_check(inputs, candidates[possible], config)
    left = candidates[possible]
    offsets, hashes, kept = inputs.hash_rows
    on_hashes = kept[left[:, 0]] & kept[left[:, 1]]
    valid = contained(left[on_hashes, 0], left[on_hashes, 1], offsets, hashes)
    keep = ~on_hashes
    keep[on_hashes] = valid
    found = left[keep]
    counts = [len(candidates), int(possible.sum()), int(on_hashes.sum())]
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.append(found[:, 0], -1), pa.int64()),
            pa.array(np.append(found[:, 1], -1), pa.int64()),
            pa.array(np.append(on_hashes[keep], False), pa.bool_()),
            *(pa.array(np.append(np.zeros(len(found), np.int64), n), pa.int64()) for n in counts),
        ],
        schema=_FOUND,
    )


def _candidate_tasks(
    inputs: ColumnInputs, config: ManyConfig, changed: np.ndarray | None, n_tasks: int
) -> tuple[int, MapBody]:
    """Step 2 and the cheap checks as a ``mapInArrow`` body over task numbers (Alg. 8-10): task i proposes
    the candidates of its column range from the matrix and returns what ``_checked`` leaves of them; with
    ``changed`` (a column mask) only the pairs with a changed column on a side: dep2refs over the changed
    columns, and ref2deps over them for the dependents that did not change (the others are dep2refs'), so
    every pair is proposed once. Returns the number of tasks and the body; the matrix and the inputs
    travel with it (one row or a signature per column: small by construction)."""
    n_columns = len(inputs.column_names)
    filtered_cols, filtered_refs = column_filters(inputs.stats, config.filters, n_columns)
    matrix = SignatureMatrix.from_signatures(inputs.base_signatures(config.params), config.params)
    ranges = column_ranges(n_columns, max(1, min(n_columns, n_tasks)))
    strategies = (config.strategy,) if changed is None else STRATEGIES

    def propose(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                lo, hi = ranges[i]
                for strategy in strategies:
                    found = propose_range(
                        matrix, lo, hi, strategy, config.indexed, filtered_cols, filtered_refs, changed
                    )
                    if changed is not None and strategy == "ref2deps":
                        found = found[~changed[found[:, 0]]]
                    yield _checked(inputs, config, found)

    return len(ranges), propose


def _finer_check(inputs: ColumnInputs, candidates: np.ndarray, config: ManyConfig) -> np.ndarray:
    """Which candidates the signatures sized to their columns still allow (``inds.sized_signatures``)."""
    hash_offsets, hashes, has_hashes = inputs.hash_rows
    return may_be_contained(
        candidates[:, 0],
        candidates[:, 1],
        inputs.signature_offsets,
        inputs.signature_words,
        inputs.levels,
        hash_offsets,
        hashes,
        has_hashes,
        config.params,
    )


def _found(
    catalog: Catalog,
    inputs: ColumnInputs,
    config: ManyConfig,
    changed: np.ndarray | None,
    driver_state_bytes: int,
    driver_max_pairs: int,
) -> tuple[pa.Table | DataFrame, tuple[int, int, int], list[DataFrame]]:
    """The candidates left after the cheap checks (``_FOUND`` rows, the count rows dropped), the counts,
    and what the executors keep for them (to release once the INDs are written). Where the step runs is
    decided here, once, by the candidates' number: a few changed columns are tested on the driver
    (``proposer.propose_changed``: one pass over the signatures, where transposing them into the matrix
    costs more), while their pairs with every column are at most ``driver_max_pairs``; otherwise the
    matrix proposes in tasks, and the candidates come to the driver only when the step may run there
    (``driver_state_bytes`` above 0) and they are at most ``driver_max_pairs`` (the tasks' tally, known
    before anything is collected); else they stay in the executors."""
    if changed is not None and not changed.any():  # nothing changed: every pair's answer is kept
        empty = _FOUND.empty_table()
        return (empty if driver_state_bytes > 0 else arrow_frame(catalog.spark, empty)), (0, 0, 0), []
    # the changed columns' pairs with every column, each way: what the driver would hold at most
    changed_pairs = 0 if changed is None else 2 * int(changed.sum()) * len(inputs.column_names)
    if (
        driver_state_bytes > 0
        and changed is not None
        and changed.sum() <= DRIVER_PROPOSALS
        and changed_pairs <= driver_max_pairs
    ):
        n_columns = len(inputs.column_names)
        filtered_cols, filtered_refs = column_filters(inputs.stats, config.filters, n_columns)
        signatures = inputs.base_signatures(config.params)
        proposed = propose_changed(signatures, changed, filtered_cols, filtered_refs, inputs.set_sizes)
        found = pa.Table.from_batches([_checked(inputs, config, proposed)])
        counts = tuple(int(pc.sum(found[name]).as_py() or 0) for name in _COUNTS)
        return found.filter(pc.greater_equal(found["dep"], 0)), counts, []
    spark = catalog.spark
    n_tasks, body = _candidate_tasks(inputs, config, changed, 2 * default_parallelism(spark))
    found = spark.range(0, n_tasks, 1, n_tasks).mapInArrow(body, from_arrow_schema(_FOUND)).persist()
    try:
        is_candidate = F.col("dep") >= 0
        tallied = found.agg(*(F.sum(c) for c in _COUNTS), F.sum(is_candidate.cast("long"))).first()
        counts = tuple(int(value or 0) for value in tallied[: len(_COUNTS)])
        candidates = found.where(is_candidate)
        if driver_state_bytes > 0 and int(tallied[-1] or 0) <= driver_max_pairs:
            collected = candidates.toArrow()  # at most ``driver_max_pairs`` rows, counted above
            found.unpersist()
            return collected, counts, []
        return candidates, counts, [found]
    except BaseException:
        found.unpersist()
        raise


def _validate_stored(
    catalog: Catalog, inputs: ColumnInputs, candidates: np.ndarray, driver_state_bytes: int
) -> np.ndarray:
    """Alg. 7 over the stored value sets: the dependent value hashes anti-joined with the referenced ones;
    none left over means valid. In Arrow on the driver where the value sets of the candidates' tables are
    at most ``driver_state_bytes`` in all (a Spark anti-join costs a small lake's run a dozen jobs for a
    few thousand hashes), else by Spark."""
    if not len(candidates):
        return np.zeros(0, dtype=bool)
    ids = _ids(inputs, np.unique(candidates))
    pairs = pa.table({"dep": candidates[:, 0], "ref": candidates[:, 1]})
    tables = sorted(set(ids["table_name"].to_pylist()))
    on_driver = catalog.reads_on_driver(ColumnValues.state_table(), tables, driver_state_bytes)
    log.info(
        "Many: %d candidates validated against the value sets of %d tables %s",
        len(candidates),
        len(tables),
        "on the driver" if on_driver else "by Spark",
    )
    if on_driver:
        invalid = _invalid_on_driver(catalog, ids, pairs)
    else:
        # a subset of the candidates, which this path holds only up to ``scan.driver_max_pairs``
        invalid = _invalid_in_spark(catalog, ids, arrow_frame(catalog.spark, pairs)).toArrow()
    n = max(int(candidates.max()) + 1, 1)
    invalid_keys = invalid["dep"].to_numpy() * n + invalid["ref"].to_numpy()
    return ~np.isin(candidates[:, 0] * n + candidates[:, 1], invalid_keys)


def _ids(inputs: ColumnInputs, columns: np.ndarray) -> pa.Table:
    """``columns`` (positions in ``inputs``) with their table and column names: one row per column."""
    at = pa.array(columns, pa.int64())
    return pa.table(
        {
            "table_name": inputs.table_names.take(at),
            "column_name": inputs.column_names.take(at),
            "column_id": at,
        }
    )


def _invalid_on_driver(catalog: Catalog, ids: pa.Table, pairs: pa.Table) -> pa.Table:
    """The pairs (``dep``, ``ref``) of ``pairs`` with a dependent value hash missing from the referenced
    column, from the value sets of the columns ``ids`` read on the driver."""
    stored = catalog.read_small(
        ColumnValues.state_table(),
        sorted(set(ids["table_name"].to_pylist())),
        ["table_name", "column_name", "hash"],
    )
    values = stored.join(ids, ["table_name", "column_name"]).select(["column_id", "hash"])
    dependent = values.rename_columns(["dep", "hash"]).join(pairs, "dep")
    referenced = values.rename_columns(["ref", "hash"])
    missing = dependent.join(referenced, ["ref", "hash"], join_type="left anti")
    return missing.group_by(["dep", "ref"]).aggregate([])


def _invalid_in_spark(catalog: Catalog, ids_table: pa.Table, pairs: DataFrame) -> DataFrame:
    """``_invalid_on_driver``'s pairs, from an anti-join in the executors: ``pairs`` (dep, ref) a
    DataFrame, ``ids_table`` every column of them (one row per column)."""
    spark = catalog.spark
    ids = arrow_frame(spark, ids_table)
    values = (
        # by table name first: the scan's own filter is what prunes the value sets' partitions
        catalog.read(ColumnValues.state_table(), ids_table["table_name"].to_pylist())
        .join(F.broadcast(ids), ["table_name", "column_name"])
        .select("column_id", "hash")
    )
    dependent = values.withColumnRenamed("column_id", "dep").join(pairs.select("dep", "ref"), "dep")
    # only the referenced columns' values take part in the shuffle of the anti-join
    referencing = pairs.select(F.col("ref").alias("column_id")).distinct()
    referenced = values.join(referencing, "column_id", "left_semi").withColumnRenamed("column_id", "ref")
    return dependent.join(referenced, ["ref", "hash"], "left_anti").select("dep", "ref").distinct()


def _result(inputs: ColumnInputs, deps: np.ndarray, refs: np.ndarray) -> pa.Table:
    dep_distinct, ref_distinct = inputs.set_sizes[deps], inputs.set_sizes[refs]
    tables_of, names_of = inputs.table_names, inputs.column_names
    return pa.table(
        {
            "dep_table": tables_of.take(pa.array(deps, pa.int64())),
            "dep_column": names_of.take(pa.array(deps, pa.int64())),
            "ref_table": tables_of.take(pa.array(refs, pa.int64())),
            "ref_column": names_of.take(pa.array(refs, pa.int64())),
            "dep_distinct": pa.array(dep_distinct, pa.int64()),
            "ref_distinct": pa.array(ref_distinct, pa.int64()),
            "coverage": pa.array(coverage(dep_distinct, ref_distinct), pa.float64()),
        }
    )


# The tasks' counts (``_FOUND``'s rows with dep = -1; 0 in the candidates' rows): proposed, left after
# the cheap checks, and validated on kept hashes.
_COUNTS = ("proposed", "possible", "on_hashes")


def _on_driver(
    catalog: Catalog, inputs: ColumnInputs, config: ManyConfig, found: pa.Table, driver_state_bytes: int
) -> tuple[pa.Table, int]:
    """The valid INDs among the candidates ``found`` (``_FOUND`` rows), in this process: the rows of
    ``RESULTS`` and the number of valid INDs before the coverage filter."""
    candidates = np.column_stack([found["dep"].to_numpy(), found["ref"].to_numpy()]).astype(np.int64)
    valid = found["checked"].to_numpy(zero_copy_only=False).copy()
    unchecked = ~valid
    valid[unchecked] = _validate_stored(catalog, inputs, candidates[unchecked], driver_state_bytes)
    deps, refs = candidates[valid, 0], candidates[valid, 1]
    n_valid = len(deps)
    if config.filters.low_coverage:
        dropped = low_coverage(inputs.set_sizes[deps], inputs.set_sizes[refs], config.filters.tau)
        deps, refs = deps[~dropped], refs[~dropped]
    return _result(inputs, deps, refs), n_valid


def _in_executors(
    catalog: Catalog, inputs: ColumnInputs, config: ManyConfig, candidates: DataFrame
) -> tuple[DataFrame, int, DataFrame]:
    """``_on_driver``'s rows as a DataFrame the executors hold: the ``candidates`` not validated on kept
    hashes validated by an anti-join over the value sets, the INDs named by a broadcast join of one row
    per column; the number of valid INDs before the coverage filter, and the valid pairs, persisted (the
    caller releases them once the rows are written). Only counts reach the driver."""
    spark = catalog.spark
    unchecked = candidates.where(~F.col("checked")).select("dep", "ref")
    # the columns the unchecked candidates read: at most one row per column of the lake
    involved = unchecked.select(F.col("dep").alias("c")).union(unchecked.select("ref")).distinct().toArrow()
    invalid = _invalid_in_spark(catalog, _ids(inputs, involved["c"].to_numpy()), unchecked)
    valid = candidates.select("dep", "ref").join(invalid, ["dep", "ref"], "left_anti").persist()
    try:
        n_valid = valid.count()
        columns = F.broadcast(
            arrow_frame(
                spark,
                _ids(inputs, np.arange(len(inputs.column_names))).append_column(
                    "set_size", pa.array(inputs.set_sizes, pa.int64())
                ),
            )
        )
        rows = (
            valid.join(columns.toDF("dep_table", "dep_column", "dep", "dep_distinct"), "dep")
            .join(columns.toDF("ref_table", "ref_column", "ref", "ref_distinct"), "ref")
            .withColumn(
                "coverage",
                F.when(F.col("ref_distinct") > 0, F.col("dep_distinct") / F.col("ref_distinct")).otherwise(
                    1.0
                ),
            )
        )
        if config.filters.low_coverage:
            rows = rows.where(F.col("coverage") >= config.filters.tau)
        return rows.select(*PAIR, "dep_distinct", "ref_distinct", "coverage"), n_valid, valid
    except BaseException:
        valid.unpersist()
        raise


def discover_inclusion_dependencies(
    catalog: Catalog,
    config: ManyConfig,
    incremental: bool = True,
    driver_state_bytes: int = 0,
    driver_max_pairs: int = ScanConfig.driver_max_pairs,
) -> ManyRun:
    """All valid unary INDs among the lake's columns (Alg. 8-11) from the value sets: inputs, candidates
    from the matrix, exact validation, the coverage filter. ``incremental``: reuse the kept
    inputs and the last result for what did not change, where they were computed with these settings.

    Where it runs, decided once by the candidates' number (``_found``): at most ``driver_max_pairs`` and
    ``driver_state_bytes`` above 0, in this process (the validation's reads of value sets there bounded by
    ``driver_state_bytes``); otherwise the INDs are validated and written by the executors, and the driver
    holds one row per column (``ManyRun.result`` a DataFrame): a lake of small real tables has millions
    of INDs. A batch whose stored INDs are more than ``driver_max_pairs`` runs in the executors too: the
    driver's path holds the stored INDs it keeps."""
    stage_seconds = {}
    started = time.perf_counter()
    columns = lake_columns(catalog)
    table_names = columns.table_names
    reused = (
        _kept_inputs(catalog, settings_of(inds=config), table_names, columns.column_names)
        if incremental
        else None
    )
    kept, changed_tables = (None, None) if reused is None else reused
    if changed_tables is not None and catalog.count_rows(RESULTS) > driver_max_pairs:
        # the driver's path would hold the stored INDs it keeps beside the new ones: a dense lake's
        # millions stay in the executors, which replace only the changed tables' INDs
        driver_state_bytes = 0
    inputs = _inputs(catalog, config, columns, kept, changed_tables or set())
    changed = None if changed_tables is None else of_tables(table_names, changed_tables)
    stage_seconds["signatures"] = time.perf_counter() - started
    n_changed = len(table_names) if changed is None else int(changed.sum())
    describe_jobs(
        catalog.spark,
        f"Many: candidates among {len(table_names)} columns"
        + ("" if changed is None else f" with one of {n_changed} changed columns"),
    )
    candidates, counts, persisted = _found(
        catalog, inputs, config, changed, driver_state_bytes, driver_max_pairs
    )
    stage_seconds["candidates"] = time.perf_counter() - started - stage_seconds["signatures"]
    on_driver = isinstance(candidates, pa.Table)
    if on_driver:
        found, n_valid = _on_driver(catalog, inputs, config, candidates, driver_state_bytes)
    else:
        try:
            found, n_valid, valid = _in_executors(catalog, inputs, config, candidates)
        except BaseException:
            for frame in persisted:
                frame.unpersist()
            raise
        persisted.append(valid)
    stage_seconds["validation"] = time.perf_counter() - started - sum(stage_seconds.values())
    last = None
    if on_driver and changed_tables is not None:
        last = catalog.read_small(RESULTS)
        unchanged = ~touching(last, RESULTS, changed_tables)
        kept_rows = last.select(found.column_names).filter(pa.array(unchanged)).cast(found.schema)
        found = pa.concat_tables([kept_rows, found])
    result = found.sort_by([(name, "ascending") for name in PAIR]) if on_driver else found
    return ManyRun(
        result,
        inputs,
        changed_tables,
        kept,
        len(pc.unique(table_names)),
        counts[0],
        counts[1],
        counts[2],
        n_valid,
        stage_seconds,
        last,
        on_driver,
        persisted,
    )


def run_discovery(catalog: Catalog, lake: Location, config: Config, committed: int | None) -> int:
    """The discovery step ``inclusion_dependencies`` (``lakemeta.registry``): all valid unary INDs among
    the lake's committed tables into ``inclusion_dependencies`` (replaced whole, each IND's first run
    kept and the changes recorded: ``lakemeta.catalog.relationships``), computed again only for the
    columns of tables changed since the last discovery. Returns the number of INDs kept."""
    many = many_config(config.inds)
    reflects = reflecting(committed, settings_of(inds=many), config)
    run = discover_inclusion_dependencies(
        catalog,
        many,
        driver_state_bytes=config.scan.driver_state_bytes,
        driver_max_pairs=config.scan.driver_max_pairs,
    )
    n_kept = 0
    if run.changed_tables != set():
        # the inputs first: a result is reused only where the kept inputs were computed with its settings
        keep_inputs(catalog, run.inputs, run.changed_tables, run.kept, reflects)
        describe_jobs(catalog.spark, f"Many: {run.n_valid} INDs compared with the stored ones and written")
        try:
            n_kept = replace_relationships(
                catalog,
                RESULTS,
                run.result,
                config.discovery_settings(),
                committed,
                reflects=reflects,
                stored=run.last_result,
                changed_tables=run.changed_tables,
            )
        finally:
            run.release()
    else:  # nothing changed since the kept inputs and result: both stand as they are, reflecting this run
        catalog.record(RESULTS, reflects)
    log.info(
        "inclusion dependencies (Many, m=%d k=%d p=%d, %s filters): %d tables (%d changed), %d columns, "
        "%d candidates, %d validated (%d on kept value hashes), %d valid, %d written (%s; "
        "signatures %.1f s, candidates %.1f s, validation %.1f s)",
        config.inds.m,
        config.inds.k,
        config.inds.p,
        config.inds.filters,
        run.n_tables,
        run.n_changed_tables,
        len(run.inputs.column_names),
        run.n_candidates,
        run.n_checked,
        run.n_validated_on_driver,
        run.n_valid,
        n_kept,
        "on the driver" if run.on_driver else "in the executors",
        *run.stage_seconds.values(),
    )
    return n_kept
