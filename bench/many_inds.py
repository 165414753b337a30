"""Many versus a SINDY-style Spark baseline: unary INDs over corpora of many small web-table-like tables.

Corpora: 1k, 5k and 20k generated tables (3-7 string columns, 12 rows each; every column draws its values
from one of 64 shared vocabularies of 200-50,000 words by a Zipf law with exponent 1.2 over the ranks, a
rank beyond the vocabulary leaving the cell empty, so that small columns of frequent words are included in
others: real INDs), plus the web tables of
``../shared/data/webtables`` (the MATE sample tables and the WDC tables). Each corpus is a lake of Delta
tables written with delta-rs.

Both sides read the same tables the same way (delta-rs in the executors, ``lakemeta.hashing.canonical``
values) and must report the same IND set, which the run checks:

- Many: ``lakemeta.inds.discover.discover_inclusion_dependencies`` as the pipeline runs it (signatures
  in one pass, candidates from the broadcast matrix, exact validation), filters off (the full IND set).
- SINDY (Kruse et al. 2015): each column's distinct values exploded to (value, column), grouped by value
  into attribute sets, and per column the intersection of the attribute sets of its values; a column
  without values is included in every other one.

Also on the 5k corpus: candidates proposed versus valid INDs for several Bloom settings (m, k, p) - the
false-positive cost - and indexed versus plain bit-vectors (§4.5) on the 20k corpus.

Run: ``.venv/bin/python bench/many_inds.py`` (about half an hour on 2 cores; ``--quick`` for a smoke run).
Generated corpora are kept under ``bench/results/scratch/many_inds`` and reused by later runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyspark.sql.functions as F
from deltalake import DeltaTable, write_deltalake
from pyspark import StorageLevel
from pyspark.sql import SparkSession

from lakemeta.hashing import canonical
from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.config import ManyConfig
from lakemeta.inds.discover import ManyRun, TableColumns, discover_inclusion_dependencies, table_descriptors
from lakemeta.inds.filters import FilterConfig
from lakemeta.lake.snapshots import read_columns

BENCH = Path(__file__).resolve().parent
RESULT = BENCH / "results" / "many_inds.json"
SCRATCH = BENCH / "results" / "scratch" / "many_inds"
WEB_TABLES = BENCH.parents[1] / "shared" / "data" / "webtables"

ROWS = 12
VOCABULARIES = 64
ZIPF_EXPONENT = 1.2
DEFAULT = ManyConfig(filters=FilterConfig.none())  # the paper's m, k, p and dep2refs; every IND kept
BLOOM_SETTINGS = [(64, 2, 1), (128, 3, 1), (256, 4, 2), (650, 6, 2), (1024, 6, 3)]

Pair = tuple[str, str, str, str]


def generate_corpus(folder: Path, n_tables: int, seed: int = 7) -> list[TableColumns]:
    """``n_tables`` small tables under ``folder`` (written once, reused afterwards)."""
    rng = np.random.default_rng(seed)
    # The vocabularies are the same for every corpus size: a larger corpus has more columns per word.
    sizes = np.exp(np.random.default_rng(0).uniform(np.log(200), np.log(50_000), VOCABULARIES)).astype(int)
    tables = []
    for i in range(n_tables):
        n_columns = int(rng.integers(3, 8))
        vocabulary = rng.integers(VOCABULARIES, size=n_columns)
        ranks = rng.zipf(ZIPF_EXPONENT, size=(ROWS, n_columns))
        # A rank beyond its vocabulary leaves the cell empty, as web tables have empty cells: the columns
        # of mostly frequent words are then the small ones that real INDs come from.
        columns = {
            f"c{j}": pa.array(
                [
                    f"w{vocabulary[j]:02d}_{rank}" if rank <= sizes[vocabulary[j]] else None
                    for rank in ranks[:, j]
                ]
            )
            for j in range(n_columns)
        }
        name = f"t{i:05d}"
        tables.append(TableColumns(name, str(folder / name), 0, list(columns)))
        if not (folder / name / "_delta_log").is_dir():
            write_deltalake(str(folder / name), pa.table(columns))
    return tables


def web_corpus(folder: Path) -> list[TableColumns]:
    """The shared web tables (MATE samples and WDC) as Delta tables, columns named c0, c1, ..."""
    tables = []
    paths = sorted(WEB_TABLES.glob("mate/*/*/sampled_final/*.csv")) + sorted(WEB_TABLES.glob("wdc/*.csv"))
    for i, path in enumerate(paths):
        name, table_folder = f"web{i:04d}_{path.stem}", folder / f"web{i:04d}"
        if not (table_folder / "_delta_log").is_dir():
            table = pa_csv.read_csv(path)
            write_deltalake(
                str(table_folder), table.rename_columns([f"c{j}" for j in range(table.num_columns)])
            )
        columns = [field.name for field in DeltaTable(str(table_folder)).schema().fields]
        tables.append(TableColumns(name, str(table_folder), 0, columns))
    return tables


def _distinct_cells(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """SINDY's input: (column, value) for each distinct non-null value, and (column, null) once per column
    so that columns without values are known."""
    for batch in batches:
        ids, values = [], []
        for table in batch.to_pylist():
            columns = read_columns(table["path"], table["version"], table["columns"])
            strings = [canonical(column) for column in columns]
            for offset, column in enumerate(strings):
                values += [pc.unique(pc.drop_null(column)).cast(pa.string()), pa.nulls(1, pa.string())]
                ids.append(np.full(len(values[-2]) + 1, table["first_column"] + offset, np.int64))
        if ids:
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.concatenate(ids)), pa.concat_arrays(values)], names=["column_id", "value"]
            )


def sindy(spark: SparkSession, tables: list[TableColumns]) -> tuple[set[Pair], float, float]:
    """SINDY's INDs over ``tables``, its wall time and the part of it spent reading the tables (the same
    reading as Many's: delta-rs, canonical values, each column's distinct values)."""
    names = [(table.name, column) for table in tables for column in table.columns]
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"SINDY over {len(tables)} tables")
    cells = table_descriptors(spark, tables).mapInArrow(_distinct_cells, "column_id long, value string")
    cells = cells.persist(StorageLevel.MEMORY_AND_DISK)
    cells.count()
    read_s = time.perf_counter() - started
    valued = cells.where(F.col("value").isNotNull())
    attribute_sets = valued.groupBy("value").agg(F.collect_set("column_id").alias("columns"))
    per_column = (
        attribute_sets.select(F.explode("columns").alias("dep"), "columns")
        .groupBy("dep")
        .agg(F.collect_list("columns").alias("sets"))
    )
    refs = per_column.select(
        "dep", F.aggregate("sets", F.col("sets")[0], lambda acc, x: F.array_intersect(acc, x)).alias("refs")
    )
    pairs = refs.select("dep", F.explode(F.array_remove("refs", F.col("dep"))).alias("ref")).toArrow()
    without_values = (
        cells.groupBy("column_id")
        .agg(F.count("value").alias("n"))
        .where("n = 0")
        .select("column_id")
        .toArrow()
    )
    seconds = time.perf_counter() - started
    cells.unpersist()
    found = {
        (*names[d], *names[r])
        for d, r in zip(pairs["dep"].to_pylist(), pairs["ref"].to_pylist(), strict=True)
    }
    for empty in without_values["column_id"].to_pylist():
        found |= {(*names[empty], *names[other]) for other in range(len(names)) if other != empty}
    return found, seconds, read_s


def many_pairs(run: ManyRun) -> set[Pair]:
    columns = ["dep_table", "dep_column", "ref_table", "ref_column"]
    return set(zip(*(run.result[c].to_pylist() for c in columns), strict=True))


def timed_many(spark: SparkSession, tables: list[TableColumns], config: ManyConfig) -> tuple[ManyRun, float]:
    started = time.perf_counter()
    run = discover_inclusion_dependencies(spark, tables, config)
    return run, time.perf_counter() - started


def compare(spark: SparkSession, label: str, tables: list[TableColumns]) -> dict:
    """Many and SINDY on one corpus: times, ratio, IND counts and whether the sets are equal."""
    run, many_s = timed_many(spark, tables, DEFAULT)
    baseline, sindy_s, read_s = sindy(spark, tables)
    found = many_pairs(run)
    figures = {
        "corpus": label,
        "tables": len(tables),
        "columns": run.n_columns,
        "many_s": many_s,
        "many_stage_s": run.stage_seconds,
        "sindy_s": sindy_s,
        "sindy_over_many": sindy_s / many_s,
        # Both read every table the same way; beyond that shared read, what each algorithm costs:
        "shared_read_s": read_s,
        "sindy_beyond_read_s": sindy_s - read_s,
        "many_beyond_read_s": many_s - read_s,
        "sindy_over_many_beyond_read": (sindy_s - read_s) / max(many_s - read_s, 1e-9),
        "candidates": run.n_candidates,
        "inds": len(found),
        "same_inds": found == baseline,
    }
    print(
        f"{label}: {len(tables)} tables, {run.n_columns} columns, {len(found)} INDs; Many {many_s:.1f} s "
        f"({', '.join(f'{k} {v:.1f} s' for k, v in run.stage_seconds.items())}), SINDY {sindy_s:.1f} s, "
        f"ratio {sindy_s / many_s:.1f}; reading {read_s:.1f} s of each, beyond it ratio "
        f"{figures['sindy_over_many_beyond_read']:.1f}; same INDs: {found == baseline}",
        flush=True,
    )
    if found != baseline:
        raise SystemExit(f"{label}: Many and SINDY disagree ({len(found ^ baseline)} pairs differ)")
    return figures


def bloom_settings(spark: SparkSession, tables: list[TableColumns]) -> list[dict]:
    """Candidates versus valid INDs for several (m, k, p): what the Bloom filters' false positives cost."""
    rows = []
    for m, k, p in BLOOM_SETTINGS:
        config = dataclasses.replace(DEFAULT, params=BloomParams(m, k, p))
        run, seconds = timed_many(spark, tables, config)
        rows.append(
            {
                "m": m,
                "k": k,
                "p": p,
                "candidates": run.n_candidates,
                "valid": run.n_valid,
                "false_positive_share": 1 - run.n_valid / max(run.n_candidates, 1),
                "seconds": seconds,
                "stage_s": run.stage_seconds,
            }
        )
        print(
            f"m={m} k={k} p={p}: {run.n_candidates} candidates, {run.n_valid} valid, {seconds:.1f} s",
            flush=True,
        )
    return rows


