"""Foreign-key candidates over the lake with Spark: the catalog's ``fk_candidates`` (Zhang et al. Alg. B.1
with BML pruning, ranked by Quantile-EMD).

1. Keys are found, not assumed (``keys``): unique column combinations from the agree-set state, unique
   columns of larger tables checked exactly, and the keys declared in the configuration.
2. Phase 1 (Alg. B.1, first pass; BML §5.3): ``inclusion_estimates`` (BML over the HLL state) gives
   sigma(F, C) for every column F and column C of another table whose types can hold the same values. A
   single-column candidate (F, P) is a pair whose estimate plus its error bound reaches θ (a dirty FK must
   not be lost to estimator noise; the exact check below decides); S(C) is the set of such columns for
   each column C of a multi-column key.
3. Phase 2: for a key P = (C1..Cn), every F = (C'1..C'n) in S(C1) x ... x S(Cn) whose columns are distinct and
   in one table (Zhang §4). A second pass reads only the columns involved, builds the tuple sketches of F
   and P (HLL of ``hash_tuples``) and prunes BML's sigma(F, P) plus its error bound at θ again. The
   sketches are built from every row's tuple hash, combined from the columns' value hashes: registers
   depend on the set of hashes only, so nothing is deduplicated for a candidate this prunes.
4. Randomness (§3): one Spark task per group of keys reads each key's and its candidates' columns with
   delta-rs at their committed versions, each read and hashed once (``columns``; a table above
   ``scan.max_task_rows`` rows by groups of its files, keeping hashes), and computes EMD_n on
   the key's quantile grid, built once per key (``randomness.KeyGrid``). The values being in hand there, a
   candidate whose exact inclusion |F ∩ P| / |F| is below θ is dropped first: BML's estimate is loose
   where |F| is far below |P| (a ten-value column "included" in a key of thousands), and such a pair is
   no FK however it ranks. The candidate's other signals are taken there too (``signals``). Distinct
   tuples and their inclusion are found on the tuple hashes (sorted), not by grouping strings.
5. Of each referenced table's keys with candidates left, only the smallest keep theirs (``keys``).
6. Tables that are copies, samples or extracts of one another go to ``table_overlaps`` (``overlaps``,
   from the inclusion estimates), and the candidates are chosen per dependent within each schema graph
   (``choice``); Zhang's global answer set (``ranking.answer_set``) is the baseline the benchmark keeps.

Phase 1 relates columns of different tables (``inclusion_estimates``); a one-column key's own table's
other columns are candidates too (self-references, an employee's manager), checked exactly.
What a batch changes: a candidate's outcome (phase 2, the exact inclusion, EMD_n and the signals) depends
on its key's table and its dependent's table alone. Each run keeps every proposed candidate's outcome in
``state/fk_scored``; the next, with the same settings, scores only the candidates with a table changed
since (or not proposed before, or proposed with another phase-1 estimate) and keeps the others'. Keys,
the smallest-key rule, the overlaps and the choice, which relate candidates across tables, run over all of
them, so the result equals a run from scratch. The exact key checks of tables without agree-sets
(``keys``) still read those tables every run.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import from_arrow_schema

from lakemeta.catalog import Catalog
from lakemeta.catalog.discovery_runs import changed_since
from lakemeta.catalog.relationships import replace_relationships
from lakemeta.catalog.store import arrow_schema
from lakemeta.config import Config, FkConfig, SketchConfig, settings_of
from lakemeta.fks.choice import choose
from lakemeta.fks.columns import ColumnCache
from lakemeta.fks.keys import KEY_CHECKS, Key, find_keys
from lakemeta.fks.overlaps import find_overlaps
from lakemeta.fks.randomness import KeyGrid
from lakemeta.fks.signals import ColumnTypes, common_divisor, integer_key, span, step
from lakemeta.lake.batches import committed_bytes
from lakemeta.lake.tables import table_path
from lakemeta.sketches.bml import estimate_inclusion
from lakemeta.sketches.hll import counter_delta, registers
from lakemeta.spark.jobs import describe_jobs
from lakemeta.spark.placement import collect_balanced, reads_tables_on_driver
from lakemeta.storage import Location
from lakemeta.values.hashes import shared_count

log = logging.getLogger(__name__)

RESULTS = "fk_candidates"
OVERLAPS = "table_overlaps"
SCORED_STATE = "state/fk_scored"
_STRINGS = pa.list_(pa.string())
_CANDIDATE = pa.struct(
    [
        ("fk_table", pa.string()),
        ("fk_path", pa.string()),
        ("fk_version", pa.int64()),
        ("fk_rows", pa.int64()),
        ("fk_columns", _STRINGS),
        ("estimate", pa.float64()),
        ("error", pa.float64()),
    ]
)
_DESCRIPTOR_SCHEMA = from_arrow_schema(
    pa.schema(
        [
            ("pk_table", pa.string()),
            ("pk_path", pa.string()),
            ("pk_version", pa.int64()),
            ("pk_rows", pa.int64()),
            ("pk_columns", _STRINGS),
            ("pk_source", pa.string()),
            ("candidates", pa.list_(_CANDIDATE)),
        ]
    )
)
_ROWS = pa.schema(
    [
        ("fk_table", pa.string()),
        ("fk_columns", pa.list_(pa.string())),
        ("pk_table", pa.string()),
        ("pk_columns", pa.list_(pa.string())),
        ("pk_source", pa.string()),
        ("inclusion_estimate", pa.float64()),
        ("inclusion_error", pa.float64()),
        ("emd", pa.float64()),
        ("inclusion", pa.float64()),
        ("coverage", pa.float64()),
        ("fk_distinct", pa.int64()),
        ("pk_distinct", pa.int64()),
        ("span_start", pa.float64()),
        ("span_end", pa.float64()),
        ("pk_is_integer", pa.bool_()),
        ("pk_is_range", pa.bool_()),
        ("fk_step", pa.int64()),
    ]
)
# What the tasks return for every candidate: its scored row, or a pruned one (passed false, no signals),
# with the phase-1 estimate it was proposed with; kept as ``SCORED_STATE`` for the next run.
_OUTCOMES = pa.schema(
    [*_ROWS, ("proposed_estimate", pa.float64()), ("proposed_error", pa.float64()), ("passed", pa.bool_())]
)
_OUTCOMES_SPARK = from_arrow_schema(_OUTCOMES)  # the same schema for mapInArrow
# The scored candidates with the signals added on the driver (``with_key_signals``): what ``choice`` reads.
SCORED = _ROWS.append(pa.field("fk_is_key", pa.bool_())).append(pa.field("pk_ordinal", pa.int32()))


@dataclass(frozen=True)
class Candidate:
    """A candidate F for a key P; the estimate is phase 1's for one column, None until phase 2 for more."""

    table: str
    columns: tuple[str, ...]
    estimate: float | None
    error: float | None


