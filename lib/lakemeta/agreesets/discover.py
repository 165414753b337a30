"""Keys and dependencies from the agree-set state: the discovery step that writes the catalog's
``unique_column_combinations`` and ``functional_dependencies``, and the per-column uniqueness flags.

:func:`refresh_keys_and_dependencies` derives, for the tables of a run at its commit (or for every table,
when a discovery run asks for other thresholds), the minimal unique column combinations, the minimal exact
FDs and the minimal approximate FDs (Def. 6.2, errors from the AStree of §6) from the stored multiset
ES^m(r) and |r|; :func:`unique_column_flags` the per-column uniqueness (``AgreeSets.derive``). Both cover
the tracked tables only (``lakemeta.agreesets.state``, "Which tables") and, as hitting sets are exponential
in the width in the worst case, only those with at most ``max_columns`` columns.

Approximate FDs. ``max_fd_error`` defaults to 0.01: an FD may be violated by at most 1% of the tuple
pairs. DynASt's error (Def. 6.1/6.2) is the pair-based g1 error of Kruse and Naumann's Pyro (DynASt ref.
[19]), and 0.01 is the threshold of Pyro's evaluation. Their search is level-wise over the LHS lattice,
one AStree specialisation search per candidate: quick for adult (15 columns, 1,619 minimal approximate
FDs), but minutes for flight_1k (109 columns) with the LHS bounded to one column and far longer with two.
``max_lhs_size`` bounds it; exact FDs and UCCs (hitting sets) are always complete: seconds for flight_1k's
982,631 FDs and 26,652 UCCs, while uniprot_1k's (223 columns) UCCs did not finish in many minutes, hence
the width bound (docs/performance.md, "Measurements behind the code").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F

from lakemeta.agreesets.astree import AStree
from lakemeta.agreesets.batch_delta import name_lists
from lakemeta.agreesets.dependencies import approximate_fds, minimal_fds, minimal_uccs
from lakemeta.agreesets.multiset import AgreeSetMultiset
from lakemeta.catalog import Catalog
from lakemeta.catalog.freshness import reflecting
from lakemeta.config import AgreeSetConfig, Config
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)

# The state table of ``lakemeta.agreesets.state.AgreeSets``, named here because that module imports this
# one (its ``derive`` is :func:`unique_column_flags`).
STATE = "state/agree_sets"
PROFILE = "state/column_profile"
UCCS = "unique_column_combinations"
FDS = "functional_dependencies"

_DERIVED_SCHEMA = "table_name string, kind string, columns array<string>, rhs string, error double"
_DERIVED_ARROW = pa.schema(
    [
        ("table_name", pa.string()),
        ("kind", pa.string()),
        ("columns", pa.list_(pa.string())),
        ("rhs", pa.string()),
        ("error", pa.float64()),
    ]
)


@dataclass(frozen=True)
class TableShape:
    """A table's columns (sorted names: the attribute order of its masks) and |r|."""

    column_names: list[str]
    n_rows: int


def table_shapes(catalog: Catalog, tables: list[str]) -> dict[str, TableShape]:
    """Columns and row counts of ``tables`` from ``state/column_profile`` (tables absent there are gone)."""
    profile = catalog.read_small(PROFILE)
    profile = profile.filter(pc.is_in(profile["table_name"], pa.array(tables, pa.string())))
    shapes: dict[str, tuple[list[str], int]] = {}
    for row in profile.select(["table_name", "column_name", "n_rows"]).to_pylist():
        columns, _ = shapes.setdefault(row["table_name"], ([], row["n_rows"]))
        columns.append(row["column_name"])
    return {name: TableShape(sorted(columns), n_rows) for name, (columns, n_rows) in shapes.items()}


