"""Primary-key candidates for the FK search: found, not assumed (Zhang et al. §2 take them as known).

* Tables with agree-set state (``agree_sets.max_rows``): their minimal unique column combinations of up to
  ``max_key_columns`` columns (``unique_column_combinations``) whose columns hold no null. A table of one
  row has the empty combination as its key, and every column is unique; its key is its first null-free
  column, as keys come first by convention (TPC-DS's warehouse at scale 0.1, referenced by four fact
  tables).
* Larger tables keep no agree-sets; their keys are checked exactly in Spark tasks instead (one task per
  group of tables, each table's columns read once with delta-rs through ``columns.ColumnCache``: a table
  above ``scan.max_task_rows`` rows in groups of its data files, keeping only the 64-bit value hashes of
  every row and reading again the few rows whose hashes are shared), but only where a
  key could be and would matter:
  - single columns that can be unique: no null, and an HLL distinct estimate within four standard errors
    (1.04 / sqrt(2^p), BML §2.2) of the row count;
  - combinations of 2 to ``max_key_columns`` null-free columns that would have FK candidates (Zhang §4:
    another table holds a column of S(Ci) for every Ci) and whose distinct estimates allow as many tuples
    as rows. A combination is a key when it is unique and minimal: no unique column or unique smaller
    combination inside it, as in ``unique_column_combinations``. Sizes are checked in increasing order
    and the first size with a key ends the search (see below). Duplicates among the first 16,384 rows
    refute most combinations without reading further.
* Each table's primary key is among its smallest keys (Zhang et al. take one per table as given), so of
  the keys whose candidates survive the exact inclusion check, each table keeps those with the fewest
  columns (``discover``): a table with a unique column that other tables reference is not the target
  of multi-column FKs, and chance UCCs of several columns in wide tables (80 in TPC-H lineitem at scale
  0.1, each with hundreds of candidate column tuples) do not swamp the ranking. The exact checks above
  stop at the first size with keys that have phase-1 candidates, which bounds their cost; the agree-set
  keys cost nothing and are all kept here. Phase 1's candidates alone cannot decide it: BML "includes" a
  column of a few values in almost any large column (five market segments in a unique comment column of
  TPC-H partsupp at scale 0.01, which would hide (ps_partkey, ps_suppkey)).
* Keys declared in the configuration (``fks.declared_keys``) are added, whatever their size.

What a batch changes. A table's checked keys are a function of its snapshot (its committed version) and
of the columns and combinations asked, nothing else. Each check is kept in ``state/fk_key_checks`` with
those inputs and its keys, and a later run reuses the keys of every check asked again with the same
inputs: only a table with a new version, or asked about other columns (other estimates, other tables'
candidates, other settings), is read again.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

from lakemeta.agreesets.discover import tracked_tables
from lakemeta.arrays import run_starts
from lakemeta.catalog import Catalog
from lakemeta.config import FkConfig
from lakemeta.fks.columns import ColumnCache, RowValues
from lakemeta.hashing import combine_hashes
from lakemeta.lake.batches import committed_bytes
from lakemeta.lake.tables import table_path
from lakemeta.sketches.hll import relative_standard_error
from lakemeta.spark.placement import collect_balanced, reads_tables_on_driver
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)

_ESTIMATE_SIGMAS = 4.0
_PREFIX_ROWS = 1 << 14
_FIRST_SHARED = 64  # shared hashes whose rows are compared before all of them are
_STRINGS = pa.list_(pa.string())
_CHECK_SCHEMA = from_arrow_schema(
    pa.schema(
        [
            ("table_name", pa.string()),
            ("path", pa.string()),
            ("version", pa.int64()),
            ("rows", pa.int64()),
            ("columns", _STRINGS),
            ("combinations", pa.list_(_STRINGS)),
        ]
    )
)
_FOUND = pa.schema([("table_name", pa.string()), ("columns", _STRINGS)])
_FOUND_SPARK = from_arrow_schema(_FOUND)
KEY_CHECKS = "state/fk_key_checks"
_KEY_CHECKS = pa.schema(
    [
        ("table_name", pa.string()),
        ("version", pa.int64()),
        ("singles", _STRINGS),
        ("combinations", pa.list_(_STRINGS)),
        ("keys", pa.list_(_STRINGS)),
    ]
)


@dataclass(frozen=True)
class Key:
    """A key candidate; ``source`` says how it was found (not part of its identity): ``agree_sets`` (a
    minimal unique column combination), ``checked`` (exactly, on a table without agree-sets), ``declared``."""

    table: str
    columns: tuple[str, ...]
    source: str = field(default="agree_sets", compare=False)


def is_unique(values: RowValues, column_hashes: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether every row holds a distinct tuple of non-null values, exactly; ``column_hashes`` are the
    columns' ``hash_strings`` results, combined here into tuple hashes (``hashing.combine_hashes``), and
    ``values`` gives the columns' values at the rows that need them.

    Rows whose 64-bit tuple hashes differ from every other row's are distinct; only rows sharing a hash
    (equal tuples, or a hash collision) are compared by their values, those of a few shared hashes first:
    in a non-key nearly every shared hash is a repeated tuple, which settles it.
    """
    if len(column_hashes[0][0]) > _PREFIX_ROWS and not is_unique(
        values, [(hashes[:_PREFIX_ROWS], valid[:_PREFIX_ROWS]) for hashes, valid in column_hashes]
    ):
        return False  # duplicates among the first rows already: most non-keys end here, cheaply
    hashes, valid = combine_hashes(column_hashes)
    if not valid.all():
        return False
    ordered = np.sort(hashes)
    starts = run_starts(ordered)
    shared = ordered[1:][starts[:-1] & ~starts[1:]]  # each shared hash once: the second of each run
    if not len(shared):
        return True
    first = shared[:_FIRST_SHARED]
    if _has_equal_rows(values, np.isin(hashes, first)):
        return False
    return len(first) == len(shared) or not _has_equal_rows(values, np.isin(hashes, shared))