class CandidateIndex:
    """S(C) for every column C: the columns F of other tables whose phase-1 estimate sigma(F, C) may reach θ
    (the estimate plus its error bound reaches it, so that a dirty FK, included at 0.95 in a large key,
    is not lost to estimator noise: the exact check in the task decides), the other columns of C's own
    table that can hold its values (self-references, Zhang's phase 2 allows the key's table), and from
    them the candidates of a key (Alg. B.1, Zhang §4)."""

    def __init__(self, estimates: pa.Table, types: ColumnTypes, threshold: float) -> None:
        # an undetermined pair (no estimate: its bound is too wide) may reach θ
        reach = pc.fill_null(pc.add(estimates["estimate"], estimates["error_bound"]), 1.0)
        self._included_in: dict[tuple[str, str], list[dict]] = {}
        for row in estimates.filter(pc.greater_equal(reach, threshold)).to_pylist():
            self._included_in.setdefault((row["ref_table"], row["ref_column"]), []).append(row)
        self._types = types

    def _same_table(self, table: str, column: str) -> list[Candidate]:
        """The columns of the key's own table that could reference it, those of the key's type family (a
        manager's id is an id, not text that happens to hold digits): no BML estimate (BML relates columns
        of different tables), the exact check decides."""
        family = self._types.family.get((table, column))
        if family is None:
            return []
        return [
            Candidate(table, (other,), None, None)
            for other in sorted(self._types.columns.get(table, []))
            if other != column and self._types.family[(table, other)] == family
        ]

    def _several(self, key: Key) -> Iterator[Candidate]:
        """Phase 2's candidates of a key of several columns, before their tuple sketches, one by one: every
        F in S(C1) x ... x S(Cn) whose columns are distinct and in one table."""
        sets = [self._included_in.get((key.table, column), []) for column in key.columns]
        for table in sorted(set.intersection(*({r["dep_table"] for r in s} for s in sets))):
            per_column = [[r["dep_column"] for r in s if r["dep_table"] == table] for s in sets]
            for columns in itertools.product(*per_column):
                if len(set(columns)) == len(columns):
                    yield Candidate(table, columns, None, None)

    def referenced(self, key: Key) -> bool:
        """Whether another table holds candidates of the key, stopping at the first (the key checks ask
        this of every column combination of a wide table, where listing the products would cost millions
        of tuples). Keys are looked for where other tables reference them; once found, their own table's
        columns are candidates too (``candidates``), but these alone do not make a key worth checking:
        nearly every column has a sibling of a compatible type."""
        if len(key.columns) == 1:
            return bool(self._included_in.get((key.table, key.columns[0])))
        return next(self._several(key), None) is not None

    def candidates(self, key: Key) -> list[Candidate]:
        """Phase 1's candidates of a one-column key, self-references included; phase 2's, before their
        tuple sketches, of a larger one: every F in S(C1) x ... x S(Cn) whose columns are distinct and in
        one table."""
        if len(key.columns) == 1:
            return [
                Candidate(r["dep_table"], (r["dep_column"],), r["estimate"], r["error_bound"])
                for r in self._included_in.get((key.table, key.columns[0]), [])
            ] + self._same_table(key.table, key.columns[0])
        return list(self._several(key))