def derive_keys_and_dependencies(
    multiset: AgreeSetMultiset,
    shape: TableShape,
    max_fd_error: float,
    max_lhs_size: int | None,
) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """Minimal UCCs, then minimal exact FDs (error 0.0), then the minimal approximate FDs with
    0 < error <= ``max_fd_error`` (Def. 6.2 via the AStree, §6). An approximate FD of error 0 is also a
    minimal exact FD, so each FD is listed once. Returns (kind, columns / lhs, rhs, error)."""
    names = shape.column_names
    uccs = minimal_uccs(multiset, shape.n_rows)
    exact = minimal_fds(multiset, shape.n_rows)
    approximate = approximate_fds(
        multiset, shape.n_rows, max_fd_error, astree=AStree(multiset), max_lhs_size=max_lhs_size
    )
    strict = approximate.error > 0
    lhs = np.vstack([uccs, exact.lhs, approximate.lhs[strict]])
    rhs = np.concatenate([exact.rhs, approximate.rhs[strict]])
    error = np.concatenate([exact.error, approximate.error[strict]])
    kinds = ["ucc"] * len(uccs) + ["fd"] * len(rhs)
    rhs_names = pa.array(names, pa.string()).take(pa.array(rhs, pa.int64()))
    return (
        pa.array(kinds, pa.string()),
        name_lists(lhs, names),
        pa.concat_arrays([pa.nulls(len(uccs), pa.string()), rhs_names]),
        pa.concat_arrays([pa.nulls(len(uccs), pa.float64()), pa.array(error, pa.float64())]),
    )


def _derive_per_table(
    shapes: dict[str, TableShape], max_fd_error: float, max_lhs_size: int | None
) -> Callable[[pa.Table], pa.Table]:
    def derive(group: pa.Table) -> pa.Table:
        table_name = group["table_name"][0].as_py()
        shape = shapes[table_name]
        stored = group.filter(pc.greater(pc.list_value_length(group["agree_set"]), 0))  # without the marker
        multiset = AgreeSetMultiset.from_arrow(stored.select(["agree_set", "count"]), shape.column_names)
        kinds, columns, rhs, error = derive_keys_and_dependencies(multiset, shape, max_fd_error, max_lhs_size)
        table_names = pa.array([table_name] * len(kinds), pa.string())
        return pa.table(
            [table_names, kinds, columns, rhs, error], names=["table_name", "kind", "columns", "rhs", "error"]
        )

    return derive


def tracked_tables(
    catalog: Catalog, tables: Sequence[str] | None = None, driver_state_bytes: int = 0
) -> set[str]:
    """The tables (of ``tables`` unless that is None) that keep agree-set state: those holding the marker
    row (at most ``max_rows`` rows). Read on the driver where their state is small
    (``Catalog.reads_on_driver``)."""
    if catalog.reads_on_driver(STATE, tables, driver_state_bytes):
        stored = catalog.read_small(STATE, tables, ["table_name", "agree_set"])
        markers = stored.filter(pc.equal(pc.list_value_length(stored["agree_set"]), 0))
        return set(markers["table_name"].to_pylist())
    markers = catalog.read(STATE, tables).where(F.size("agree_set") == 0).select("table_name")
    return {row.table_name for row in markers.collect()}  # small by construction: one marker per table