def _has_equal_rows(values: RowValues, selected: np.ndarray) -> bool:
    rows = np.flatnonzero(selected)
    columns = values(rows)
    names = [f"c{i}" for i in range(len(columns))]
    return pa.table(dict(zip(names, columns, strict=True))).group_by(names).aggregate([]).num_rows < len(rows)


def _table_keys(table: dict, max_rows: int) -> list[dict]:
    """One table's listed columns that are unique, then its listed combinations that are minimal keys."""
    # One table per task row: what it reads ends with it, so a task holds one table's columns at a time.
    needed = set(table["columns"]).union(*table["combinations"])
    snapshot = (table["path"], table["version"])
    cache = ColumnCache(max_rows)
    cache.need(*snapshot, needed, table["rows"])
    known: dict[tuple[str, ...], bool] = {}

    def unique(columns: tuple[str, ...]) -> bool:
        if columns not in known:
            hashes = [cache.hashes(*snapshot, column) for column in columns]
            known[columns] = is_unique(cache.values(*snapshot, columns), hashes)
        return known[columns]

    def minimal_key(combination: tuple[str, ...]) -> bool:
        smaller = (
            inner
            for size in range(2, len(combination))
            for inner in itertools.combinations(combination, size)
        )
        return unique(combination) and not any(unique(inner) for inner in smaller)

    keys = [[column] for column in sorted(table["columns"]) if unique((column,))]
    by_size: dict[int, list[tuple[str, ...]]] = {}
    for combination in map(tuple, table["combinations"]):
        by_size.setdefault(len(combination), []).append(combination)
    for size in sorted(by_size):
        if keys:
            break  # the smallest keys with phase-1 candidates only (module docstring)
        keys = [list(c) for c in sorted(by_size[size]) if minimal_key(c)]
    return [{"table_name": table["table_name"], "columns": columns} for columns in keys]


