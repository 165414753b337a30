"""Many from the value sets: first discovery, a batch of 10 changed tables, nothing changed; and Many
against a SINDY-style Spark baseline, on a corpus of 20,000 web-table-like tables.

Corpus: 20,000 generated tables (3-7 string columns, 12 rows each; every column draws its values from one
of 64 shared vocabularies of 200-50,000 words by a Zipf law with exponent 1.2 over the ranks, a rank
beyond the vocabulary leaving the cell empty, so that small columns of frequent words are included in
others: real INDs), written once with delta-rs under ``bench/results/scratch/many_inds/generated`` and
copied into a fresh lake per run; plus the web tables of ``../shared/data/webtables`` where present.

The lake's state (``column_profile`` and ``column_values``, the state Many reads) is built by the
pipeline's scan first and timed apart: it is the incremental state every run maintains anyway.

- Incremental discovery: the step ``inclusion_dependencies`` as ``lakemeta run`` and the DAG task run it
  (``Pipeline.discover(step, if_stale=True)``: a read of Delta logs, then the step when its results do
  not reflect the newest committed run: inputs, candidates, validation, the catalog writes and the
  discovery's record) on the first run, after a batch appending rows to 10 tables, and with nothing
  changed; each time's share of the first (targets: ≤ 5% and ≤ 2%), and the result after the batch
  against a discovery from scratch of the same state (equal, or the run fails).
- Many against SINDY (Kruse et al. 2015) from the same value sets, both from scratch: each column's value
  hashes as (value, column), grouped by value into attribute sets, and per column the intersection of the
  attribute sets of its values; a column without values is included in every other one. One warm-up run
  of each, then Many, SINDY, SINDY, Many (the order alternated); the mean of each. Both must report the
  same IND set. Filters off: the full IND set.
- Validation on the driver against the paper's: a candidate between two columns of at most
  ``inds.driver_validation_values`` distinct values checked on their kept value hashes in numba
  (``inds.containment``), against every candidate through Spark's anti-join (Alg. 7 distributed, the
  baseline: ``driver_validation_values=0``); a warm-up of each, then ours, the baseline, the baseline,
  ours; the validation stage's mean time of each and their ratio; the same INDs or the run fails.
- Signatures sized to their columns against the paper's one m (``inds.sized_signatures``; baseline
  ``max_doublings=0``): the candidates left to validate, Many's time, signature bytes per column; a warm-up
  of each, then ours, the baseline, the baseline, ours; the same INDs or the run fails.
- Candidates proposed versus valid INDs for several Bloom settings (m, k, p) - the false-positive cost -
  and indexed versus plain bit-vectors (§4.5), from the same state.
- Memory: bytes on disk per column of ``state/ind_columns`` (Many's kept inputs) and of
  ``state/column_values``.

Run: ``.venv/bin/python bench/many_inds.py`` (``--tables 1000`` for a smoke run, which writes no result).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyspark.sql.functions as F
from deltalake import write_deltalake

from lakemeta.catalog import Catalog
from lakemeta.config import Config, IndConfig
from lakemeta.inds import discover as inds_discover
from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.columns import INPUTS
from lakemeta.inds.config import ManyConfig, many_config
from lakemeta.inds.discover import ManyRun, discover_inclusion_dependencies, lake_columns
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.spark.portable import describe_jobs
from lakemeta.values.state import ColumnValues

BENCH = Path(__file__).resolve().parent
RESULT = BENCH / "results" / "many_inds.json"
SCRATCH = BENCH / "results" / "scratch" / "many_inds"
WEB_TABLES = BENCH.parents[1] / "shared" / "data" / "webtables"

ROWS = 12
VOCABULARIES = 64
ZIPF_EXPONENT = 1.2
INDS = IndConfig(filters="none")  # the paper's m, k, p and dep2refs; every IND kept
DEFAULT: ManyConfig = many_config(INDS)
BLOOM_SETTINGS = [(64, 2, 1), (128, 3, 1), (256, 4, 2), (650, 6, 2), (1024, 6, 3)]
CHANGED_TABLES = 10
BATCHES = 3
STEP = "inclusion_dependencies"

Pair = tuple[str, str, str, str]


def generate_corpus(folder: Path, n_tables: int, seed: int = 7) -> list[str]:
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
        tables.append(name)
        if not (folder / name / "_delta_log").is_dir():
            write_deltalake(str(folder / name), pa.table(columns))
    return tables


def web_corpus(folder: Path) -> list[str]:
    """The shared web tables (MATE samples and WDC) as Delta tables, columns named c0, c1, ..."""
    tables = []
    paths = sorted(WEB_TABLES.glob("mate/*/*/sampled_final/*.csv")) + sorted(WEB_TABLES.glob("wdc/*.csv"))
    for i, path in enumerate(paths):
        name = f"web{i:04d}"
        table_folder = folder / name
        if not (table_folder / "_delta_log").is_dir():
            table = pa_csv.read_csv(path)
            write_deltalake(
                str(table_folder), table.rename_columns([f"c{j}" for j in range(table.num_columns)])
            )
        tables.append(name)
    return tables


def lake_with_state(corpus: Path, tables: list[str], label: str) -> tuple[Pipeline, Path, float]:
    """A fresh lake holding a copy of the corpus's ``tables``, and its catalog with the state Many reads
    built by one run of the pipeline's scan (timed)."""
    lake, catalog = SCRATCH / f"lake_{label}", SCRATCH / f"catalog_{label}"
    for folder in (lake, catalog):
        shutil.rmtree(folder, ignore_errors=True)
    lake.mkdir(parents=True)
    for name in tables:
        shutil.copytree(corpus / name, lake / name)
    from lakemeta.spark import get_session

    spark = get_session("local[2]", "bench many inds", catalog=catalog)
    pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog, inds=INDS))
    return pipeline, lake, update_state(pipeline)