def _sketch(tuple_hashes: np.ndarray, valid: np.ndarray, sketches: SketchConfig) -> np.ndarray:
    """The HLL registers of a column tuple's values (BML §2.2); duplicates and row order do not matter."""
    return registers(counter_delta(tuple_hashes[valid], p=sketches.precision))


def tuple_inclusion(
    dependent: np.ndarray, referenced: np.ndarray, sketches: SketchConfig
) -> tuple[float, float]:
    """BML's sigma(F, P) and its error bound from the HLL registers of two tuple sets (phase 2)."""
    estimates = estimate_inclusion(
        np.stack([dependent, referenced]),
        np.array([0]),
        np.array([1]),
        confidence=sketches.confidence,
        eps=sketches.tolerance,
    )
    return float(estimates.estimate[0]), float(estimates.error_bound[0])


def _candidate_rows(
    config: FkConfig, sketches: SketchConfig, max_task_rows: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Per key: phase 2's tuple-sketch estimate of each candidate of several columns (from every row's tuple
    hash: HLL registers depend on the set of hashes only, so no distinct tuples are formed for candidates
    it prunes), the exact inclusion check, then EMD_n on the distinct tuples."""

    def scored(key: dict, snapshots: ColumnCache) -> Iterator[dict]:
        """The outcome of each of one key's candidates: its row with its signals (``signals``) where it
        passes phase 2 and the exact inclusion check, a pruned row (no signals) where not."""
        pk = (key["pk_path"], key["pk_version"], key["pk_columns"])
        key_hashes = snapshots.distinct_hashes(*pk)
        several = len(key["pk_columns"]) > 1
        key_sketch = _sketch(*snapshots.tuple_hashes(*pk), sketches) if several and len(key_hashes) else None
        grid: KeyGrid | None = None  # built at the key's first candidate that passes
        for candidate in key["candidates"]:
            fk = (candidate["fk_path"], candidate["fk_version"], candidate["fk_columns"])
            estimate, error = candidate["estimate"], candidate["error"]
            pruned = {
                "fk_table": candidate["fk_table"],
                "fk_columns": candidate["fk_columns"],
                "pk_table": key["pk_table"],
                "pk_columns": key["pk_columns"],
                "pk_source": key["pk_source"],
                "proposed_estimate": estimate,
                "proposed_error": error,
                "passed": False,
            }
            if not len(key_hashes):
                yield pruned  # a key without a value has no candidate
                continue
            if several:
                fk_hashes, fk_valid = snapshots.tuple_hashes(*fk)
                if not fk_valid.any():
                    yield pruned
                    continue
                fk_sketch = _sketch(fk_hashes, fk_valid, sketches)
                estimate, error = tuple_inclusion(fk_sketch, key_sketch, sketches)
                if estimate + error < config.inclusion_threshold:
                    yield pruned  # Zhang §4: pruned on its tuples' sketches
                    continue
            fk_distinct = snapshots.distinct_hashes(*fk)
            shared = shared_count(fk_distinct, key_hashes)
            if not len(fk_distinct) or shared < config.inclusion_threshold * len(fk_distinct):
                yield pruned  # not included, though its estimates let it through
                continue
            if grid is None:
                key_tuples = snapshots.distinct_tuples(*pk)
                grid = KeyGrid(key_tuples, config.grid_quantiles(len(key_tuples)))
                pk_is_integer, pk_is_range = (False, False) if several else integer_key(key_tuples[0])
                key_divisor = common_divisor(key_tuples[0]) if pk_is_integer else None
            fk_tuples = snapshots.distinct_tuples(*fk)
            cells = grid.cells(fk_tuples)
            start, end = (None, None) if several else span(cells, grid.shape[0])
            yield {
                **pruned,
                "passed": True,
                "inclusion_estimate": estimate,
                "inclusion_error": error,
                "emd": grid.emd_n_of_cells(cells),
                "inclusion": shared / len(fk_distinct),
                "coverage": shared / len(key_hashes),
                "fk_distinct": len(fk_distinct),
                "pk_distinct": len(key_hashes),
                "span_start": start,
                "span_end": end,
                "pk_is_integer": pk_is_integer,
                "pk_is_range": pk_is_range,
                "fk_step": None if several else step(fk_tuples[0], key_divisor),
            }

    def run(descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        snapshots = ColumnCache(max_task_rows)  # the columns this task reads, by table snapshot
        for batch in descriptors:
            keys = batch.to_pylist()
            last_use: dict[tuple[str, int, str], int] = {}  # each column's last key in the batch
            for i, key in enumerate(keys):
                for path, version, rows, columns in _snapshot_columns(key):
                    snapshots.need(path, version, columns, rows)
                    last_use.update({(path, version, column): i for column in columns})
            released_after: dict[int, list[tuple[str, int, str]]] = {}
            for where, i in last_use.items():
                released_after.setdefault(i, []).append(where)
            rows = []
            for i, key in enumerate(keys):
                rows += scored(key, snapshots)
                for path, version, column in released_after.get(i, []):
                    snapshots.release(path, version, [column])
            yield pa.RecordBatch.from_pylist(rows, schema=_OUTCOMES)

    return run


def _snapshot_columns(key: dict) -> Iterator[tuple[str, int, int, list[str]]]:
    """The snapshots (path, version, rows) and columns one key descriptor reads: the key's, then each
    candidate's."""
    yield key["pk_path"], key["pk_version"], key["pk_rows"], key["pk_columns"]
    for candidate in key["candidates"]:
        yield candidate["fk_path"], candidate["fk_version"], candidate["fk_rows"], candidate["fk_columns"]