def refresh_keys_and_dependencies(
    catalog: Catalog,
    config: AgreeSetConfig,
    tables: list[str] | None = None,
    driver_state_bytes: int = 0,
    reflects: dict | None = None,
) -> None:
    """Recompute ``unique_column_combinations`` and ``functional_dependencies`` of ``tables`` (all tables
    when None) from ``state/agree_sets`` and the row counts of ``state/column_profile`` (both updated before
    this runs).

    Rows of other tables are kept; the rows of a dropped or untracked table, or of one wider than
    ``max_columns``, are removed (with ``tables`` None, every row is rewritten). Each table's derivation
    runs in one Spark task (the multiset of a wide table can be large), or on the driver where the state
    of ``tables`` is small (``Catalog.reads_on_driver``); the results are written with delta-rs.
    ``max_lhs_size`` bounds the LHS of approximate FDs (exact FDs and UCCs are always complete): the
    level-wise search is exponential in the number of columns (see the module's figures).
    ``functional_dependencies``, written last, records ``reflects`` (``lakemeta.catalog.freshness``).
    """
    every_table = tables is None
    if every_table:
        tables = sorted(set(catalog.read_small(PROFILE)["table_name"].to_pylist()))
    if not tables and not every_table:
        return
    spark = catalog.spark
    describe_jobs(spark, f"keys and FDs of {len(tables)} tables")
    shapes = {
        name: shape
        for name, shape in table_shapes(catalog, tables).items()
        if len(shape.column_names) <= config.max_columns
    }
    derived = _DERIVED_ARROW.empty_table()
    if shapes:
        # A group per tracked table: its marker row is always there, even when it has no other agree-set.
        derive = _derive_per_table(shapes, config.max_fd_error, config.max_lhs_size)
        if catalog.reads_on_driver(STATE, list(shapes), driver_state_bytes):
            # A few small multisets (the bytes bound them, max_columns and max_lhs_size the search): the
            # derivation a Spark task would run, a table at a time, without a job's fixed cost.
            stored = catalog.read_small(STATE, list(shapes), ["table_name", "agree_set", "count"])
            names = stored["table_name"]
            groups = [stored.filter(pc.equal(names, name)) for name in pc.unique(names).to_pylist()]
            derived = pa.concat_tables([derived, *(derive(group).cast(_DERIVED_ARROW) for group in groups)])
        else:
            derived = (
                catalog.read(STATE, list(shapes))
                .groupBy("table_name")
                .applyInArrow(derive, _DERIVED_SCHEMA)
                # the minimal keys and FDs of tables of at most agree_sets.max_columns columns, their LHS
                # at most max_lhs_size: bounded per table, the results written from the driver
                .toArrow()
            )
    is_ucc = pc.equal(derived["kind"], "ucc")
    uccs = derived.filter(is_ucc).select(["table_name", "columns"])
    fds = derived.filter(pc.invert(is_ucc)).select(["table_name", "columns", "rhs", "error"])
    # The rows of the listed tables only, in one commit each; other tables' rows stay.
    of_tables = (
        None
        if every_table
        else "table_name IN (" + ", ".join("'" + t.replace("'", "''") + "'" for t in tables) + ")"
    )
    catalog.replace_small(UCCS, uccs, of_tables)
    catalog.replace_small(
        FDS, fds.rename_columns(["table_name", "lhs", "rhs", "error"]), of_tables, reflects=reflects
    )
    exact = int(pc.sum(pc.equal(fds["error"], 0.0)).as_py() or 0)
    log.info(
        "keys and dependencies of %d tables (of %d listed): %d minimal UCCs, %d exact and %d "
        "approximate minimal FDs (error <= %g)",
        len(pc.unique(derived["table_name"])),
        len(tables),
        len(uccs),
        exact,
        len(fds) - exact,
        config.max_fd_error,
    )


def unique_column_flags(
    catalog: Catalog, config: AgreeSetConfig, tables: Sequence[str] | None = None, driver_state_bytes: int = 0
) -> pa.Table:
    """Per column of every table in ``state/column_profile`` (of ``tables`` unless that is None):
    ``is_unique``, true when no agree-set contains
    the column (no two rows share a value there); null where keys are not derived (untracked tables, and
    tables wider than ``max_columns``).

    Read from ``unique_column_combinations`` rather than from the agree-set state: a column is in no
    agree-set exactly when {column} is a UCC, which is then minimal, unless |r| <= 1, where the empty set is
    the minimal UCC and every column is unique. So call it after :func:`refresh_keys_and_dependencies`.
    """
    profile = catalog.read_small(PROFILE, tables).sort_by(
        [("table_name", "ascending"), ("ordinal", "ascending")]
    )
    uccs = catalog.read_small(UCCS, tables)
    sizes = pc.list_value_length(uccs["columns"])
    singles = uccs.filter(pc.equal(sizes, 1))
    unique = set(
        zip(singles["table_name"].to_pylist(), pc.list_flatten(singles["columns"]).to_pylist(), strict=True)
    )
    everything_unique = set(uccs.filter(pc.equal(sizes, 0))["table_name"].to_pylist())
    widths = profile.group_by("table_name").aggregate([("column_name", "count")]).to_pylist()
    derived = tracked_tables(catalog, tables, driver_state_bytes) & {
        row["table_name"] for row in widths if row["column_name_count"] <= config.max_columns
    }
    pairs = zip(profile["table_name"].to_pylist(), profile["column_name"].to_pylist(), strict=True)
    flags = [
        ((table, column) in unique or table in everything_unique) if table in derived else None
        for table, column in pairs
    ]
    return pa.table(
        {
            "table_name": profile["table_name"],
            "column_name": profile["column_name"],
            "is_unique": pa.array(flags, pa.bool_()),
        }
    )


def run_discovery(catalog: Catalog, lake: Location, config: Config, committed: int | None) -> None:
    """The discovery step ``keys_and_dependencies``: keys and FDs of every table with ``config``'s
    thresholds, for runs triggered with another ``max_fd_error`` (a run's commit derives them for its
    changed tables already). Agree-sets are the only input: the lake itself is not read."""
    reflects = reflecting(committed, config.discovery_settings(), config)
    refresh_keys_and_dependencies(catalog, config.agree_sets, reflects=reflects)