def update_state(pipeline: Pipeline) -> float:
    """One run updating the state Many reads (column profile, value sets); its wall time."""
    started = time.perf_counter()
    plan = pipeline.detect_batches()
    if plan is not None:
        for component in ("column_profile", "column_values"):
            pipeline.update_state(plan, component)
        pipeline.commit_batches(plan)
    return time.perf_counter() - started


def timed_step(pipeline: Pipeline) -> float:
    """The discovery step as the pipeline runs it: nothing when its results are current, else the step,
    writes and record included."""
    started = time.perf_counter()
    pipeline.discover(STEP, if_stale=True)
    return time.perf_counter() - started


def timed_many(catalog: Catalog, config: ManyConfig) -> tuple[ManyRun, float]:
    """Many from scratch over the value sets, without writing."""
    started = time.perf_counter()
    run = discover_inclusion_dependencies(catalog, config, incremental=False)
    # the INDs collected, as the run before the executors' path returned them
    run = dataclasses.replace(run, result=run.table(), on_driver=True, persisted=[])
    return run, time.perf_counter() - started


def sindy(catalog: Catalog) -> tuple[set[Pair], float]:
    """SINDY's INDs over the value sets and its wall time."""
    started = time.perf_counter()
    spark = catalog.spark
    columns = lake_columns(catalog)
    table_names, column_names = columns.table_names, columns.column_names
    ids = spark.createDataFrame(
        pa.table(
            {
                "table_name": table_names,
                "column_name": column_names,
                "column_id": pa.array(np.arange(len(column_names)), pa.int64()),
            }
        )
    )
    describe_jobs(spark, f"SINDY over {len(column_names)} columns")
    cells = (
        catalog.read(ColumnValues.state_table())
        .join(F.broadcast(ids), ["table_name", "column_name"])
        .select("column_id", "hash")
    )
    attribute_sets = cells.groupBy("hash").agg(F.collect_set("column_id").alias("columns"))
    per_column = (
        attribute_sets.select(F.explode("columns").alias("dep"), "columns")
        .groupBy("dep")
        .agg(F.collect_list("columns").alias("sets"))
    )
    refs = per_column.select(
        "dep", F.aggregate("sets", F.col("sets")[0], lambda acc, x: F.array_intersect(acc, x)).alias("refs")
    )
    pairs = refs.select("dep", F.explode(F.array_remove("refs", F.col("dep"))).alias("ref")).toArrow()
    valued = set(per_column.select("dep").toArrow()["dep"].to_pylist())
    seconds = time.perf_counter() - started
    names = list(zip(table_names.to_pylist(), column_names.to_pylist(), strict=True))
    found = {
        (*names[d], *names[r])
        for d, r in zip(pairs["dep"].to_pylist(), pairs["ref"].to_pylist(), strict=True)
    }
    for empty in set(range(len(names))) - valued:
        found |= {(*names[empty], *names[other]) for other in range(len(names)) if other != empty}
    return found, seconds