def smallest_keys_only(scored: pa.Table) -> pa.Table:
    """The candidates of each referenced table's smallest keys among those with candidates left after the
    exact inclusion check (``keys``: a table's primary key is among its smallest keys); declared keys keep
    theirs whatever their size."""
    sizes = pc.list_value_length(scored["pk_columns"]).to_numpy(zero_copy_only=False)
    tables = scored["pk_table"].to_pylist()
    declared = np.array([source == "declared" for source in scored["pk_source"].to_pylist()], dtype=bool)
    smallest: dict[str, int] = {}
    for table, size, is_declared in zip(tables, sizes, declared, strict=True):
        if not is_declared:
            smallest[table] = min(size, smallest.get(table, size))
    of_smallest = [size == smallest.get(table) for table, size in zip(tables, sizes, strict=True)]
    keep = declared | np.array(of_smallest, dtype=bool)
    return scored.filter(pa.array(keep, pa.bool_()))


def with_key_signals(scored: pa.Table, keys: list[Key], types: ColumnTypes) -> pa.Table:
    """``scored`` with ``fk_is_key`` (the dependent is a key of its own table) and ``pk_ordinal`` (the
    key's first column's position in its table; keys come first by convention) (``signals``)."""
    known = {(key.table, key.columns) for key in keys}
    rows = scored.select(["fk_table", "fk_columns", "pk_table", "pk_columns"]).to_pylist()
    fk_is_key = [(r["fk_table"], tuple(r["fk_columns"])) in known for r in rows]
    pk_ordinal = [min(types.ordinal.get((r["pk_table"], c), 0) for c in r["pk_columns"]) for r in rows]
    return scored.append_column("fk_is_key", pa.array(fk_is_key, pa.bool_())).append_column(
        "pk_ordinal", pa.array(pk_ordinal, pa.int32())
    )


