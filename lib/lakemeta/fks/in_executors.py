"""The FK step (``discover``) over a lake whose candidates are too many for the driver: every pair set is
a DataFrame the executors hold, and each stage runs the driver's functions over the groups that decide
it, so both placements compute one result.

A lake of small real tables holds hundreds of thousands of candidates at 600 tables and millions at
2,000 (``bench/dense_lakes.py``). What the driver holds here is O(columns): the keys, the columns' types
and places (``signals.ColumnTypes``), each table's snapshot, and the schema graphs' union-find over the
tables. The stages, each a Spark job over groups whose outcome depends on the group alone:

1. Proposing (``CandidateIndex``, Zhang's Alg. B.1): the estimates reaching θ into one table's columns
   propose the candidates of that table's keys, self-references and composite keys' products included,
   a numbering key's of other folders left out (``candidates.ForeignNumberings``): grouped by referenced
   table.
2. Reusing: a batch proposes only the candidates with a changed table on a side; those of two tables
   unchanged since are proposed as before and keep their stored outcomes (``state/fk_scored``). The
   proposed are scored as on the driver (``candidates.scored_candidates``), one descriptor per key.
3. The smallest keys of each referenced table and the key signals (``smallest_keys_only``,
   ``with_key_signals``): grouped by referenced table.
4. Overlaps and the flags that relate a candidate to another (``overlaps.find_overlaps``,
   ``signals.both_ways``): a copy and a candidate's reverse concern the candidates and inclusions of one
   pair of tables, so they are found per unordered pair of tables.
5. The choice (``choice.choose_per_dependent``): grouped by dependent table. Then the schema graphs,
   whose union-find reads the distinct table edges as a stream, and the ranking (a sort in Spark).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from lakemeta.catalog import Catalog
from lakemeta.config import Config
from lakemeta.fks.candidates import (
    ROWS,
    SCORED_STATE,
    CandidateIndex,
    ForeignNumberings,
    smallest_keys_only,
    with_key_signals,
)
from lakemeta.fks.choice import (
    CHOICE_COLUMNS,
    IDENTITY,
    PAIR_FLAGS,
    choose_per_dependent,
    demoted_reverses,
    overlapping,
    with_pair_flags,
)
from lakemeta.fks.keys import Key
from lakemeta.fks.overlaps import INCLUSIONS_NEEDED, find_overlaps, joined_groups
from lakemeta.fks.overlaps import SCHEMA as OVERLAP_SCHEMA
from lakemeta.fks.signals import ColumnTypes
from lakemeta.spark.portable import arrow_frame, default_parallelism, describe_jobs

log = logging.getLogger(__name__)


_STRINGS = pa.list_(pa.string())
PROPOSED = pa.schema(
    [
        ("pk_table", pa.string()),
        ("pk_columns", _STRINGS),
        ("pk_source", pa.string()),
        ("fk_table", pa.string()),
        ("fk_columns", _STRINGS),
        ("proposed_estimate", pa.float64()),
        ("proposed_error", pa.float64()),
    ]
)
_ESTIMATE_COLUMNS = ["dep_table", "dep_column", "ref_table", "ref_column", "estimate", "error_bound"]


@dataclass(frozen=True)
class Stages:
    """The candidates remaining at each stage, for the log."""

    proposed: int
    computed: int
    passed: int
    kept: int


def reach_sql(threshold: float) -> str:
    """The estimates that may reach θ (``CandidateIndex``): the estimate plus its bound reaches it, or
    there is no estimate (undetermined)."""
    return f"coalesce(estimate + error_bound, 1.0) >= {float(threshold)!r}"


def _proposals(
    keys: list[Key], types: ColumnTypes, threshold: float, cut: ForeignNumberings, changed: set[str] | None
) -> Callable[[pa.Table], pa.Table]:
    """The candidates of some referenced tables' keys from the estimates into them (stage 1); of a batch
    (``changed`` not None), those with one of its tables on a side."""
    by_table: dict[str, list[Key]] = {}
    for key in keys:
        by_table.setdefault(key.table, []).append(key)

    def propose(estimates: pa.Table) -> pa.Table:
        index = CandidateIndex(estimates.filter(estimates["dep_table"].is_valid()), types, threshold)
        columns: dict[str, list] = {name: [] for name in PROPOSED.names}
        for table in sorted(set(estimates["ref_table"].to_pylist())):
            for key in by_table.get(table, []):
                found = [
                    candidate
                    for candidate in index.candidates(key, cut)
                    if changed is None or key.table in changed or candidate.table in changed
                ]
                columns["pk_table"] += [key.table] * len(found)
                columns["pk_columns"] += [list(key.columns)] * len(found)
                columns["pk_source"] += [key.source] * len(found)
                columns["fk_table"] += [candidate.table for candidate in found]
                columns["fk_columns"] += [list(candidate.columns) for candidate in found]
                columns["proposed_estimate"] += [candidate.estimate for candidate in found]
                columns["proposed_error"] += [candidate.error for candidate in found]
        return pa.table(columns, schema=PROPOSED)

    return propose


def _kept_and_signalled(keys: list[Key], types: ColumnTypes) -> Callable[[pa.Table], pa.Table]:
    """Stage 3 over some referenced tables' scored candidates."""

    def kept(scored: pa.Table) -> pa.Table:
        return with_key_signals(smallest_keys_only(scored.select(ROWS.names).cast(ROWS)), keys, types)

    return kept