def _unique_keys(max_rows: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_pylist(
                [key for table in batch.to_pylist() for key in _table_keys(table, max_rows)], schema=_FOUND
            )

    return run


def _check_identity(row: dict) -> tuple:
    """What a check's answer depends on: the table, its version, the columns and combinations asked."""
    combinations = tuple(tuple(combination) for combination in row["combinations"])
    return row["table_name"], row["version"], tuple(row["singles"]), combinations


def _checked_keys(
    catalog: Catalog,
    lake: Location,
    config: FkConfig,
    precision: int,
    referenced: Callable[[Key], bool],
    max_rows: int,
    kept_checks: pa.Table | None,
    driver_state_bytes: int,
) -> tuple[set[Key], pa.Table]:
    """Exactly checked keys of the tables without agree-set state (module docstring), and the checks
    asked (the rows of ``KEY_CHECKS``); those of ``kept_checks`` asked again are not read again. A task
    holds at most ``max_rows`` rows of values."""
    tracked = tracked_tables(catalog, driver_state_bytes=driver_state_bytes)
    tables = {
        row["table_name"]: row
        for row in catalog.read_small("tables").select(["table_name", "n_rows", "last_version"]).to_pylist()
        if row["table_name"] not in tracked and row["n_rows"]
    }
    estimates: dict[str, dict[str, int]] = {}  # null-free columns of those tables, their distinct estimates
    for column in catalog.read_small("columns").to_pylist():
        if column["table_name"] in tables and column["n_nulls"] == 0:
            estimates.setdefault(column["table_name"], {})[column["column_name"]] = (
                column["n_distinct_estimate"] or 0
            )
    sigmas = _ESTIMATE_SIGMAS * relative_standard_error(precision)
    rows = []
    for name, distinct in sorted(estimates.items()):
        n_rows = tables[name]["n_rows"]
        wanted = sorted(column for column in distinct if referenced(Key(name, (column,))))
        singles = [column for column in wanted if distinct[column] >= n_rows * (1 - sigmas)]
        combinations = [
            list(combination)
            for size in range(2, config.max_key_columns + 1)
            for combination in itertools.combinations(wanted, size)
            if math.prod(distinct[column] * (1 + sigmas) for column in combination) >= n_rows
            and referenced(Key(name, combination))
        ]
        if singles or combinations:
            work = len(set(singles).union(*combinations)) + len(combinations)
            path, version = str(table_path(lake, name)), tables[name]["last_version"]
            row = (name, path, version, n_rows, singles, combinations)
            rows.append((n_rows * work, row))
    asked = [
        {"table_name": name, "version": version, "singles": singles, "combinations": combinations}
        for _, (name, _, version, _, singles, combinations) in rows
    ]
    # one row per table checked, a few keys each: small by construction
    known = {
        _check_identity(check): check["keys"]
        for check in ([] if kept_checks is None else kept_checks.to_pylist())
    }
    to_read = [
        (weight, row)
        for (weight, row), check in zip(rows, asked, strict=True)
        if _check_identity(check) not in known
    ]
    found: dict[str, list[list[str]]] = {}
    if to_read:
        spark = catalog.spark
        describe_jobs(
            spark,
            f"FK keys: uniqueness of {sum(len(row[4]) for _, row in to_read)} columns and "
            f"{sum(len(row[5]) for _, row in to_read)} column combinations in {len(to_read)} tables",
        )
        read = committed_bytes(catalog, [row[0] for _, row in to_read])
        found_keys = collect_balanced(
            spark,
            to_read,
            _CHECK_SCHEMA,
            _unique_keys(max_rows),
            _FOUND_SPARK,
            on_driver=reads_tables_on_driver(read, driver_state_bytes),
        )
        for key in found_keys.to_pylist():  # the keys found, a few per table
            found.setdefault(key["table_name"], []).append(key["columns"])
    log.info("FK keys: %d tables checked, %d of them read (the others unchanged)", len(asked), len(to_read))
    checks = [
        {**check, "keys": sorted(known.get(_check_identity(check), found.get(check["table_name"], [])))}
        for check in asked
    ]
    keys = {
        Key(check["table_name"], tuple(columns), "checked") for check in checks for columns in check["keys"]
    }
    return keys, pa.Table.from_pylist(checks, schema=_KEY_CHECKS)


def rekeyed(before: pa.Table, after: pa.Table) -> set[str]:
    """The tables whose checked keys differ between two runs' key checks (``KEY_CHECKS``' rows): a check
    is asked where other tables would reference a column combination, so a table's checked keys may
    change in a batch that leaves the table itself unchanged."""

    def keys_of(checks: pa.Table) -> dict[str, list]:
        return {
            row["table_name"]: sorted(row["keys"])
            for row in checks.select(["table_name", "keys"]).to_pylist()
        }

    old, new = keys_of(before), keys_of(after)
    return {table for table in old.keys() | new.keys() if old.get(table, []) != new.get(table, [])}


def find_keys(
    catalog: Catalog,
    lake: Location,
    config: FkConfig,
    precision: int,
    referenced: Callable[[Key], bool],
    max_rows: int,
    kept_checks: pa.Table | None = None,
    driver_state_bytes: int = 0,
) -> tuple[list[Key], pa.Table]:
    """The key candidates of the lake's committed tables, sorted by table and columns, and the exact
    checks asked (``KEY_CHECKS``' rows; those in ``kept_checks`` are not read again): every null-free
    minimal unique column combination of the agree-sets (they cost nothing; whether a column is a key
    is a signal of the choice, ``signals``), the checked and the declared keys. ``referenced`` tells
    whether another table would hold FK candidates of a column combination (phase 2 of Zhang §4), which
    is where the checks look; they hold at most ``max_rows`` rows of values a task
    (``scan.max_task_rows``). ``driver_state_bytes``: ``agreesets.discover.tracked_tables``'."""
    columns = catalog.read_small("columns").select(["table_name", "column_name", "ordinal", "n_nulls"])
    nulls = {(row["table_name"], row["column_name"]): row["n_nulls"] for row in columns.to_pylist()}
    first_column: dict[str, str] = {}  # of each table, its first null-free column
    for row in columns.sort_by([("table_name", "ascending"), ("ordinal", "ascending")]).to_pylist():
        if row["n_nulls"] == 0:
            first_column.setdefault(row["table_name"], row["column_name"])
    keys = {
        Key(row["table_name"], tuple(row["columns"]) or (first_column[row["table_name"]],))
        for row in catalog.read_small("unique_column_combinations").to_pylist()
        if len(row["columns"]) <= config.max_key_columns
        and all(nulls.get((row["table_name"], column)) == 0 for column in row["columns"])
        and (row["columns"] or row["table_name"] in first_column)
    }
    checked, checks = _checked_keys(
        catalog, lake, config, precision, referenced, max_rows, kept_checks, driver_state_bytes
    )
    declared = {
        Key(table, tuple(columns), "declared")
        for table, listed in config.declared_keys.items()
        for columns in listed
    }
    log.info(
        "FK keys: %d from unique column combinations, %d checked in tables without agree-sets "
        "(%d with several columns), %d declared",
        len(keys),
        len(checked),
        sum(len(key.columns) > 1 for key in checked),
        len(declared),
    )
    # A key found several ways keeps the first: agree-sets, then checked, then declared.
    found = keys | checked | declared
    return sorted(found, key=lambda key: (key.table, key.columns)), checks