def many_pairs(result: pa.Table) -> set[Pair]:
    columns = ["dep_table", "dep_column", "ref_table", "ref_column"]
    return set(zip(*(result[c].to_pylist() for c in columns), strict=True))


def compare(catalog: Catalog, label: str) -> dict:
    """Many and SINDY from scratch on one lake's value sets: mean times (order alternated after a warm-up
    of each), ratio, IND counts and whether the sets are equal."""
    timed_many(catalog, DEFAULT)
    sindy(catalog)
    many_times, sindy_times = [], []
    run, seconds = timed_many(catalog, DEFAULT)
    many_times.append(seconds)
    baseline, seconds = sindy(catalog)
    sindy_times.append(seconds)
    sindy_times.append(sindy(catalog)[1])
    many_times.append(timed_many(catalog, DEFAULT)[1])
    found = many_pairs(run.result)
    many_s, sindy_s = float(np.mean(many_times)), float(np.mean(sindy_times))
    figures = {
        "corpus": label,
        "tables": run.n_tables,
        "columns": len(run.inputs.column_names),
        "many_s": many_times,
        "many_stage_s": run.stage_seconds,
        "sindy_s": sindy_times,
        "sindy_over_many": sindy_s / many_s,
        "candidates": run.n_candidates,
        "validated_on_driver": run.n_validated_on_driver,
        "inds": len(found),
        "same_inds": found == baseline,
    }
    print(
        f"{label}: {run.n_tables} tables, {len(run.inputs.column_names)} columns, {len(found)} INDs; Many "
        f"{many_s:.1f} s ({', '.join(f'{k} {v:.1f} s' for k, v in run.stage_seconds.items())}), SINDY "
        f"{sindy_s:.1f} s, ratio {sindy_s / many_s:.2f}; same INDs: {found == baseline}",
        flush=True,
    )
    if found != baseline:
        raise SystemExit(f"{label}: Many and SINDY disagree ({len(found ^ baseline)} pairs differ)")
    return figures


def driver_validation(catalog: Catalog, label: str) -> dict:
    """Many with small columns' candidates validated on the driver against every candidate validated by
    Spark (the paper's Alg. 7, distributed): stage times, order alternated after a warm-up; same INDs."""
    baseline = dataclasses.replace(DEFAULT, driver_validation_values=0)
    timed_many(catalog, DEFAULT)
    timed_many(catalog, baseline)
    runs: dict[str, list[tuple[ManyRun, float]]] = {"driver": [], "spark": []}
    for name, config in (("driver", DEFAULT), ("spark", baseline), ("spark", baseline), ("driver", DEFAULT)):
        runs[name].append(timed_many(catalog, config))
    ours, theirs = runs["driver"][0][0], runs["spark"][0][0]
    same = many_pairs(ours.result) == many_pairs(theirs.result)
    validation = {
        name: float(np.mean([r.stage_seconds["validation"] for r, _ in pairs]))
        for name, pairs in runs.items()
    }
    figures = {
        "corpus": label,
        "candidates": ours.n_candidates,
        "validated_on_driver": ours.n_validated_on_driver,
        "inds": len(ours.result),
        "driver_s": [seconds for _, seconds in runs["driver"]],
        "spark_s": [seconds for _, seconds in runs["spark"]],
        "validation_driver_s": validation["driver"],
        "validation_spark_s": validation["spark"],
        "validation_spark_over_driver": validation["spark"] / validation["driver"],
        "same_inds": same,
    }
    print(
        f"{label}: {ours.n_validated_on_driver} of {ours.n_candidates} candidates validated on the driver; "
        f"validation {validation['driver']:.2f} s against {validation['spark']:.2f} s all by Spark "
        f"({validation['spark'] / validation['driver']:.1f}x); same INDs: {same}",
        flush=True,
    )
    if not same:
        raise SystemExit(f"{label}: the driver's and Spark's validations disagree")
    return figures


