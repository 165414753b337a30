"""Joinable-table search: MATE beside SCR, XASH beside Bloom super keys, and posting-list maintenance.

Corpus: the MATE paper's sample tables (``../shared/data/webtables/mate``: Dresden web tables and German
open data, 714 tables of two columns) plus generated tables, 5,000 tables in all by default. Generated
tables come in families: a family joins a sample table A row by row with a column of another sample
table (the "attribute"), and each of its tables holds a random subset of those rows (duplicates
included), one to three noise columns drawn from other sample tables, some rows with one key cell swapped
for another value of its column (rows that hold part of a key: the false positives super keys exist to
filter), a few nulls, and its columns in random order. Queries take rows of a family's A (2-column keys)
or of the family's rows (A's columns and the attribute: 3-column keys).

Figures, in one run:

1. latency per query of ``mate_search`` (XASH super keys, the posting lists' default hasher: the authors'
   scheme, 128 bits) and ``scr_search`` (Alg. 1 with exact checks of the candidate rows, §7.1.1) on the
   same in-process index (``index.PostingIndex``, the index the Delta search builds); both return the same
   top-k (checked). Target: MATE >= 10x faster. Reported whole, and without Alg. 1's lines 1-5 (the
   query's encoding and the posting-list fetch, the same work for both), as §7.2's Figure 4 reports it.
   Again with 500 generated tables replaced by tables of frequent key values (200-2,000 rows holding one
   key column of a family, without the rest of the key), which add non-joinable candidate rows.
2. precision of the row filter, joinable items / items passing (``SearchCounters``), at 128, 256 and 512
   bits, for XASH in the authors' scheme, XASH in the Eq. 5 scheme (the posting lists' frozen ``eq5``
   hasher, and for comparison one fitted to this corpus) and Bloom super keys with independent bits
   (H from the mean row width, §7.1.2, and the authors' H = 5). Targets: XASH (authors) at or above
   Bloom (paper's H) at 128 bits, and >= 0.95 at 512. Also every hasher but the fitted one at every size
   on corpora of 2,000 generated tables (plus the samples) with 1-3, 5-10, 10-30 and 1-30 noise columns
   per table: Bloom's H follows the mean row width, which the paper's corpora have at 5 (web tables) and
   26 (open data).
3. maintenance: itemising the whole corpus and building the index in process; and through Spark on a lake
   of Delta tables (a subset of the corpus), ``PostingLists.update`` for a batch changing a few tables
   beside a rebuild of the posting lists from the final snapshots (both compared for equality).

    .venv/bin/python bench/mate_search.py [--quick] [--tables 5000] [--queries 20] [--lake-tables 200]
        [--width-tables 2000] [--frequent-tables 500]

With ``--delta-path``, instead, MATE and SCR on the path users run (``bench/results/mate_search_delta.json``):
a lake of ``--tables`` Delta tables (the corpus above, or for fewer tables than 5,000 a corpus generated
the same way at that size), its posting lists built by ``PostingLists`` through Spark (``local[2]``), then
for each of ``--delta-queries`` queries per key size ``find_joinable`` (the function ``lakemeta joinable``
and the search DAG call) with ``scheme`` MATE and SCR in alternating order: latency, candidate rows, rows
fetched, Parquet files, bytes and seconds of the scans of the value lookup (step 1 of ``discover``) and of
the row fetch (step 3) apart (Spark's scan metrics: ``discover.FetchCounters``), and the
top-k of both checked against SCR on the in-process index of the same tables (exact checks: the brute
force's answer). Last, ``lakemeta joinable`` on that lake from the command line, which starts its own JVM.

    .venv/bin/python bench/mate_search.py --delta-path [--tables 5000] [--delta-queries 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from lakemeta.config import Config, JoinSearchConfig
from lakemeta.joinsearch.index import PostingIndex, table_postings
from lakemeta.joinsearch.normalise import normalise_values
from lakemeta.joinsearch.search import mate_search
from lakemeta.joinsearch.state import STATE, PostingLists, posting_hasher
from lakemeta.joinsearch.superkey import SuperKeyHasher, super_keys_from_binary
from lakemeta.joinsearch.xash import HASH_SIZES, XashHasher
from lakemeta.reference.bloom_superkey import AUTHORS_N_HASHES, BloomHasher
from lakemeta.reference.scr_search import scr_search

BENCH = Path(__file__).resolve().parent
SAMPLES = BENCH.parents[1] / "shared" / "data" / "webtables" / "mate"
SCRATCH = BENCH / "results" / "scratch" / "mate_search"
RESULT = BENCH / "results" / "mate_search.json"
DELTA_RESULT = BENCH / "results" / "mate_search_delta.json"
K = 10  # top-10, as in MATE's experiments (§7.1)
# Noise columns per generated table in the row-width sweep: the default corpus's, then wider ones.
NOISE_COLUMNS = ((1, 3), (5, 10), (10, 30), (1, 30))


def read_samples() -> list[pa.Table]:
    tables = []
    for path in sorted(SAMPLES.glob("*/*/sampled_final/*.csv")):
        table = pa_csv.read_csv(path)
        tables.append(table.rename_columns([f"c{i}" for i in range(table.num_columns)]))
    if not tables:
        raise SystemExit(f"no sample tables under {SAMPLES}")
    return tables


def as_strings(column: pa.ChunkedArray) -> pa.Array:
    return normalise_values(column).cast(pa.string())


def sample_cells(samples: list[pa.Table]) -> list[pa.Array]:
    """Every column of the sample tables as normalised strings: where noise columns draw their values."""
    return [as_strings(t.column(j)) for t in samples for j in range(t.num_columns)]


def noise_columns_of(
    rng: np.random.Generator, cells: list[pa.Array], n_rows: int, low: int, high: int
) -> list[pa.Array]:
    """Between ``low`` and ``high`` columns of ``n_rows`` values drawn from one sample column each."""
    columns = []
    for _ in range(int(rng.integers(low, high + 1))):
        noise = cells[rng.integers(len(cells))]
        columns.append(noise.take(pa.array(rng.integers(len(noise), size=n_rows))))
    return columns


def in_random_order(rng: np.random.Generator, columns: list[pa.Array]) -> pa.Table:
    order = rng.permutation(len(columns))
    return pa.table({f"c{j}": columns[o] for j, o in enumerate(order)})


def generate(
    rng: np.random.Generator, samples: list[pa.Table], n_tables: int, noise_columns: tuple[int, int] = (1, 3)
) -> tuple[list, list]:
    """Generated tables and the families' base rows (A's two columns and the attribute); each table has
    between ``noise_columns[0]`` and ``noise_columns[1]`` noise columns."""
    usable = [t for t in samples if t.num_rows >= 20]
    cells = sample_cells(samples)
    n_families = max(1, n_tables // 12)
    families = []
    for _ in range(n_families):
        a = usable[rng.integers(len(usable))]
        b = samples[rng.integers(len(samples))]
        attribute = as_strings(b.column(int(rng.integers(b.num_columns)))).take(
            pa.array(rng.integers(b.num_rows, size=a.num_rows))
        )
        families.append([as_strings(a.column(0)), as_strings(a.column(1)), attribute])
    generated = []
    for i in range(n_tables):
        base = families[i % n_families]
        n_base = len(base[0])
        rows = rng.integers(n_base, size=int(rng.integers(10, min(150, 2 * n_base) + 1)))
        columns = []
        for column in base:  # about one row in six holds only part of the family's key
            taken = column.take(pa.array(rows)).to_numpy(zero_copy_only=False).astype(object)
            swapped = np.flatnonzero(rng.random(len(rows)) < 0.06)
            donors = column.take(pa.array(rng.integers(n_base, size=len(swapped))))
            taken[swapped] = donors.to_numpy(zero_copy_only=False)
            columns.append(pa.array(taken, pa.string()))
        columns += noise_columns_of(rng, cells, len(rows), *noise_columns)
        nulls = rng.random((len(columns), len(rows))) < 0.02
        columns = [
            pc.if_else(pa.array(nulls[j]), pa.scalar(None, pa.string()), c) for j, c in enumerate(columns)
        ]
        generated.append(in_random_order(rng, columns))
    return generated, families


def with_frequent_key_values(
    rng: np.random.Generator,
    samples: list[pa.Table],
    generated: list[pa.Table],
    families: list,
    n_tables: int,
) -> list[pa.Table]:
    """The corpus with its last ``n_tables`` generated tables replaced by tables of 200-2,000 rows holding
    one key column of a family (values drawn with replacement) beside 1-3 noise columns: rows that hold a
    query's key value without the rest of its key, the candidates MATE's row filter exists to drop."""
    cells = sample_cells(samples)
    added = []
    for _ in range(n_tables):
        key = families[rng.integers(len(families))][int(rng.integers(2))]
        n_rows = int(rng.integers(200, 2001))
        columns = [key.take(pa.array(rng.integers(len(key), size=n_rows)))]
        added.append(in_random_order(rng, columns + noise_columns_of(rng, cells, n_rows, 1, 3)))
    return samples + generated[: len(generated) - n_tables] + added


def queries(rng: np.random.Generator, families: list, n_queries: int) -> list[tuple[int, list[pa.Array]]]:
    """(key size, key columns) pairs: 2-column keys from A, 3-column keys from a family's rows."""
    out = []
    for n_keys in (2, 3):
        for f in rng.choice(len(families), size=min(n_queries, len(families)), replace=False):
            base = families[f]
            rows = pa.array(rng.choice(len(base[0]), size=min(100, len(base[0])), replace=False))
            out.append((n_keys, [column.take(rows) for column in base[:n_keys]]))
    return out


