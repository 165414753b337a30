"""Foreign-key candidates over the lake with Spark: the catalog's ``fk_candidates`` (Zhang et al. Alg. B.1
with BML pruning, ranked by Quantile-EMD).

1. Keys are found, not assumed (``keys``): unique column combinations from the agree-set state, unique
   columns of larger tables checked exactly, and the keys declared in the configuration.
2. Phase 1 (Alg. B.1, first pass; BML §5.3): ``inclusion_estimates`` (BML over the HLL state) gives
   sigma(F, C) for every column F and column C of another table whose types can hold the same values. A
   single-column candidate (F, P) is a pair whose estimate plus its error bound reaches θ (a dirty FK must
   not be lost to estimator noise; the exact check below decides); S(C) is the set of such columns for
   each column C of a multi-column key.
   Before anything is read, a one-column key that numbers its rows 1..N (``numberings``) proposes no
   candidate from another folder, which the choice could never accept, unless the dependent is a key whose
   table may be a copy of the key's (``candidates.ForeignNumberings``): in a lake of small tables these
   are most of the candidates.
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
What a batch changes: whether a candidate is proposed (its key, its phase-1 estimate, the cut) and its
outcome (phase 2, the exact inclusion, EMD_n and the signals) depend on its key's table and its
dependent's table alone, but for the checked keys of tables without agree-sets, which depend on what
other tables would reference (``keys.rekeyed`` counts such a table as changed). Each run keeps every
proposed candidate's outcome in ``state/fk_scored``; the next, with the same settings and proposal rules
(``PROPOSAL_RULES``), proposes and scores only the candidates with a table changed since and keeps the
others'. Keys, the smallest-key rule, the overlaps and the choice, which relate candidates across tables,
run over all of them, so the result equals a run from scratch. The exact key checks of tables without
agree-sets (``keys``) still read those tables every run.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from lakemeta.agreesets.discover import tracked_tables
from lakemeta.catalog import Catalog
from lakemeta.catalog.freshness import changed_since, reflecting
from lakemeta.catalog.predicates import is_in_sql
from lakemeta.catalog.relationships import replace_relationships
from lakemeta.catalog.store import arrow_schema
from lakemeta.config import Config, settings_of
from lakemeta.fks.candidates import (
    DESCRIPTOR,
    OUTCOMES,
    ROWS,
    SCORED,
    SCORED_STATE,
    CandidateIndex,
    ForeignNumberings,
    scored_candidates,
    smallest_keys_only,
    with_key_signals,
)
from lakemeta.fks.choice import choose
from lakemeta.fks.in_executors import Stages, discover_in_executors, reach_sql
from lakemeta.fks.keys import KEY_CHECKS, Key, find_keys, rekeyed
from lakemeta.fks.numberings import NUMBERED, VALUE_COLUMNS, numbered_columns
from lakemeta.fks.overlaps import find_overlaps
from lakemeta.fks.signals import ColumnTypes
from lakemeta.lake.batches import committed_bytes
from lakemeta.lake.tables import table_path
from lakemeta.spark.placement import collect_balanced, reads_tables_on_driver
from lakemeta.spark.portable import arrow_frame, describe_jobs
from lakemeta.storage import Location
from lakemeta.values.state import ColumnValues

log = logging.getLogger(__name__)

RESULTS = "fk_candidates"
OVERLAPS = "table_overlaps"
PROPOSAL_RULES = 2
"""The version of the rules that propose candidates (``candidates.CandidateIndex``, its cut
``ForeignNumberings``): a batch keeps the stored outcomes of unchanged tables' candidates only where they
were proposed by the same rules (a catalog of other rules scores everything once again)."""


def outcome_settings(config: Config) -> str:
    """What a stored outcome depends on beside its two tables (``SCORED_STATE``' commits record it)."""
    return settings_of(fks=config.fks, sketches=config.sketches, proposal_rules=PROPOSAL_RULES)


def _kept_outcomes(catalog: Catalog, changed: set[str] | None) -> pa.Table:
    """The stored outcomes of candidates whose key's table and dependent's table did not change (none when
    everything is computed)."""
    if changed is None:
        return OUTCOMES.empty_table()
    stored = catalog.read_small(SCORED_STATE)
    touched = pa.array(sorted(changed), pa.string())
    touching = pc.or_(pc.is_in(stored["pk_table"], touched), pc.is_in(stored["fk_table"], touched))
    return stored.filter(pc.invert(touching)).select(OUTCOMES.names).cast(OUTCOMES)


def _in_order(outcomes: pa.Table) -> pa.Table:
    """The outcomes by key and candidate, whatever task or run produced them."""
    keyed = outcomes.append_column("_pk", pc.binary_join(outcomes["pk_columns"], "\x1f")).append_column(
        "_fk", pc.binary_join(outcomes["fk_columns"], "\x1f")
    )
    order = [(name, "ascending") for name in ("pk_table", "_pk", "pk_source", "fk_table", "_fk")]
    return keyed.sort_by(order).drop_columns(["_pk", "_fk"])


@dataclass
class FkRun:
    """What one run of the FK step found: the ranked candidates (``RESULTS`` without ``first_run``), the
    overlapping tables, every proposed candidate's outcome (``SCORED_STATE``), the tables whose
    candidates were computed again (None: all), and counts for the log. The three results are Arrow tables
    where the run was placed on the driver, else DataFrames the executors hold (``in_executors``), which
    keep ``persisted`` until they are written."""

    ranked: pa.Table | DataFrame
    overlaps: pa.Table | DataFrame
    outcomes: pa.Table | DataFrame
    key_checks: pa.Table  # the exact key checks asked (``keys.KEY_CHECKS``)
    changed_tables: set[str] | None
    n_keys: int
    n_several: int
    stages: Stages
    on_driver: bool
    persisted: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        """Drop what the executors keep for the results (after they are written)."""
        for frame in self.persisted:
            frame.unpersist()

    def table(self, name: str) -> pa.Table:
        """``ranked``, ``overlaps`` or ``outcomes`` as an Arrow table in a stable order (for the tests'
        comparisons: the step never collects the executors' rows)."""
        rows = getattr(self, name)
        # bounded by the tests' small lakes, which alone call it: the step never collects these rows
        rows = rows if isinstance(rows, pa.Table) else rows.toArrow()
        if name == "ranked":
            return rows.sort_by("rank")
        if name == "outcomes":
            return _in_order(rows)
        return rows.sort_by([("left_table", "ascending"), ("right_table", "ascending")])


def _reaching(threshold: float) -> pc.Expression:
    """The estimates that may reach θ (``CandidateIndex``; ``in_executors.reach_sql`` in Spark)."""
    estimate, error = pc.field("estimate"), pc.field("error_bound")
    return estimate.is_null() | error.is_null() | (estimate + error >= threshold)


def _numbered_keys(catalog: Catalog, keys: list[Key], driver_bytes: int) -> frozenset[tuple[str, str]]:
    """The one-column keys that number their rows (``numberings``), from the value sets of their tables:
    read on the driver where their files hold at most ``driver_bytes`` (``scan.driver_state_bytes``),
    else grouped by column in the executors; the answer is a row per key at most."""
    asked = pa.table(
        {
            "table_name": pa.array([key.table for key in keys if len(key.columns) == 1], pa.string()),
            "column_name": pa.array([key.columns[0] for key in keys if len(key.columns) == 1], pa.string()),
        }
    )
    tables = sorted(set(asked["table_name"].to_pylist()))
    if not tables:
        return frozenset()
    if catalog.reads_on_driver(ColumnValues.state_table(), tables, driver_bytes):
        values = catalog.read_small(ColumnValues.state_table(), tables, VALUE_COLUMNS)
        numbered = numbered_columns(values.join(asked, ["table_name", "column_name"], join_type="inner"))
    else:
        spark = catalog.spark
        describe_jobs(spark, f"FK candidates: which of {asked.num_rows} keys number their rows")
        values = catalog.read(ColumnValues.state_table(), tables).join(
            F.broadcast(arrow_frame(spark, asked)), ["table_name", "column_name"], "left_semi"
        )
        groups = max(1, math.ceil(asked.num_rows / 1_000))  # a thousand columns' value sets a group
        numbered = (
            values.select(*VALUE_COLUMNS)
            .groupBy(F.pmod(F.xxhash64("table_name", "column_name"), F.lit(groups)))
            .applyInArrow(numbered_columns, from_arrow_schema(NUMBERED))
            .toArrow()  # a row per numbering key at most: O(columns)
        )
    return frozenset(zip(*(numbered[name].to_pylist() for name in NUMBERED.names), strict=True))


def discover_fk_candidates(
    catalog: Catalog, lake: Location, config: Config, incremental: bool = True
) -> FkRun:
    """Find, prune, score and rank the FK candidates. ``incremental``: a candidate whose key's table and
    dependent's table did not change since the last run (with these settings and proposal rules) keeps
    its stored outcome and is not proposed again; the others are proposed and scored. The choice
    (``choice``) and the overlaps, which relate candidates across tables, run over all of them. A table above
    ``scan.max_task_rows`` rows is read by groups of its files (``columns.ColumnCache``).

    One placement decision: the step runs on the driver where the estimates that may reach θ, which
    bound its candidates' pairs of columns, are at most ``scan.driver_max_pairs`` (and
    ``scan.driver_state_bytes`` is not 0), else in the executors (``in_executors``)."""
    fks, sketches, scan = config.fks, config.sketches, config.scan
    settings = outcome_settings(config)
    changed = changed_since(catalog, [SCORED_STATE], settings) if incremental else None
    types = ColumnTypes(catalog.read_small("columns"))
    # The placement: the table's rows from its files' statistics, and only where they pass the bound,
    # those that may reach θ counted by Spark (a scan of tens of millions of estimates on the driver
    # would grow it by gigabytes, though it keeps none).
    n_reaching = catalog.count_rows("inclusion_estimates")
    if scan.driver_state_bytes > 0 and n_reaching > scan.driver_max_pairs:
        n_reaching = catalog.read("inclusion_estimates").where(reach_sql(fks.inclusion_threshold)).count()
    on_driver = scan.driver_state_bytes > 0 and n_reaching <= scan.driver_max_pairs
    if on_driver:
        estimates = catalog.read_small("inclusion_estimates", where=_reaching(fks.inclusion_threshold))
    else:
        # those into the tables without agree-sets alone (whose keys are checked where they would have
        # candidates): at most those few large tables' columns times the lake's columns
        tracked = tracked_tables(catalog, driver_state_bytes=scan.driver_state_bytes)
        checked = sorted(set(types.columns) - tracked)
        estimates = (
            catalog.read("inclusion_estimates")
            .where(f"{reach_sql(fks.inclusion_threshold)} AND {is_in_sql('ref_table', checked)}")
            .toArrow()  # bounded: the checked tables' columns (a few large tables) times the lake's columns
            if checked
            else catalog.arrow_schema("inclusion_estimates").empty_table()
        )
    index = CandidateIndex(estimates, types, fks.inclusion_threshold)
    kept_checks = catalog.read_small(KEY_CHECKS) if incremental else None
    keys, key_checks = find_keys(
        catalog,
        lake,
        fks,
        sketches.precision,
        index.referenced,
        scan.max_task_rows,
        kept_checks,
        scan.driver_state_bytes,
    )
    if changed is not None:  # a candidate of a key no longer checked, or newly, is one of a changed table
        changed = changed | rekeyed(kept_checks, key_checks)
    cut = ForeignNumberings(
        _numbered_keys(catalog, keys, scan.driver_state_bytes),
        frozenset((key.table, key.columns) for key in keys),
        fks.overlap_share,
        fks.schema_of,
    )
    log.info("FK candidates: %d keys number their rows 1..N or 0..N-1", len(cut.numbered))
    snapshots = catalog.read_small("tables").select(["table_name", "last_version", "n_rows"])
    located = pa.table(
        {
            "table_name": snapshots["table_name"],
            "path": pa.array([str(table_path(lake, t)) for t in snapshots["table_name"].to_pylist()]),
            "version": snapshots["last_version"],
            "rows": pc.fill_null(snapshots["n_rows"], 0),
        }
    )
    if on_driver:
        ranked, overlaps, outcomes, stages = _discover_on_driver(
            catalog, config, keys, types, located, estimates, index, changed, cut
        )
        persisted: list[DataFrame] = []
    else:
        ranked, overlaps, outcomes, persisted, stages = discover_in_executors(
            catalog,
            config,
            keys,
            types,
            located,
            n_reaching,
            changed,
            cut,
            scored_candidates(fks, sketches, scan.max_task_rows),
            OUTCOMES,
            SCORED,
        )
    return FkRun(
        ranked,
        overlaps,
        outcomes,
        key_checks,
        changed,
        len(keys),
        sum(len(key.columns) > 1 for key in keys),
        stages,
        on_driver,
        persisted,
    )


def _discover_on_driver(
    catalog: Catalog,
    config: Config,
    keys: list[Key],
    types: ColumnTypes,
    located: pa.Table,
    estimates: pa.Table,
    index: CandidateIndex,
    changed: set[str] | None,
    cut: ForeignNumberings,
) -> tuple[pa.Table, pa.Table, pa.Table, Stages]:
    """The step placed on the driver (``discover_fk_candidates``): the ranked candidates, the overlaps,
    every proposed candidate's outcome and the counts per stage, as Arrow tables; the candidates are
    scored by Spark tasks unless the tables they read are small. ``estimates``: those that may reach θ
    (at most ``scan.driver_max_pairs``), ``index`` over them."""
    fks, sketches, scan = config.fks, config.sketches, config.scan
    # As in the executors: a batch proposes only the candidates with a changed table on a side, and keeps
    # the stored outcomes of the others, proposed as before (their key, estimate and cut depend on their
    # two tables alone)
    to_score = {
        key: found
        for key in keys
        if (
            found := [
                c
                for c in index.candidates(key, cut)
                if changed is None or key.table in changed or c.table in changed
            ]
        )
    }
    reused = _kept_outcomes(catalog, changed)
    where = {row["table_name"]: row for row in located.to_pylist()}

    def at(table: str) -> tuple[str, int, int]:
        """The table's path, committed version and rows."""
        return where[table]["path"], where[table]["version"], where[table]["rows"]

    rows = [
        (
            len(candidates),
            (
                key.table,
                *at(key.table),
                list(key.columns),
                key.source,
                [(c.table, *at(c.table), list(c.columns), c.estimate, c.error) for c in candidates],
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
            from_arrow_schema(DESCRIPTOR),
            scored_candidates(fks, sketches, scan.max_task_rows),
            from_arrow_schema(OUTCOMES),
            on_driver=reads_tables_on_driver(committed_bytes(catalog, read), scan.driver_state_bytes),
        ).cast(OUTCOMES)
        if rows
        else OUTCOMES.empty_table()
    )
    outcomes = _in_order(pa.concat_tables([reused, computed]))
    scored = outcomes.filter(outcomes["passed"]).select(ROWS.names).cast(ROWS)
    kept = with_key_signals(smallest_keys_only(scored), keys, types)
    included = estimates.filter(pc.greater_equal(estimates["estimate"], fks.inclusion_threshold))
    overlaps = find_overlaps(included, types, kept, fks)
    ranked = choose(kept, overlaps, fks)
    stages = Stages(len(reused) + n_computed, n_computed, len(scored), len(kept))
    return ranked, overlaps, outcomes, stages


def run_discovery(catalog: Catalog, lake: Location, config: Config, committed: int | None) -> int:
    """The discovery step ``fk_candidates`` (``lakemeta.registry``), after ``inclusion_estimates`` and
    ``keys_and_dependencies`` whose results it reads: the candidates' outcomes kept for the next run
    (``SCORED_STATE``, its commit recording the run and settings it reflects), ``table_overlaps``, and
    ``fk_candidates`` replaced (each accepted FK's first run kept and the changes recorded:
    ``lakemeta.catalog.relationships``); returns the accepted count."""
    reflects = reflecting(committed, outcome_settings(config), config)
    run = discover_fk_candidates(catalog, lake, config)
    catalog.replace_small(KEY_CHECKS, run.key_checks)
    written = [name for name in arrow_schema(RESULTS).names if name != "first_run"]
    if run.on_driver:
        catalog.replace_small(
            OVERLAPS, run.overlaps.select(arrow_schema(OVERLAPS).names).cast(arrow_schema(OVERLAPS))
        )
        ranked = run.ranked.select(written)
        n_ranked, n_overlaps = len(run.ranked), len(run.overlaps)
        n_accepted = int(pc.sum(run.ranked["accepted"]).as_py() or 0)
    else:
        n_overlaps = catalog.replace(OVERLAPS, run.overlaps)
        ranked = run.ranked.select(*written)
    n_written = replace_relationships(catalog, RESULTS, ranked, config.discovery_settings(), committed)
    # The outcomes last: in the executors every result above is computed from the stored outcomes, and
    # Spark drops the cached frames that read a table once it is overwritten, so each would be computed
    # again, scoring included. A run killed before this write leaves the outcomes of the run before: the
    # next run scores more, and finds the same.
    if run.on_driver:
        catalog.replace_small(SCORED_STATE, run.outcomes, reflects=reflects)
    else:
        catalog.replace(SCORED_STATE, run.outcomes, reflects=reflects)
        n_ranked = n_written
        n_accepted = catalog.count_rows(RESULTS, pc.field("accepted"))
        run.release()
    stages = run.stages
    log.info(
        "FK candidates (%s): %d keys (%d with several columns); %d candidates reaching theta=%.2f "
        "(%d scored, the others of tables unchanged since the last run kept), %d included, %d of the "
        "smallest keys ranked, %d accepted; %d overlapping table pairs",
        "on the driver" if run.on_driver else "in the executors",
        run.n_keys,
        run.n_several,
        stages.proposed,
        config.fks.inclusion_threshold,
        stages.computed,
        stages.passed,
        n_ranked,
        n_accepted,
        n_overlaps,
    )
    return n_accepted