def sized_signatures(catalog: Catalog, label: str) -> dict:
    """Signatures sized to their columns (``inds.sized_signatures``) against the paper's one m for all:
    candidates left to validate, stage times (order alternated after a warm-up), signature bytes per column;
    same INDs."""
    baseline = dataclasses.replace(DEFAULT, max_doublings=0)
    timed_many(catalog, DEFAULT)
    timed_many(catalog, baseline)
    runs: dict[str, list[tuple[ManyRun, float]]] = {"sized": [], "paper": []}
    for name, config in (("sized", DEFAULT), ("paper", baseline), ("paper", baseline), ("sized", DEFAULT)):
        runs[name].append(timed_many(catalog, config))
    ours, theirs = runs["sized"][0][0], runs["paper"][0][0]
    same = many_pairs(ours.result) == many_pairs(theirs.result)

    def mean(name: str, stage: str | None = None) -> float:
        return float(np.mean([r.stage_seconds[stage] if stage else s for r, s in runs[name]]))

    figures = {
        "corpus": label,
        "proposed": ours.n_candidates,
        "validated_sized": ours.n_checked,
        "validated_paper": theirs.n_checked,
        "inds": len(ours.result),
        "sized_s": mean("sized"),
        "paper_s": mean("paper"),
        "candidates_stage_sized_s": mean("sized", "candidates"),
        "candidates_stage_paper_s": mean("paper", "candidates"),
        "validation_sized_s": mean("sized", "validation"),
        "validation_paper_s": mean("paper", "validation"),
        "paper_over_sized": mean("paper") / mean("sized"),
        "signature_bytes_per_column_sized": 8 * len(ours.inputs.signature_words) / len(ours.inputs.levels),
        "signature_bytes_per_column_paper": 8
        * len(theirs.inputs.signature_words)
        / len(theirs.inputs.levels),
        "columns_per_level": np.bincount(ours.inputs.levels).tolist(),
        "same_inds": same,
    }
    print(
        f"{label}: {ours.n_candidates} proposed; {ours.n_checked} left to validate with sized signatures, "
        f"{theirs.n_checked} with the paper's ({len(ours.result)} INDs); Many {figures['sized_s']:.2f} s "
        f"against {figures['paper_s']:.2f} s; same INDs: {same}",
        flush=True,
    )
    if not same:
        raise SystemExit(f"{label}: sized and the paper's signatures disagree")
    return figures


def incremental(pipeline: Pipeline, lake: Path, tables: list[str]) -> dict:
    """First discovery, ``BATCHES`` batches of ``CHANGED_TABLES`` changed tables each (as hourly runs
    follow one another: the kept inputs of a batch after the first are no longer in the lake's order),
    nothing changed: times and shares of the first; each batch's result against a discovery from scratch."""
    first_s = timed_step(pipeline)
    rng = np.random.default_rng(3)
    state_s, batch_s, same = [], [], []
    for batch in range(BATCHES):
        for name in sorted(rng.choice(tables, CHANGED_TABLES, replace=False).tolist()):
            # two rows of words from the table's own first column and a new word: its value sets change
            write_deltalake(
                str(lake / name),
                pa.table({"c0": pa.array(["w00_1", f"new_{name}_{batch}"])}),
                mode="append",
                schema_mode="merge",
            )
        state_s.append(update_state(pipeline))
        batch_s.append(timed_step(pipeline))
        stored = pipeline.catalog.read_small(inds_discover.RESULTS).drop_columns(["first_run"])
        scratch = discover_inclusion_dependencies(pipeline.catalog, DEFAULT, incremental=False).table()
        same.append(stored.equals(scratch.cast(stored.schema)))
    unchanged_s = timed_step(pipeline)
    figures = {
        "first_discovery_s": first_s,
        "changed_tables": CHANGED_TABLES,
        "state_update_of_each_batch_s": state_s,
        "discovery_after_each_batch_s": batch_s,
        "batch_share_of_first": float(np.median(batch_s)) / first_s,
        "discovery_with_nothing_changed_s": unchanged_s,
        "nothing_changed_share_of_first": unchanged_s / first_s,
        "equal_to_discovery_from_scratch": all(same),
        "inds": len(stored),
    }
    print(f"incremental: {figures}", flush=True)
    if not all(same):
        raise SystemExit(f"the incremental result differs from a discovery from scratch after batches {same}")
    return figures