_OVERLAP = pa.struct(list(OVERLAP_SCHEMA))


def _related_schema(scored: pa.Schema) -> pa.Schema:
    """Stage 4's rows: the candidates (``scored``' schema) with their ``PAIR_FLAGS`` and ``overlap``."""
    return pa.schema([*scored, *PAIR_FLAGS, pa.field("overlap", _OVERLAP)])


def _related(
    types: ColumnTypes, config: Config, scored: pa.Schema
) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """Stage 4 over some unordered pairs of tables: their candidates (``scored``' schema) with their
    ``PAIR_FLAGS``, and each overlapping pair's overlap on its first candidate (``overlap``, null
    elsewhere)."""
    out = _related_schema(scored)

    def related(candidates: pa.Table, inclusions: pa.Table) -> pa.Table:
        candidates = candidates.select(scored.names).cast(scored)
        found = find_overlaps(inclusions, types, candidates, config.fks)
        flagged = with_pair_flags(candidates, found)
        # each overlap on the first candidate of its pair of tables
        row = overlapping(candidates, found)
        hits = np.flatnonzero(row >= 0)
        first = np.full(len(found), len(row))
        np.minimum.at(first, row[hits], hits)
        on_first = np.full(len(row), -1)
        on_first[first[first < len(row)]] = np.flatnonzero(first < len(row))
        index = pa.array(on_first, pa.int64(), mask=on_first < 0)
        overlap = found.combine_chunks().to_struct_array().take(index)
        return flagged.append_column("overlap", overlap).cast(out)

    return related


def _chosen(config: Config, schema: pa.Schema) -> Callable[[pa.Table], pa.Table]:
    """Stage 5 over some dependent tables' candidates."""

    def chosen(candidates: pa.Table) -> pa.Table:
        return choose_per_dependent(candidates, config.fks).select(schema.names).cast(schema)

    return chosen


_BROADCAST_PAIRS = 1_000_000  # pairs of table names sent to every task at most (tens of MB)
_ID_BITS = 33  # ``monotonically_increasing_id``: the partition in the upper bits, the row in the lower 33
_GROUP_ROWS = 50_000
"""The rows a stage's group holds on average at most: a group is one Arrow table in one Python worker."""


def _bucket(groups: int, *columns: str) -> Column:
    """Rows spread over ``groups`` groups by the hash of ``columns``: a group is a task's call of the
    stage's function (one call per table or pair of tables would pay a call's fixed cost per group)."""
    return F.pmod(F.xxhash64(*columns), F.lit(groups)).alias("bucket")


def _pair_of(left: str, right: str) -> list:
    """An unordered pair of tables as two columns, the smaller name first."""
    return [F.least(left, right).alias("pair_left"), F.greatest(left, right).alias("pair_right")]