Outcome = tuple[str, tuple[str, ...], str, str, tuple[str, ...], float | None, float | None]


def _outcome(key: Key, candidate: Candidate) -> Outcome:
    return (
        key.table,
        key.columns,
        key.source,
        candidate.table,
        candidate.columns,
        candidate.estimate,
        candidate.error,
    )


def _kept_outcomes(catalog: Catalog, changed: set[str] | None) -> dict[Outcome, dict]:
    """The stored outcomes of candidates whose key's table and dependent's table did not change, by key,
    candidate and the phase-1 estimate they were proposed with (empty when everything is computed)."""
    if changed is None:
        return {}
    kept = {}
    for row in catalog.read_small(SCORED_STATE).to_pylist():
        if row["pk_table"] in changed or row["fk_table"] in changed:
            continue
        outcome = (
            row["pk_table"],
            tuple(row["pk_columns"]),
            row["pk_source"],
            row["fk_table"],
            tuple(row["fk_columns"]),
            row["proposed_estimate"],
            row["proposed_error"],
        )
        kept[outcome] = row
    return kept


def _in_order(outcomes: pa.Table) -> pa.Table:
    """The outcomes by key and candidate, whatever task or run produced them."""
    keyed = outcomes.append_column("_pk", pc.binary_join(outcomes["pk_columns"], "\x1f")).append_column(
        "_fk", pc.binary_join(outcomes["fk_columns"], "\x1f")
    )
    order = [(name, "ascending") for name in ("pk_table", "_pk", "pk_source", "fk_table", "_fk")]
    return keyed.sort_by(order).drop_columns(["_pk", "_fk"])


@dataclass(frozen=True)
class FkRun:
    """What one run of the FK step found: the ranked candidates (``RESULTS`` without ``first_run``), the
    overlapping tables, every proposed candidate's outcome (``SCORED_STATE``), the tables whose
    candidates were computed again (None: all), and counts for the log."""

    ranked: pa.Table
    overlaps: pa.Table
    outcomes: pa.Table
    key_checks: pa.Table  # the exact key checks asked (``keys.KEY_CHECKS``)
    changed_tables: set[str] | None
    n_keys: int
    n_several: int
    n_proposed: int
    n_computed: int