def corpus_items(tables: list[pa.Table], hasher: SuperKeyHasher) -> tuple[list, float]:
    """Posting-list items of every table (``index.table_postings``) and the seconds it took."""
    start = time.perf_counter()
    items = [table_postings(t.columns, np.arange(t.num_rows), hasher) for t in tables]
    return items, time.perf_counter() - start


def build_index(items: list[pa.RecordBatch]) -> PostingIndex:
    return PostingIndex.from_arrays(
        pa.chunked_array([b.column("value") for b in items], pa.large_string()),
        np.concatenate([np.full(b.num_rows, t) for t, b in enumerate(items)]),
        np.concatenate([b.column("column_id").to_numpy() for b in items]),
        np.concatenate([b.column("row_id").to_numpy() for b in items]),
        np.concatenate([super_keys_from_binary(b.column("super_key")) for b in items]),
    )


def timed_search(search, repeat: int) -> tuple[float, object]:
    """The fastest of ``repeat`` runs: its seconds and its result (whose counters hold its stage times)."""
    best, best_result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = search()
        seconds = time.perf_counter() - start
        if seconds < best:
            best, best_result = seconds, result
    return best, best_result


def latency(index: PostingIndex, hasher: XashHasher, workload: list, repeat: int) -> dict:
    mate_search(index, workload[0][1], K, hasher)  # numba compilation
    scr_search(index, workload[0][1], K)
    per_key: dict[int, dict] = {}
    for n_keys, keys in workload:
        mate_s, mate = timed_search(lambda keys=keys: mate_search(index, keys, K, hasher), repeat)
        scr_s, scr = timed_search(lambda keys=keys: scr_search(index, keys, K), repeat)
        assert [t.joinability for t in mate.tables] == [t.joinability for t in scr.tables]
        names = (
            "mate_s", "scr_s", "mate_join_s", "scr_join_s", "fetch_s",
            "fetched", "checked", "passed", "candidates", "evaluated",
        )  # fmt: skip
        entry = per_key.setdefault(n_keys, {name: [] for name in names})
        entry["mate_s"].append(mate_s)
        entry["scr_s"].append(scr_s)
        entry["mate_join_s"].append(mate.counters.filter_and_join_seconds)
        entry["scr_join_s"].append(scr.counters.filter_and_join_seconds)
        entry["fetch_s"].append(mate.counters.fetch_seconds)
        entry["fetched"].append(mate.counters.items_fetched)
        entry["checked"].append(mate.counters.items_checked)
        entry["passed"].append(mate.counters.items_passed)
        entry["candidates"].append(mate.counters.tables_candidate)
        entry["evaluated"].append(mate.counters.tables_evaluated)
    out = {}
    for n_keys, entry in per_key.items():
        mate_s, scr_s = np.array(entry["mate_s"]), np.array(entry["scr_s"])
        mate_join_s, scr_join_s = np.array(entry["mate_join_s"]), np.array(entry["scr_join_s"])
        out[f"{n_keys}_column_keys"] = {
            "queries": len(mate_s),
            "mate_median_ms": 1000 * float(np.median(mate_s)),
            "scr_median_ms": 1000 * float(np.median(scr_s)),
            "mate_total_s": float(mate_s.sum()),
            "scr_total_s": float(scr_s.sum()),
            "speedup_total": float(scr_s.sum() / mate_s.sum()),
            "speedup_median_per_query": float(np.median(scr_s / mate_s)),
            # Alg. 1 lines 6-24 only (row filter, table rules, joinability), as §7.2's Figure 4 measures:
            # lines 1-5, the query's encoding and the posting-list fetch, are the same for both
            "fetch_median_ms": 1000 * float(np.median(entry["fetch_s"])),
            "mate_filter_and_join_median_ms": 1000 * float(np.median(mate_join_s)),
            "scr_filter_and_join_median_ms": 1000 * float(np.median(scr_join_s)),
            "speedup_excluding_fetch_total": float(scr_join_s.sum() / mate_join_s.sum()),
            "mean_tables_candidate": float(np.mean(entry["candidates"])),
            "mean_tables_evaluated": float(np.mean(entry["evaluated"])),
            "mean_items_fetched": float(np.mean(entry["fetched"])),
            # rows whose cells must be read to verify them: SCR every checked candidate, MATE the passing
            "mean_rows_verified_scr": float(np.mean(entry["checked"])),
            "mean_rows_verified_mate": float(np.mean(entry["passed"])),
        }
    return out