def discover_in_executors(
    catalog: Catalog,
    config: Config,
    keys: list[Key],
    types: ColumnTypes,
    snapshots: pa.Table,
    n_reaching: int,
    changed: set[str] | None,
    cut: ForeignNumberings,
    score: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    outcome_schema: pa.Schema,
    scored_schema: pa.Schema,
) -> tuple[DataFrame, DataFrame, DataFrame, list[DataFrame], Stages]:
    """The FK step's ranked candidates, overlaps and outcomes as DataFrames the executors hold (module
    docstring), the frames persisted for them (released once they are written) and the counts per stage.
    ``snapshots``: a row per table (table_name, path, version, rows); ``n_reaching``: the estimates that
    may reach θ; ``cut``: the candidates left out before scoring; ``score``: the scoring tasks' body
    over key descriptors (``candidates.DESCRIPTOR``), returning outcomes of ``outcome_schema``;
    ``scored_schema``: the kept candidates' schema with their key signals (``candidates.SCORED``)."""
    spark = catalog.spark
    fks = config.fks
    threshold = fks.inclusion_threshold
    persisted: list[DataFrame] = []
    tasks = 4 * default_parallelism(spark)

    def groups(rows: int) -> int:
        return max(tasks, math.ceil(rows / _GROUP_ROWS))

    def persist(frame: DataFrame) -> DataFrame:
        persisted.append(frame.persist())
        return frame

    estimates = catalog.read("inclusion_estimates").where(reach_sql(threshold)).select(*_ESTIMATE_COLUMNS)
    # A batch proposes only the candidates with a changed table on a side, from the estimates of those
    # tables' columns: a candidate of two unchanged tables is proposed as before (its key, its phase-1
    # estimate and the cut depend on its two tables alone), and its stored outcome is kept.
    every_key_table = sorted({k.table for k in keys})
    proposing, marked = estimates, every_key_table
    if changed is not None:
        tables = sorted(changed)
        proposing = estimates.where(F.col("dep_table").isin(tables) | F.col("ref_table").isin(tables))
        marked = sorted(changed.intersection(every_key_table))

    def named(tables: list[str]) -> DataFrame:
        return F.broadcast(arrow_frame(spark, pa.table({"ref_table": pa.array(tables, pa.string())})))

    # every (changed) key's table has a group, with or without estimates into it (its self-references)
    markers = named(marked).select(
        F.lit(None).cast("string").alias("dep_table"),
        F.lit(None).cast("string").alias("dep_column"),
        "ref_table",
        F.lit(None).cast("string").alias("ref_column"),
        F.lit(None).cast("double").alias("estimate"),
        F.lit(None).cast("double").alias("error_bound"),
    )
    describe_jobs(spark, f"FK candidates: proposing the candidates of {len(keys)} keys")
    to_score = persist(
        proposing.join(named(every_key_table), "ref_table", "left_semi")
        .unionByName(markers)
        .groupBy(_bucket(groups(n_reaching), "ref_table"))
        .applyInArrow(_proposals(keys, types, threshold, cut, changed), from_arrow_schema(PROPOSED))
    )
    reused = None
    if changed is not None:
        reused = catalog.read(SCORED_STATE)
        if tables:
            reused = reused.where(~F.col("pk_table").isin(tables) & ~F.col("fk_table").isin(tables))

    located = F.broadcast(arrow_frame(spark, snapshots))

    def side(prefix: str) -> DataFrame:
        return located.select(
            F.col("table_name").alias(f"{prefix}_table"),
            F.col("path").alias(f"{prefix}_path"),
            F.col("version").alias(f"{prefix}_version"),
            F.col("rows").alias(f"{prefix}_rows"),
        )

    candidate = F.struct(
        "fk_table",
        "fk_path",
        "fk_version",
        "fk_rows",
        "fk_columns",
        F.col("proposed_estimate").alias("estimate"),
        F.col("proposed_error").alias("error"),
    )
    descriptors = (
        to_score.join(side("fk"), "fk_table")
        .join(side("pk"), "pk_table")
        .groupBy("pk_table", "pk_path", "pk_version", "pk_rows", "pk_columns", "pk_source")
        .agg(F.collect_list(candidate).alias("candidates"))
    )
    n_computed = to_score.count()
    n_proposed = n_computed + (0 if reused is None else reused.count())
    log.info("FK candidates in the executors: %d proposed, %d to score", n_proposed, n_computed)
    describe_jobs(spark, f"FK candidates: EMD of {n_computed} candidates")
    # keys by ranges of their tables' names: a task's keys are of a few folders, as are most of their
    # candidates (``ForeignNumberings``), so a task reads a table once where a hash would spread its keys,
    # and the reads of each table, over every task
    computed = descriptors.repartitionByRange(groups(n_computed), "pk_table").mapInArrow(
        score, from_arrow_schema(outcome_schema)
    )
    outcomes = persist(computed if reused is None else reused.unionByName(computed))

    describe_jobs(spark, "FK candidates: the smallest keys and their signals")
    passed = outcomes.where("passed")
    n_passed = passed.count()
    log.info("FK candidates in the executors: %d included", n_passed)
    kept = persist(
        passed.groupBy(_bucket(groups(n_passed), "pk_table")).applyInArrow(
            _kept_and_signalled(keys, types), from_arrow_schema(scored_schema)
        )
    )

    describe_jobs(spark, "FK candidates: overlapping tables")
    included = estimates.where(f"estimate >= {float(threshold)!r} AND dep_table != ref_table").select(
        *_pair_of("dep_table", "ref_table"), "dep_table", "dep_column", "ref_table", "ref_column"
    )
    # The inclusions of the pairs whose overlap may need them (``overlaps.find_overlaps`` matches columns
    # only for a key included in a key, or keys of other values than integers): of the lake's millions,
    # the few the tasks read; the pairs are sent to every task when they are few, so that the inclusions
    # are filtered where they are read, not shuffled to be joined.
    pairs = persist(kept.where(INCLUSIONS_NEEDED).select(*_pair_of("fk_table", "pk_table")).distinct())
    n_pairs = pairs.count()
    included = included.join(
        F.broadcast(pairs) if n_pairs <= _BROADCAST_PAIRS else pairs, ["pair_left", "pair_right"], "left_semi"
    )
    n_kept = kept.count()
    log.info("FK candidates in the executors: %d of the smallest keys", n_kept)
    with_pair = kept.select("*", *_pair_of("fk_table", "pk_table"))
    by_pair = _bucket(groups(n_kept), "pair_left", "pair_right")
    related = persist(
        with_pair.groupBy(by_pair)
        .cogroup(included.groupBy(by_pair))
        .applyInArrow(
            _related(types, config, scored_schema), from_arrow_schema(_related_schema(scored_schema))
        )
    )
    overlaps = related.where(F.col("overlap").isNotNull()).select("overlap.*")

    describe_jobs(spark, "FK candidates: the choice per dependent")
    chosen_schema = pa.schema(
        [
            *scored_schema,
            *PAIR_FLAGS,
            *[f for f in CHOICE_COLUMNS if f.name not in ("schema_graph", "rank", "accepted")],
            pa.field("ruled_out", pa.bool_()),
        ]
    )
    chosen = persist(
        related.drop("overlap")
        .groupBy(_bucket(groups(n_kept), "fk_table"))
        .applyInArrow(_chosen(config, chosen_schema), from_arrow_schema(chosen_schema))
    )
    # one way only (``choice.one_way``), over the accepted whose reverse is a candidate: at most one per
    # dependent, so O(columns)
    accepted = chosen.where("answer_set = 1 AND keys_both_ways").select(*IDENTITY, "score").toArrow()
    demoted = demoted_reverses(accepted)
    if demoted.num_rows:
        reasons = F.broadcast(arrow_frame(spark, demoted).withColumnRenamed("reason", "_demoted"))
        chosen = persist(
            chosen.join(reasons, IDENTITY, "left")
            .withColumn("answer_set", F.when(F.col("_demoted").isNotNull(), 2).otherwise(F.col("answer_set")))
            .withColumn("reason", F.coalesce("_demoted", "reason"))
            .drop("_demoted")
        )
    log.info(
        "FK candidates in the executors: %d accepted with their reverse a candidate, %d of them left one way",
        len(accepted),
        len(demoted),
    )
    # the schema graphs (``choice.schema_graphs``' edges): the union-find holds a parent per table, the
    # distinct edges pass by as a stream
    edges = chosen.select(
        "fk_table",
        F.when(~F.col("ruled_out") & F.col("same_folder"), F.col("pk_table"))
        .otherwise(F.col("fk_table"))
        .alias("joined"),
    ).distinct()
    # streamed, not collected: the driver holds the union-find's parent per table, O(tables)
    graphs = joined_groups((row.fk_table, row.joined) for row in edges.toLocalIterator())
    log.info("FK candidates in the executors: chosen, %d schema graphs", len(set(graphs.values())))
    graph_of = F.broadcast(
        arrow_frame(
            spark,
            pa.table(
                {
                    "fk_table": pa.array(list(graphs), pa.string()),
                    "schema_graph": pa.array(list(graphs.values()), pa.string()),
                }
            ),
        )
    )
    # the order of ``choice.choose``'s ranking in Spark: answer set 1, 2, then the rest, each by score and
    # EMD_n, then the identity
    order = [
        F.coalesce("answer_set", F.lit(3)),
        F.desc("score"),
        "emd",
        "fk_table",
        "fk_columns",
        "pk_table",
        "pk_columns",
    ]
    # the rank without a window over one partition: the sorted partitions are numbered within, and each
    # starts after the rows of those before it (a count per partition, on the driver)
    ordered = persist(
        chosen.join(graph_of, "fk_table").orderBy(*order).withColumn("_at", F.monotonically_increasing_id())
    )
    part, within = F.shiftright("_at", _ID_BITS), F.col("_at").bitwiseAND(F.lit((1 << _ID_BITS) - 1))
    counts = dict(ordered.groupBy(part.alias("part")).count().collect())  # a row per partition
    starts, before = {}, 0
    for number in sorted(counts):
        starts[number], before = before, before + counts[number]
    start_of = (
        F.create_map(*[F.lit(x) for pair in starts.items() for x in pair]) if starts else F.create_map()
    )
    ranked = (
        ordered.withColumn("rank", (F.coalesce(start_of[part], F.lit(0)) + within + 1).cast("int"))
        .drop("_at")
        .withColumn("accepted", F.coalesce(F.col("answer_set") == 1, F.lit(False)))
    )
    stages = Stages(n_proposed, n_computed, n_passed, n_kept)
    return ranked, overlaps, outcomes, persisted, stages