def discover_fk_candidates(
    catalog: Catalog, lake: Location, config: Config, incremental: bool = True
) -> FkRun:
    """Find, prune, score and rank the FK candidates. ``incremental``: a candidate whose key's table and
    dependent's table did not change since the last run (with these settings) keeps its outcome, proposed
    with the same phase-1 estimate; the others are scored in the executors. The choice (``choice``) and
    the overlaps, which relate candidates across tables, run over all of them. A table above
    ``scan.max_task_rows`` rows is read by groups of its files (``columns.ColumnCache``)."""
    fks, sketches, max_task_rows = config.fks, config.sketches, config.scan.max_task_rows
    settings = settings_of(fks=fks, sketches=sketches)  # what an outcome depends on
    changed = changed_since(catalog, [SCORED_STATE], settings) if incremental else None
    types = ColumnTypes(catalog.read_small("columns"))
    estimates = catalog.read_small("inclusion_estimates")
    index = CandidateIndex(estimates, types, fks.inclusion_threshold)

    kept_checks = catalog.read_small(KEY_CHECKS) if incremental else None
    keys, key_checks = find_keys(
        catalog,
        lake,
        fks,
        sketches.precision,
        index.referenced,
        max_task_rows,
        kept_checks,
        config.scan.driver_state_bytes,
    )
    proposed = {key: found for key in keys if (found := index.candidates(key))}
    stored = _kept_outcomes(catalog, changed)
    reused, to_score = [], {}
    for key, candidates in proposed.items():
        for candidate in candidates:
            outcome = stored.get(_outcome(key, candidate))
            if outcome is None:
                to_score.setdefault(key, []).append(candidate)
            else:
                reused.append(outcome)
    snapshots = {
        row["table_name"]: (row["last_version"], row["n_rows"] or 0)
        for row in catalog.read_small("tables").select(["table_name", "last_version", "n_rows"]).to_pylist()
    }

    def located(table: str) -> tuple[str, int, int]:
        """The table's path, committed version and rows."""
        return str(table_path(lake, table)), *snapshots[table]

    rows = [
        (
            len(candidates),
            (
                key.table,
                *located(key.table),
                list(key.columns),
                key.source,
                [(c.table, *located(c.table), list(c.columns), c.estimate, c.error) for c in candidates],
            ),
        )
        for key, candidates in to_score.items()
    ]
    n_computed = sum(weight for weight, _ in rows)
    spark = catalog.spark
    describe_jobs(spark, f"FK candidates: EMD of {n_computed} candidates of {len(rows)} keys")
    # Where the tables read are small, the driver scores them: no Python worker starts for a small run.
    read = {key.table for key in to_score} | {c.table for found in to_score.values() for c in found}
    computed = (
        collect_balanced(
            spark,
            rows,
            _DESCRIPTOR_SCHEMA,
            _candidate_rows(fks, sketches, max_task_rows),
            _OUTCOMES_SPARK,
            on_driver=reads_tables_on_driver(committed_bytes(catalog, read), config.scan.driver_state_bytes),
        ).cast(_OUTCOMES)
        if rows
        else _OUTCOMES.empty_table()
    )
    outcomes = _in_order(pa.concat_tables([pa.Table.from_pylist(reused, schema=_OUTCOMES), computed]))
    scored = outcomes.filter(outcomes["passed"]).select(_ROWS.names).cast(_ROWS)
    kept = with_key_signals(smallest_keys_only(scored), keys, types)
    included = estimates.filter(pc.greater_equal(estimates["estimate"], fks.inclusion_threshold))
    overlaps = find_overlaps(included, types, kept, fks)
    ranked = choose(kept, overlaps, fks)
    return FkRun(
        ranked,
        overlaps,
        outcomes,
        key_checks,
        changed,
        len(keys),
        sum(len(key.columns) > 1 for key in keys),
        sum(len(candidates) for candidates in proposed.values()),
        n_computed,
    )


def run_step(catalog: Catalog, lake: Location, config: Config, committed: int | None) -> int:
    """The discovery step ``fk_candidates`` (``lakemeta.registry``), after ``inclusion_estimates`` and
    ``keys_and_dependencies`` whose results it reads: the candidates' outcomes kept for the next run
    (``SCORED_STATE``, its commit recording the run and settings it reflects), ``table_overlaps``, and
    ``fk_candidates`` replaced (each accepted FK's first run kept and the changes recorded:
    ``lakemeta.catalog.relationships``); returns the accepted count."""
    reflects = {"run": committed, "settings": settings_of(fks=config.fks, sketches=config.sketches)}
    run = discover_fk_candidates(catalog, lake, config)
    catalog.replace_small(KEY_CHECKS, run.key_checks)
    catalog.replace_small(SCORED_STATE, run.outcomes, reflects=reflects)
    catalog.replace_small(
        OVERLAPS, run.overlaps.select(arrow_schema(OVERLAPS).names).cast(arrow_schema(OVERLAPS))
    )
    written = [name for name in arrow_schema(RESULTS).names if name != "first_run"]
    replace_relationships(
        catalog, RESULTS, run.ranked.select(written), config.discovery_settings(), committed
    )
    n_accepted = int(pc.sum(run.ranked["accepted"]).as_py() or 0)
    log.info(
        "FK candidates: %d keys (%d with several columns), %d candidates reaching theta=%.2f (%d scored, "
        "the others of tables unchanged since the last run kept), %d after phase 2, %d accepted; "
        "%d overlapping table pairs",
        run.n_keys,
        run.n_several,
        run.n_proposed,
        config.fks.inclusion_threshold,
        run.n_computed,
        len(run.ranked),
        n_accepted,
        len(run.overlaps),
    )
    return n_accepted