def precision(index: PostingIndex, hasher: SuperKeyHasher, workload: list) -> dict:
    passed = joinable = 0
    for _n_keys, keys in workload:
        counters = mate_search(index, keys, K, hasher).counters
        passed += counters.items_passed
        joinable += counters.items_joinable
    return {"items_passed": passed, "items_joinable": joinable, "precision": joinable / max(passed, 1)}


def hashers_compared(bits: int, mean_width: float) -> dict[str, SuperKeyHasher]:
    """The super-key hashers of the precision figures at ``bits`` (module docstring, 2.) but the fitted
    XASH, which needs the corpus's values."""
    return {
        "xash_authors": XashHasher.authors(bits),
        "xash_eq5": posting_hasher(JoinSearchConfig(hash_bits=bits, xash_scheme="eq5")),
        "bloom": BloomHasher.for_row_width(bits, mean_width),
        "bloom_h5": BloomHasher(bits, AUTHORS_N_HASHES),
    }


def describe(hasher: SuperKeyHasher) -> dict:
    """A hasher's parameters for the results (without character frequencies)."""
    return {k: v for k, v in hasher.to_dict().items() if k != "char_frequencies"}


def precision_by_row_width(samples: list[pa.Table], n_generated: int, n_queries: int) -> list[dict]:
    """Row-filter precision of XASH and Bloom super keys on corpora whose generated tables have more noise
    columns: Bloom's H follows each corpus's mean row width (§7.1.2), and the paper's corpora reach 26
    columns on average (open data, §7.1.2)."""
    out = []
    for noise in NOISE_COLUMNS:
        rng = np.random.default_rng(2024)
        generated, families = generate(rng, samples, n_generated, noise)
        corpus = samples + generated
        workload = queries(rng, families, n_queries)
        mean_width = float(np.mean([t.num_columns for t in corpus]))
        row = {"noise_columns": list(noise), "tables": len(corpus), "mean_columns": mean_width}
        for bits in HASH_SIZES:
            hashers = hashers_compared(bits, mean_width)
            row[str(bits)] = {
                name: precision(build_index(corpus_items(corpus, hasher)[0]), hasher, workload)["precision"]
                for name, hasher in hashers.items()
            }
            row[str(bits)]["bloom_hashes_per_value"] = hashers["bloom"].n_hashes
        out.append(row)
    return out