def indexed_versus_plain(spark: SparkSession, tables: list[TableColumns]) -> dict:
    """The same run with and without the indexed bit-vectors of §4.5."""
    figures = {}
    for indexed in (True, False):
        run, seconds = timed_many(spark, tables, dataclasses.replace(DEFAULT, indexed=indexed))
        figures["indexed" if indexed else "plain"] = {"seconds": seconds, "stage_s": run.stage_seconds}
    figures["candidate_stage_saving"] = 1 - (
        figures["indexed"]["stage_s"]["candidates"] / figures["plain"]["stage_s"]["candidates"]
    )
    print(f"indexed versus plain: {figures}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small corpora, for a smoke run")
    args = parser.parse_args()
    sizes = [200, 1000] if args.quick else [1000, 5000, 20000]
    from lakemeta.spark import get_session

    spark = get_session("local[2]", "bench many inds", catalog=SCRATCH / "catalog")
    started = time.perf_counter()
    corpora = {n: generate_corpus(SCRATCH / "generated", n) for n in sizes}
    print(f"corpora written in {time.perf_counter() - started:.0f} s", flush=True)
    results: dict = {
        "rows_per_table": ROWS,
        "vocabularies": VOCABULARIES,
        "zipf_exponent": ZIPF_EXPONENT,
        "load_average_before": os.getloadavg(),
    }
    timed_many(spark, corpora[sizes[0]][:50], DEFAULT)  # warm-up: Python workers, numba kernels
    results["many_versus_sindy"] = [compare(spark, f"generated {n}", corpora[n]) for n in sizes]
    if WEB_TABLES.is_dir():
        results["many_versus_sindy"].append(compare(spark, "shared web tables", web_corpus(SCRATCH / "web")))
    results["bloom_settings"] = {"corpus_tables": sizes[1], "runs": bloom_settings(spark, corpora[sizes[1]])}
    results["indexed_versus_plain"] = {
        "corpus_tables": sizes[-1],
        **indexed_versus_plain(spark, corpora[sizes[-1]]),
    }
    spark.stop()
    results["load_average_after"] = os.getloadavg()
    if not args.quick:
        RESULT.write_text(json.dumps(results, indent=2) + "\n")
        print(f"results in {RESULT}")


if __name__ == "__main__":
    main()