def memory(pipeline: Pipeline) -> dict:
    """Bytes on disk per column of Many's kept inputs and of the value sets (the latest version's Parquet
    files and the Delta log)."""
    n_columns = len(lake_columns(pipeline.catalog).column_names)

    def size(name: str) -> int:
        """The table's latest version: its data files and its log (older versions' files are VACUUM's)."""
        location = pipeline.catalog.location(name)
        log = Path(location.uri) / "_delta_log"
        files = [Path(uri) for uri in location.delta_table().file_uris()]
        return sum(path.stat().st_size for path in [*files, *log.iterdir()] if path.is_file())

    figures = {
        "columns": n_columns,
        "ind_columns_bytes_per_column": size(INPUTS) / n_columns,
        "column_values_bytes_per_column": size(ColumnValues.state_table()) / n_columns,
    }
    print(f"memory: {figures}", flush=True)
    return figures


def bloom_settings(catalog: Catalog) -> list[dict]:
    """Candidates versus valid INDs for several (m, k, p): what the Bloom filters' false positives cost."""
    rows = []
    for m, k, p in BLOOM_SETTINGS:
        config = dataclasses.replace(DEFAULT, params=BloomParams(m, k, p))
        run, seconds = timed_many(catalog, config)
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


def indexed_versus_plain(catalog: Catalog) -> dict:
    """The same run with and without the indexed bit-vectors of §4.5."""
    figures = {}
    for indexed in (True, False):
        run, seconds = timed_many(catalog, dataclasses.replace(DEFAULT, indexed=indexed))
        figures["indexed" if indexed else "plain"] = {"seconds": seconds, "stage_s": run.stage_seconds}
    figures["candidate_stage_saving"] = 1 - (
        figures["indexed"]["stage_s"]["candidates"] / figures["plain"]["stage_s"]["candidates"]
    )
    print(f"indexed versus plain: {figures}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=20_000, help="corpus size (the results need 20,000)")
    args = parser.parse_args()
    started = time.perf_counter()
    tables = generate_corpus(SCRATCH / "generated", args.tables)
    results: dict = {
        "rows_per_table": ROWS,
        "vocabularies": VOCABULARIES,
        "zipf_exponent": ZIPF_EXPONENT,
        "load_average_before": os.getloadavg(),
    }
    pipeline, lake, state_s = lake_with_state(SCRATCH / "generated", tables, "generated")
    print(
        f"{len(tables)} tables copied and their state built in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    results["state_build_s"] = state_s

    def record(section: str, figures: object) -> None:
        """Each section's figures as soon as they are measured (the results file only at 20,000 tables)."""
        results[section] = figures
        if args.tables == 20_000:
            RESULT.write_text(json.dumps(results, indent=2) + "\n")

    record("incremental", incremental(pipeline, lake, tables))
    record("memory", memory(pipeline))
    record("many_versus_sindy", [compare(pipeline.catalog, f"generated {len(tables)}")])
    record("driver_validation", [driver_validation(pipeline.catalog, f"generated {len(tables)}")])
    record("sized_signatures", [sized_signatures(pipeline.catalog, f"generated {len(tables)}")])
    record("bloom_settings", bloom_settings(pipeline.catalog))
    record("indexed_versus_plain", indexed_versus_plain(pipeline.catalog))
    if WEB_TABLES.is_dir():
        web = web_corpus(SCRATCH / "web")
        web_pipeline, _, _ = lake_with_state(SCRATCH / "web", web, "web")
        record(
            "many_versus_sindy",
            [*results["many_versus_sindy"], compare(web_pipeline.catalog, "shared web tables")],
        )
        record(
            "driver_validation",
            [*results["driver_validation"], driver_validation(web_pipeline.catalog, "shared web tables")],
        )
        record(
            "sized_signatures",
            [*results["sized_signatures"], sized_signatures(web_pipeline.catalog, "shared web tables")],
        )
    pipeline.catalog.spark.stop()
    record("load_average_after", os.getloadavg())
    print(f"results in {RESULT}" if args.tables == 20_000 else "a smoke run: no results written")


if __name__ == "__main__":
    main()