def spark_maintenance(tables: list[pa.Table], rng: np.random.Generator, n_changed: int) -> dict:
    """PostingLists.update on a Delta lake: the first build, a batch changing ``n_changed`` tables, and a
    rebuild from the final snapshots (which must equal the incrementally maintained state)."""
    from lakemeta.orchestration.pipeline import Pipeline
    from lakemeta.spark import get_session

    shutil.rmtree(SCRATCH, ignore_errors=True)
    lake = SCRATCH / "lake"
    for i, table in enumerate(tables):
        deltalake.write_deltalake(str(lake / f"t{i:05d}"), table)
    spark = get_session("local[2]", "bench mate search", catalog=SCRATCH / "catalog")

    def run(catalog: Path) -> tuple[float, int, object]:
        pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog))
        plan = pipeline.detect_batches()
        start = time.perf_counter()
        PostingLists(pipeline.catalog, lake, pipeline.config).update(plan)
        seconds = time.perf_counter() - start
        # Items inserted plus items removed, as the commit recorded them: a MERGE, or the append of
        # posting lists that held no items (a first build, a rebuild).
        metrics = pipeline.catalog.last_commit_metrics(STATE)
        if "numTargetRowsInserted" in metrics:
            changed = int(metrics["numTargetRowsInserted"]) + int(metrics["numTargetRowsDeleted"])
        else:
            changed = int(metrics["numOutputRows"])
        pipeline.commit_batches(plan)
        return seconds, changed, pipeline

    build_s, built_items, pipeline = run(SCRATCH / "catalog")
    changed_rows = 0
    for i in rng.choice(len(tables), size=n_changed, replace=False):
        path = str(lake / f"t{i:05d}")
        current = deltalake.DeltaTable(path)
        current.delete(f"c0 = '{_quoted(tables[i].column('c0')[0].as_py())}'")
        extra = tables[i].take(pa.array(rng.integers(tables[i].num_rows, size=5)))
        deltalake.write_deltalake(path, extra, mode="append")
        changed_rows += 5
    update_s, update_items, _ = run(SCRATCH / "catalog")
    rebuild_s, rebuild_items, reference = run(SCRATCH / "rebuilt")
    columns = ["value", "table_name", "column_name", "row_id"]
    ours = (
        pipeline.catalog.read(STATE)
        .select(*columns)
        .exceptAll(reference.catalog.read(STATE).select(*columns))
    )
    equal = ours.isEmpty() and pipeline.catalog.read(STATE).count() == reference.catalog.read(STATE).count()
    spark.stop()
    return {
        "lake_tables": len(tables),
        "first_build_s": build_s,  # includes the JVM's and the Python workers' warm-up
        "first_build_items": built_items,
        "batch_tables_changed": n_changed,
        "batch_rows_inserted": changed_rows,
        "batch_update_s": update_s,
        "batch_items_changed": update_items,
        "rebuild_s": rebuild_s,
        "rebuild_items": rebuild_items,
        "rebuild_over_update": rebuild_s / update_s,
        "incremental_equals_rebuild": bool(equal),
    }


