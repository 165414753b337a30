"""Top-k n-ary joinable tables over the Delta posting lists: MATE's Algorithm 1 (§6) fed by Spark.

A search reads from ``state/posting_lists`` only what Algorithm 1 looks at, never the whole index:

1. lines 3-4: the posting lists of the initial column's values (the key column with the fewest distinct
   values, §6.1): the state joined with those values;
2. lines 16-20, on the driver: the row filter of §6.3 (``search.row_filter``). A fetched item passes
   with a query key tuple of its value when the tuple's super key is covered by the item's row super key;
   the filter never drops a joinable row (§6.3, Lemma), and a row none of whose items pass is not looked
   at again;
3. line 21 ("MATE retrieves the exact values", §6): the cells of the passing rows that hold a value of
   another key column, the state joined with those rows and those values. The posting lists are
   partitioned by a bucket of ``table_name``: this fetch reads only the partitions of the buckets of
   those rows' tables.

SCR, the baseline of §7.1.1, runs the same steps without step 2: it fetches the cells of every candidate
row and checks each row exactly against the query tuples (``scheme=SCR``). Where MATE saves is therefore
step 3, the rows fetched and the partitions read for them; step 1, a lookup by value in posting lists laid
out by table bucket, scans every partition for both (SCR reads no ``super_key`` column there).

A mapping of Eq. 2 sends each key column to a column of the row that holds the tuple's value there, so
steps 1 and 3 fetch every cell a mapping can use. They form a posting-list index (:class:`PostingIndex`)
on which :func:`~lakemeta.joinsearch.search.mate_search` runs Algorithm 1 with both table filters and
computes the exact joinability J (Eq. 2) and its best column mapping. The query is hashed with the
hasher recorded with the posting lists (``state``), as the index was.

Results go to the catalog table ``joinable_tables`` (query_id, rank, table_name, joinability,
column_mapping as a JSON object from query key column to table column), replacing the rows of the same
``query_id`` in one commit, so a repeated search leaves one answer per query id.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyspark.sql.functions as F
from pyspark.sql import DataFrame, SparkSession

from lakemeta.catalog import Catalog
from lakemeta.config import IngestConfig
from lakemeta.joinsearch.index import PostingIndex
from lakemeta.joinsearch.search import (
    EncodedQuery,
    SearchCounters,
    algorithm_1,
    encode_query,
    row_filter,
    tuple_super_keys,
)
from lakemeta.joinsearch.state import STATE, recorded_hasher
from lakemeta.joinsearch.xash import XashHasher
from lakemeta.lake.batches import plan_batches, watermarks
from lakemeta.lake.ingest import CSV_SUFFIXES, PARQUET_SUFFIXES, read_csv_rows
from lakemeta.lake.snapshots import read_table
from lakemeta.spark.portable import arrow_frame, is_connect
from lakemeta.storage import Location

log = logging.getLogger(__name__)

RESULTS = "joinable_tables"
# Query ids name results in a Delta predicate: letters, digits and the punctuation of Airflow run ids.
_QUERY_ID = re.compile(r"[A-Za-z0-9_.:+\-]{1,200}")
_ITEM_COLUMNS = ["value", "table_name", "column_name", "row_id", "super_key"]
MATE = "mate"  # candidate rows filtered by super keys before their cells are fetched (§6.3)
SCR = "scr"  # every candidate row's cells fetched and checked exactly (§7.1.1)


@dataclass(frozen=True)
class JoinableMatch:
    """One of the top-k tables: its rank (1 = best), J of Eq. 2 and the best key-column mapping."""

    rank: int
    table_name: str
    joinability: int
    column_mapping: dict[str, str]  # query key column -> column of the table, in key order


@dataclass
class ScanRead:
    """What one fetch step read from the posting lists: Spark's ``number of files read`` and ``size of
    files read`` of its scans (``FileSourceScanExec``), the Parquet files left after partition pruning and
    Delta's data skipping, whole, although column pruning reads only the columns the step selects; and the
    step's seconds. Spark Connect does not expose a plan's metrics to its client: files and bytes are None
    there."""

    files: int | None = 0
    bytes: int | None = 0
    seconds: float = 0.0


@dataclass
class FetchCounters:
    """What a search read from the posting lists (the module docstring's steps 1 and 3) and its times.

    ``lookup`` is step 1, the same for MATE and SCR; ``row_fetch`` is step 3, where the row filter saves.
    """

    candidate_rows: int = 0  # rows with an item of an initial-column value (step 1)
    rows_fetched: int = 0  # rows whose cells step 3 fetched: the passing ones (MATE), every candidate (SCR)
    items_read: int = 0  # items steps 1 and 3 returned
    lookup: ScanRead = field(default_factory=ScanRead)
    row_fetch: ScanRead = field(default_factory=ScanRead)
    fetch_seconds: float = 0.0  # steps 1-3 (Spark jobs and the driver's row filter)
    search_seconds: float = 0.0  # Algorithm 1 on the fetched items

    @property
    def files_scanned(self) -> int | None:
        return _sum_known(self.lookup.files, self.row_fetch.files)

    @property
    def bytes_scanned(self) -> int | None:
        return _sum_known(self.lookup.bytes, self.row_fetch.bytes)


def _sum_known(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class JoinableSearch:
    """A search's top-k, best first, with what it read and what Algorithm 1 did."""

    matches: list[JoinableMatch]
    fetch: FetchCounters = field(default_factory=FetchCounters)
    search: SearchCounters = field(default_factory=SearchCounters)


def find_joinable(
    catalog: Catalog,
    lake: Location,
    query: pa.Table,
    key_columns: list[str],
    k: int,
    hash_bits: int,
    query_id: str,
    exclude_tables: Sequence[str] = (),
    scheme: str = MATE,
) -> JoinableSearch:
    """The top-k tables of the lake by joinability J with ``query`` on ``key_columns`` (MATE, Alg. 1).

    ``hash_bits`` must be the size of the stored super keys (the configured one); ``exclude_tables``
    leaves tables out, e.g. the lake table the query was taken from. Tables of equal J rank by name; at
    the k-th place the tables Algorithm 1 visits first stay (more items of the initial column, then name).
    ``scheme`` SCR runs the baseline of §7.1.1 (module docstring) with the same top-k. The results
    replace those stored under ``query_id`` in ``joinable_tables``.
    """
    if scheme not in (MATE, SCR):
        raise ValueError(f"scheme {scheme!r}: use {MATE!r} or {SCR!r}")
    _check_request(query, key_columns, k, query_id)
    # The check reads every lake table's Delta log, most of a search's time on 5,000 tables
    # (bench/mate_search.py --delta-path; docs/performance.md, "Measurements behind the code"): it runs
    # beside the search, which mostly waits on Spark.
    with ThreadPoolExecutor(max_workers=1) as pool:
        behind = pool.submit(_warn_if_behind, catalog, lake)
        found = _top_k(catalog, query, key_columns, k, hash_bits, query_id, exclude_tables, scheme)
        behind.result()
    _store(catalog, query_id, found.matches)
    log.info("query %s: %d joinable tables (k = %d)", query_id, len(found.matches), k)
    return found


def _top_k(
    catalog: Catalog,
    query: pa.Table,
    key_columns: list[str],
    k: int,
    hash_bits: int,
    query_id: str,
    exclude_tables: Sequence[str],
    scheme: str,
) -> JoinableSearch:
    """:func:`find_joinable`'s search, without storing its results."""
    hasher = recorded_hasher(catalog)
    if hasher is not None and hasher.hash_bits != hash_bits:
        raise ValueError(
            f"the posting lists hold {hasher.hash_bits}-bit super keys, the search asks for {hash_bits}: "
            "use the configured hash size, or rebuild the state with the new one"
        )
    key_arrays = [query.column(name) for name in key_columns]
    encoded = encode_query(key_arrays)
    matches: list[JoinableMatch] = []
    fetch, counters = FetchCounters(), SearchCounters()
    if hasher is not None and len(encoded.tuples):
        started = time.perf_counter()
        index, tables, columns = _candidate_index(catalog, encoded, hasher, exclude_tables, scheme, fetch)
        searched = time.perf_counter()
        fetch.fetch_seconds = searched - started
        if index.n_items:
            result = algorithm_1(index, key_arrays, k, hasher if scheme == MATE else None)
            fetch.search_seconds = time.perf_counter() - searched
            counters = result.counters
            log.info(
                "query %s (%s): %d distinct key tuples; %d items of the initial column in %d tables, %d of "
                "them passing the row filter; %d tables evaluated, %d skipped by rule 2, %d never visited; "
                "%d of %d candidate rows fetched; files (bytes) scanned: %s (%s) for the value lookup, "
                "%s (%s) for the rows",
                query_id,
                scheme,
                len(encoded.tuples),
                counters.items_fetched,
                counters.tables_candidate,
                counters.items_passed,
                counters.tables_evaluated,
                counters.tables_skipped_rule2,
                counters.tables_stopped_rule1,
                fetch.rows_fetched,
                fetch.candidate_rows,
                fetch.lookup.files,
                fetch.lookup.bytes,
                fetch.row_fetch.files,
                fetch.row_fetch.bytes,
            )
            found = result.tables  # J descending, then table name
            matches = [
                JoinableMatch(
                    rank,
                    tables[t.table_id],
                    t.joinability,
                    {key: columns[c] for key, c in zip(key_columns, t.column_mapping, strict=True)},
                )
                for rank, t in enumerate(found, start=1)
            ]
    return JoinableSearch(matches, fetch, counters)


def _check_request(query: pa.Table, key_columns: list[str], k: int, query_id: str) -> None:
    if not _QUERY_ID.fullmatch(query_id):
        raise ValueError(f"query id {query_id!r}: use 1-200 letters, digits and _ . : + -")
    if not key_columns:
        raise ValueError("name at least one key column")
    if len(set(key_columns)) != len(key_columns):
        raise ValueError(f"key columns repeat: {key_columns}")
    missing = [name for name in key_columns if name not in query.column_names]
    if missing:
        raise ValueError(
            f"key columns {missing} are not in the query table (its columns: {query.column_names})"
        )
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def _warn_if_behind(catalog: Catalog, lake: Location) -> None:
    """The posting lists reflect the lake as of the last run; say so when tables changed since."""
    pending = plan_batches(lake, watermarks(catalog))
    if pending:
        log.warning(
            "%d lake tables changed since the last run (%s ...): the search sees them as they were",
            len(pending),
            ", ".join(b.table_name for b in pending[:3]),
        )


def _candidate_index(
    catalog: Catalog,
    encoded: EncodedQuery,
    hasher: XashHasher,
    exclude_tables: Sequence[str],
    scheme: str,
    fetch: FetchCounters,
) -> tuple[PostingIndex, list[str], list[str]]:
    """Steps 1-3 of the module docstring (SCR: 1 and 3, every candidate row fetched): the items Algorithm 1
    needs, as an index with integer table and column ids, and the names behind those ids. ``fetch``
    receives the rows and items read and the scans' files and bytes."""
    tuples, distinct, initial = encoded.tuples, encoded.distinct_values, encoded.initial_column
    # SCR never reads a super key: its index holds one zero word per item, which nothing looks at.
    item_columns = _ITEM_COLUMNS if scheme == MATE else _ITEM_COLUMNS[:-1]
    state = catalog.read(STATE)
    if exclude_tables:
        state = state.where(~F.col("table_name").isin(list(exclude_tables)))
    initial_codes = np.unique(tuples[:, initial])
    fetched = _items_with_values(
        catalog, state, item_columns, distinct.take(pa.array(initial_codes)), fetch.lookup
    )
    candidate_rows = fetched.select(["table_name", "row_id"]).group_by(["table_name", "row_id"]).aggregate([])
    fetch.candidate_rows = candidate_rows.num_rows
    rows = _passing_rows(fetched, encoded, hasher) if scheme == MATE else candidate_rows
    parts = [fetched]
    other_codes = np.unique(np.delete(tuples, initial, axis=1))
    if len(rows) and len(other_codes):
        fetch.rows_fetched = rows.num_rows
        # Only the partitions of the rows' tables' buckets (a static filter on the partition column, which
        # Delta prunes by; the semi-join alone would read every partition).
        of_rows = catalog.read(STATE, pc.unique(rows["table_name"]).to_pylist())
        with_rows = of_rows.join(arrow_frame(catalog.spark, rows), ["table_name", "row_id"], "left_semi")
        parts.append(
            _items_with_values(
                catalog, with_rows, item_columns, distinct.take(pa.array(other_codes)), fetch.row_fetch
            )
        )
    items = pa.concat_tables(parts)
    fetch.items_read = items.num_rows
    # Ids in name order: Algorithm 1's ties (tables with as many fetched items, mappings collecting as many
    # tuples) then resolve by name, whatever order Spark returned the items in.
    tables, table_ids = _codes_in_name_order(items["table_name"])
    columns, column_ids = _codes_in_name_order(items["column_name"])
    row_ids = items["row_id"].to_numpy()
    # A cell fetched by both steps (its value belongs to the initial and another key column) counts once.
    _, first = np.unique(np.column_stack([table_ids, column_ids, row_ids]), axis=0, return_index=True)
    super_keys = (
        _super_keys(items["super_key"], hasher.n_words)[first]
        if scheme == MATE
        else np.zeros((len(first), 1), np.uint64)
    )
    index = PostingIndex.from_arrays(
        items["value"].take(pa.array(first)), table_ids[first], column_ids[first], row_ids[first], super_keys
    )
    return index, tables, columns


def _codes_in_name_order(names: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    distinct = pc.unique(names).sort()
    return distinct.to_pylist(), pc.index_in(names, value_set=distinct).to_numpy().astype(np.int64)


def _items_with_values(
    catalog: Catalog, items: DataFrame, columns: list[str], values: pa.Array, read: ScanRead
) -> pa.Table:
    """The items whose value is one of ``values`` (a join on ``value``, executed by Spark); the files and
    bytes its scans read and its seconds are added to ``read``."""
    started = time.perf_counter()
    wanted = arrow_frame(catalog.spark, pa.table({"value": values.cast(pa.string())}))
    frame = items.join(wanted, "value", "left_semi").select(*columns)
    # the posting lists of the query's values (MATE's Alg. 1 holds them in memory): the query table's
    # distinct key values times the cells of the lake holding each; a value held by thousands of columns
    # (a dense lake's small integers) makes it large, which the search index's layout is to address
    rows = frame.toArrow()
    read.seconds += time.perf_counter() - started
    if is_connect(catalog.spark):
        read.files = read.bytes = None
    elif read.files is not None and read.bytes is not None:
        for scan in _file_scans(frame._jdf.queryExecution().executedPlan()):
            metrics = scan.metrics()
            read.files += int(metrics.apply("numFiles").value())
            read.bytes += int(metrics.apply("filesSize").value())
    return rows


def _file_scans(plan) -> list:  # noqa: ANN001 - a py4j handle of a SparkPlan
    """The file scans (``FileSourceScanExec``) an executed plan ran: through adaptive execution's final
    plan and its query stages; a reused exchange read nothing again."""
    kind = plan.getClass().getSimpleName()
    if kind == "FileSourceScanExec":
        return [plan]
    if kind == "ReusedExchangeExec":
        return []
    if kind == "AdaptiveSparkPlanExec":
        return _file_scans(plan.executedPlan())
    if kind.endswith("QueryStageExec"):
        return _file_scans(plan.plan())
    children = plan.children().iterator()
    scans = []
    while children.hasNext():
        scans += _file_scans(children.next())
    return scans


def _super_keys(keys: pa.ChunkedArray, n_words: int) -> np.ndarray:
    """Stored super keys (array<long>) as uint64 words of shape (n, n_words)."""
    flat = pa.chunked_array(keys).combine_chunks()
    if len(flat) and not np.all(np.diff(flat.offsets.to_numpy()) == n_words):
        raise ValueError(f"stored super keys are not all {n_words} words long: rebuild the posting lists")
    return flat.flatten().to_numpy().astype(np.int64).view(np.uint64).reshape(len(flat), n_words)


def _passing_rows(fetched: pa.Table, encoded: EncodedQuery, hasher: XashHasher) -> pa.Table:
    """``table_name, row_id`` of the rows with an item passing the row filter (Alg. 1, line 18)."""
    codes = pc.index_in(fetched["value"], value_set=encoded.distinct_values)
    passing = row_filter(
        codes.to_numpy(zero_copy_only=False).astype(np.int64),
        _super_keys(fetched["super_key"], hasher.n_words),
        tuple_super_keys(encoded, hasher),
    )
    rows = fetched.select(["table_name", "row_id"]).filter(pa.array(passing))
    return rows.group_by(["table_name", "row_id"]).aggregate([])


def _store(catalog: Catalog, query_id: str, matches: list[JoinableMatch]) -> None:
    rows = pa.table(
        {
            "query_id": [query_id] * len(matches),
            "rank": [m.rank for m in matches],
            "table_name": [m.table_name for m in matches],
            "joinability": [m.joinability for m in matches],
            "column_mapping": [json.dumps(m.column_mapping, ensure_ascii=False) for m in matches],
        }
    )
    catalog.replace_small(RESULTS, rows, f"query_id = '{query_id}'")  # ids are checked against _QUERY_ID


@dataclass(frozen=True)
class QueryTable:
    """A search's query: its rows, and the lake table they were read from (None for a file)."""

    rows: pa.Table
    lake_table: str | None


def load_query_table(
    spark: SparkSession, lake: Location, source: str | Path, csv: IngestConfig | None = None
) -> QueryTable:
    """A query table: a lake table (its name; the current version) or a CSV / Parquet file in the lake.

    ``source`` is a path relative to the lake root, or an absolute one (a URI for a lake in an object
    store); it must lie inside the lake root (on local disk after symbolic links are followed), anything
    else is refused. CSV files are read by `lakemeta ingest`'s reader with the ingest options (``csv``;
    defaults as `lakemeta ingest`), so that a query file's values are typed and spelled as the same file's
    values in the lake (``lake.ingest.read_csv_rows``).
    """
    path = _inside_lake(lake, str(source))
    if path.is_delta_table():
        return QueryTable(read_table(path.uri), lake.relative(path))
    if not path.exists():
        raise FileNotFoundError(f"query {str(source)!r}: no lake table or file at {path}")
    suffix = posixpath.splitext(path.name)[1].lower()
    if suffix in PARQUET_SUFFIXES:
        return QueryTable(pq.read_table(path.fs_path, filesystem=path.filesystem), None)
    if suffix in CSV_SUFFIXES:
        return QueryTable(read_csv_rows(spark, path, csv or IngestConfig()), None)
    raise ValueError(f"query {str(source)!r}: not a lake table, a CSV or a Parquet file")


def _inside_lake(lake: Location, source: str) -> Location:
    if lake.is_local:
        root, given = lake.local_path(), Path(source)
        path = Location.parse((given if given.is_absolute() else root / given).resolve())
    else:
        path = Location.parse(source) if "://" in source else lake / source
    if not lake.contains(path):
        raise ValueError(f"query {source!r} is not inside the lake {lake}: put the query file there")
    return path


def search_lake(
    catalog: Catalog,
    lake: Location,
    source: str | Path,
    key_columns: list[str],
    k: int,
    hash_bits: int,
    query_id: str,
    csv: IngestConfig | None = None,
) -> list[JoinableMatch]:
    """:func:`find_joinable` for a query named by :func:`load_query_table`; a lake table used as the query
    is left out of its own results."""
    query = load_query_table(catalog.spark, lake, source, csv)
    excluded = [query.lake_table] if query.lake_table else []
    return find_joinable(catalog, lake, query.rows, key_columns, k, hash_bits, query_id, excluded).matches


def parse_key_columns(text: str) -> list[str]:
    """``COL,COL`` as the list of column names (blanks around names dropped)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def format_matches(matches: list[JoinableMatch]) -> str:
    """The ranked tables as lines: rank, joinability, table, column mapping."""
    if not matches:
        return "no joinable table found"
    width = max(len(m.table_name) for m in matches)
    return "\n".join(
        f"{m.rank:>3}  J={m.joinability:<8} {m.table_name:<{width}}  "
        + ", ".join(f"{key} -> {column}" for key, column in m.column_mapping.items())
        for m in matches
    )