def delta_path(n_samples: int, corpus: list[pa.Table], workload: list) -> dict:
    """MATE and SCR through ``find_joinable`` on Delta posting lists (module docstring, ``--delta-path``);
    the corpus's first ``n_samples`` tables are sample tables."""
    from lakemeta.joinsearch.discover import MATE, SCR, find_joinable
    from lakemeta.orchestration.pipeline import Pipeline
    from lakemeta.spark import get_session

    root = SCRATCH / "delta_path"
    shutil.rmtree(root, ignore_errors=True)
    lake, catalog = root / "lake", root / "catalog"
    start = time.perf_counter()
    names = [f"t{i:05d}" for i in range(len(corpus))]
    for name, table in zip(names, corpus, strict=True):
        deltalake.write_deltalake(str(lake / name), table)
    write_s = time.perf_counter() - start
    print(f"Delta path: {len(corpus)} lake tables written in {write_s:.1f} s")

    spark = get_session("local[2]", "bench mate search delta path", catalog=catalog)
    pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog))
    plan = pipeline.detect_batches()
    start = time.perf_counter()
    PostingLists(pipeline.catalog, lake, pipeline.config).update(plan)
    build_s = time.perf_counter() - start
    pipeline.commit_batches(plan)
    state = deltalake.DeltaTable(str(catalog / STATE))
    files = pa.table(state.get_add_actions(flatten=True))
    posting_lists = {
        "items": int(pc.sum(files["num_records"]).as_py()),
        "files": files.num_rows,
        "bytes": int(pc.sum(files["size_bytes"]).as_py()),
        "build_s": build_s,
    }
    print(f"Delta path: posting lists {posting_lists} ")

    hasher = posting_hasher(JoinSearchConfig())
    index = build_index(corpus_items(corpus, hasher)[0])
    hash_bits = JoinSearchConfig().hash_bits
    keyed = [(n_keys, pa.table({f"k{j}": c for j, c in enumerate(keys)})) for n_keys, keys in workload]
    find_joinable(
        pipeline.catalog, pipeline.lake, keyed[0][1], keyed[0][1].column_names, K, hash_bits, "warm-up"
    )
    per_query = []
    for q, (n_keys, query) in enumerate(keyed):
        keys = query.column_names
        runs = {}
        for scheme in (MATE, SCR) if q % 2 == 0 else (SCR, MATE):
            start = time.perf_counter()
            found = find_joinable(
                pipeline.catalog,
                pipeline.lake,
                query,
                keys,
                K,
                hash_bits,
                f"bench-{scheme}-{q}",
                scheme=scheme,
            )
            runs[scheme] = (time.perf_counter() - start, found)
        exact = scr_search(index, query.columns, K).tables
        truth = [(names[t.table_id], t.joinability) for t in exact]
        row: dict = {"key_columns": n_keys, "first": MATE if q % 2 == 0 else SCR}
        for scheme, (seconds, found) in runs.items():
            fetch = found.fetch
            row[scheme] = {
                "seconds": seconds,
                "fetch_s": fetch.fetch_seconds,
                "search_s": fetch.search_seconds,
                "candidate_rows": fetch.candidate_rows,
                "rows_fetched": fetch.rows_fetched,
                "items_read": fetch.items_read,
                "files_scanned": fetch.files_scanned,
                "bytes_scanned": fetch.bytes_scanned,
                "lookup_s": fetch.lookup.seconds,
                "lookup_files": fetch.lookup.files,
                "lookup_bytes": fetch.lookup.bytes,
                "row_fetch_s": fetch.row_fetch.seconds,
                "row_fetch_files": fetch.row_fetch.files,
                "row_fetch_bytes": fetch.row_fetch.bytes,
                "top_k_equals_exact": [(m.table_name, m.joinability) for m in found.matches] == truth,
                "joinability_equals_exact": [m.joinability for m in found.matches] == [j for _, j in truth],
            }
        row["scr_over_mate_seconds"] = row[SCR]["seconds"] / row[MATE]["seconds"]
        per_query.append(row)
        print(
            f"query {q} ({n_keys} keys): MATE {row[MATE]['seconds']:.2f} s, SCR {row[SCR]['seconds']:.2f} s; "
            f"rows fetched {row[MATE]['rows_fetched']} / {row[SCR]['rows_fetched']} of "
            f"{row[MATE]['candidate_rows']}; bytes scanned {row[MATE]['bytes_scanned']} / "
            f"{row[SCR]['bytes_scanned']}; lookup {row[MATE]['lookup_s']:.2f} / {row[SCR]['lookup_s']:.2f} "
            f"s, row fetch {row[MATE]['row_fetch_s']:.2f} / {row[SCR]['row_fetch_s']:.2f} s, "
            f"{row[MATE]['row_fetch_files']} / {row[SCR]['row_fetch_files']} files; "
            f"top-k exact: {row[MATE]['top_k_equals_exact']} / "
            f"{row[SCR]['top_k_equals_exact']}"
        )
    spark.stop()

    summary = {}
    for n_keys in sorted({r["key_columns"] for r in per_query}):
        rows = [r for r in per_query if r["key_columns"] == n_keys]
        figures: dict = {"queries": len(rows)}
        for scheme in (MATE, SCR):
            for name in (
                "seconds",
                "fetch_s",
                "search_s",
                "rows_fetched",
                "bytes_scanned",
                "files_scanned",
                "lookup_s",
                "lookup_files",
                "row_fetch_s",
                "row_fetch_files",
                "row_fetch_bytes",
            ):
                figures[f"{scheme}_median_{name}"] = float(np.median([r[scheme][name] for r in rows]))
        figures["median_candidate_rows"] = float(np.median([r[MATE]["candidate_rows"] for r in rows]))
        figures["scr_over_mate_total_seconds"] = sum(r[SCR]["seconds"] for r in rows) / sum(
            r[MATE]["seconds"] for r in rows
        )
        figures["scr_over_mate_total_fetch_s"] = sum(r[SCR]["fetch_s"] for r in rows) / sum(
            r[MATE]["fetch_s"] for r in rows
        )
        figures["scr_over_mate_rows_fetched"] = sum(r[SCR]["rows_fetched"] for r in rows) / max(
            1, sum(r[MATE]["rows_fetched"] for r in rows)
        )
        figures["scr_over_mate_bytes_scanned"] = sum(r[SCR]["bytes_scanned"] for r in rows) / sum(
            r[MATE]["bytes_scanned"] for r in rows
        )
        figures["scr_over_mate_total_row_fetch_s"] = sum(r[SCR]["row_fetch_s"] for r in rows) / sum(
            r[MATE]["row_fetch_s"] for r in rows
        )
        figures["scr_over_mate_row_fetch_bytes"] = sum(r[SCR]["row_fetch_bytes"] for r in rows) / max(
            1, sum(r[MATE]["row_fetch_bytes"] for r in rows)
        )
        figures["top_k_equal_exact"] = all(r[s]["top_k_equals_exact"] for r in rows for s in (MATE, SCR))
        figures["joinability_equal_exact"] = all(
            r[s]["joinability_equals_exact"] for r in rows for s in (MATE, SCR)
        )
        summary[f"{n_keys}_column_keys"] = figures
    return {
        "lake_tables": len(corpus),
        "sample_tables": n_samples,
        "lake_write_s": write_s,
        "posting_lists": posting_lists,
        "k": K,
        "summary": summary,
        "per_query": per_query,
        "cli": cli_latency(lake, catalog, [keyed[0], keyed[-1]]),
    }


def cli_latency(lake: Path, catalog: Path, keyed: list) -> list[dict]:
    """``lakemeta joinable`` on the lake for each query (a Parquet file in the lake), in a process of its
    own that starts its own JVM (no --remote)."""
    (lake / "queries").mkdir(exist_ok=True)
    runs = []
    for q, (_n_keys, query) in enumerate(keyed):
        path = lake / "queries" / f"q{q}.parquet"
        pq.write_table(query, path)
        command = [
            str(Path(sys.executable).with_name("lakemeta")),
            "joinable",
            "--lake", str(lake),
            "--catalog", str(catalog),
            "--master", "local[2]",
            "--query", f"queries/q{q}.parquet",
            "--key", ",".join(query.column_names),
            "--k", str(K),
        ]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy(), check=True)
        seconds = time.perf_counter() - start
        runs.append({"key_columns": query.num_columns, "seconds": seconds, "stdout": done.stdout})
        print(f"lakemeta joinable, {query.num_columns} key columns: {seconds:.1f} s")
    return runs


def _quoted(text: str | None) -> str:
    return (text or "").replace("'", "''")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small corpus, for a smoke run")
    parser.add_argument("--tables", type=int, default=5000, help="corpus size, sample tables included")
    parser.add_argument("--queries", type=int, default=20, help="queries per key size")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions per query (best kept)")
    parser.add_argument("--lake-tables", type=int, default=200, help="Delta tables of the Spark part")
    parser.add_argument("--width-tables", type=int, default=2000, help="generated tables per width sweep")
    parser.add_argument("--delta-path", action="store_true", help="only MATE and SCR through find_joinable")
    parser.add_argument("--delta-queries", type=int, default=5, help="queries per key size on the Delta path")
    parser.add_argument(
        "--frequent-tables",
        type=int,
        default=500,
        help="tables of frequent key values in the second latency run",
    )
    args = parser.parse_args()
    if args.quick:
        args.tables, args.queries, args.repeat, args.lake_tables, args.width_tables = 1000, 5, 1, 30, 300
        args.frequent_tables = 50
    rng = np.random.default_rng(2024)

    samples = read_samples()
    if args.delta_path and args.quick:
        args.tables, args.delta_queries = 200, 2
    in_lake = samples[: round(args.tables * len(samples) / 5000)]  # the default corpus's share of samples
    if not args.delta_path or args.tables >= len(samples):
        in_lake = samples
    generated, families = generate(rng, samples, max(0, args.tables - len(in_lake)))
    corpus = in_lake + generated
    workload = queries(rng, families, args.delta_queries if args.delta_path else args.queries)
    if args.delta_path:
        results = delta_path(len(in_lake), corpus, workload)
        results["command"] = " ".join(["bench/mate_search.py", *sys.argv[1:]])
        if not args.quick:
            DELTA_RESULT.write_text(json.dumps(results, indent=2) + "\n")
            print(f"wrote {DELTA_RESULT}")
        return
    n_items = sum(t.num_rows * t.num_columns for t in corpus)
    print(f"corpus: {len(corpus)} tables ({len(samples)} sample tables), up to {n_items} cells")

    default = posting_hasher(JoinSearchConfig())
    every_value = pa.chunked_array([as_strings(c) for t in corpus for c in t.columns], pa.string())
    distinct = pc.unique(pc.drop_null(every_value).combine_chunks())
    mean_width = float(np.mean([t.num_columns for t in corpus]))

    items, itemise_s = corpus_items(corpus, default)
    start = time.perf_counter()
    index = build_index(items)
    build_s = time.perf_counter() - start
    print(f"index: {index.n_items} items; itemise {itemise_s:.1f} s, build {build_s:.1f} s")
    results: dict = {
        "corpus": {
            "tables": len(corpus),
            "sample_tables": len(samples),
            "items": index.n_items,
            "distinct_values": len(distinct),
            "mean_columns": mean_width,
            "queries_per_key_size": args.queries,
            "k": K,
        },
        "index_in_process": {"itemise_s": itemise_s, "build_s": build_s},
    }
    results["latency"] = latency(index, default, workload, args.repeat)
    for name, figures in results["latency"].items():
        print(
            f"latency {name}: MATE {figures['mate_median_ms']:.2f} ms, SCR {figures['scr_median_ms']:.2f} ms "
            f"(median); SCR/MATE total {figures['speedup_total']:.1f}x; rows verified per query: SCR "
            f"{figures['mean_rows_verified_scr']:.0f}, MATE {figures['mean_rows_verified_mate']:.0f}; "
            f"without the fetch ({figures['fetch_median_ms']:.2f} ms): SCR/MATE "
            f"{figures['speedup_excluding_fetch_total']:.1f}x"
        )

    frequent = with_frequent_key_values(
        np.random.default_rng(7), samples, generated, families, args.frequent_tables
    )
    frequent_index = build_index(corpus_items(frequent, default)[0])
    results["latency_frequent_key_values"] = latency(frequent_index, default, workload, args.repeat)
    results["latency_frequent_key_values"]["tables_replaced"] = args.frequent_tables
    del frequent_index
    for name, figures in results["latency_frequent_key_values"].items():
        if isinstance(figures, dict):
            print(
                f"with {args.frequent_tables} tables of frequent key values, {name}: SCR/MATE total "
                f"{figures['speedup_total']:.2f}x, without the fetch "
                f"{figures['speedup_excluding_fetch_total']:.2f}x; "
                f"rows verified per query: SCR {figures['mean_rows_verified_scr']:.0f}, "
                f"MATE {figures['mean_rows_verified_mate']:.0f}"
            )

    results["precision"] = {}
    for bits in HASH_SIZES:
        variants = hashers_compared(bits, mean_width)
        variants["xash_eq5_fitted"] = XashHasher.from_corpus(distinct, bits)
        row = {}
        for name, hasher in variants.items():
            hashed = index if hasher == default else build_index(corpus_items(corpus, hasher)[0])
            row[name] = precision(hashed, hasher, workload)
            row[name]["hasher"] = describe(hasher)
        results["precision"][str(bits)] = row
        print(f"precision {bits} bits: " + ", ".join(f"{n} {f['precision']:.3f}" for n, f in row.items()))
    figures = results["precision"]
    results["precision_targets"] = {
        "xash_authors_at_or_above_bloom_at_128": figures["128"]["xash_authors"]["precision"]
        >= figures["128"]["bloom"]["precision"],
        "xash_authors_at_least_0.95_at_512": figures["512"]["xash_authors"]["precision"] >= 0.95,
    }
    print(f"targets: {results['precision_targets']}")

    results["precision_by_row_width"] = precision_by_row_width(samples, args.width_tables, args.queries)
    for row in results["precision_by_row_width"]:
        sizes = [
            f"{b} bits "
            + ", ".join(f"{n} {p:.3f}" for n, p in row[str(b)].items() if n != "bloom_hashes_per_value")
            for b in HASH_SIZES
        ]
        print(f"precision, {row['mean_columns']:.1f} columns per table: " + "; ".join(sizes))

    lake_tables = generated[: args.lake_tables]  # string columns: the batch deletes by value
    results["maintenance_spark"] = spark_maintenance(lake_tables, rng, max(1, args.lake_tables // 50))
    m = results["maintenance_spark"]
    print(
        f"Delta posting lists, {m['lake_tables']} tables: first build {m['first_build_s']:.1f} s, batch of "
        f"{m['batch_tables_changed']} tables {m['batch_update_s']:.1f} s, rebuild {m['rebuild_s']:.1f} s "
        f"({m['rebuild_over_update']:.1f}x); incremental == rebuild: {m['incremental_equals_rebuild']}"
    )
    if not args.quick:
        RESULT.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
