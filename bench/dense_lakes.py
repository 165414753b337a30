"""A dense lake of small statistics datasets: the first run and a 10-table batch, step by step.

Per step: its seconds, the peak resident memory of each kind of process, and the catalog's result counts.

The lake (``lakemeta.demo.dense``): ``--tables`` small tables of the kind R and Python packages ship, whose
columns share values massively (row ids 1..n, years, small counts, codes 1..k, a few vocabularies), so
that most column pairs overlap: the lake that stresses the pairwise discovery steps. It is generated once
per label, seed and generator source under ``scratch/dense_lakes/<label>/lake`` (``--fresh``: again), and
each run works on a hard-linked copy of it (Delta never rewrites a file in place), so the batch's changes
never reach the cached lake. Its shape is recorded beside it: tables, columns, rows, distinct values, and
the column pairs sharing a value and the inclusions between columns, by the pipeline's canonical values
(``lakemeta.hashing.canonical``, so 3, 3.0 and "3" are one value; counted on a sample of the columns past
``--pair-columns``, and scaled).

The run: ``Pipeline`` steps as ``lakemeta run`` runs them (detect, scan, every state component, commit,
every discovery step, the quality gate's audit) on a local Spark (``local[2]``), after a warm-up run on 20
tables of the same generator (numba's compilation and the JVM's first jobs are not a step's cost). Per step:
seconds, the peak RSS of the driver, the JVM and the Python workers (summed, and the largest) from
``bench/memory.py``, what the step returns (the batches planned, the discovery steps run), and after the
commit and each discovery step the row counts of the catalog's result tables, from the Parquet footers (the
tables are never read whole). Then 10 tables change (``change_dense_tables``: 5 get rows appended, 5 lose
rows) and the steps run again.

The baseline (``--placement-baseline``), in the same run after the batch (last: a process keeps the memory
a baseline grew to, which would count in the peaks of the steps after it):
the inclusion estimates and Many from scratch (nothing written), once placed as configured and once with
every pair on the driver, as the steps ran before their pairs moved to the executors (no driver bound on
bytes or pairs); seconds, peaks, the driver's growth over the step and the ratios, baseline over
configured. A baseline the memory guard stops ends the run there, as any step the guard stops.

The memory guard (``--memory-limit-gb``, all processes together): when it fires, the step is recorded
``exceeded`` with its peaks so far, the results file is written and the process ends with exit code 2.
The results file is also written after every step, so a process killed from outside keeps what it measured.
Each run updates its label's entry of ``bench/results/dense_lakes.json`` and keeps the others.

    .venv/bin/python bench/dense_lakes.py [--tables 2000] [--seed 0] [--set SECTION.KEY=VALUE ...]
        [--memory-limit-gb 14] [--label dense_2000] [--fresh] [--pair-columns 20000] [--no-warm-up]
        [--placement-baseline]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from memory import PEAK_KEYS, Measurement, MemoryLimitExceededError, MemorySampler

import lakemeta.demo.dense as dense
from lakemeta.config import Config, add_settings_argument, load_config, parse_settings
from lakemeta.hashing import canonical
from lakemeta.inds.config import many_config
from lakemeta.inds.discover import discover_inclusion_dependencies
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.registry import DISCOVERY_STEPS
from lakemeta.sketches.discover import estimate_inclusions
from lakemeta.spark import get_session
from lakemeta.storage import Location

BENCH = Path(__file__).resolve().parent
RESULT = BENCH / "results" / "dense_lakes.json"
SCRATCH = BENCH / "results" / "scratch" / "dense_lakes"
CHANGED_TABLES = 10
WARM_UP_TABLES = 20
MASTER = "local[2]"
EXIT_CODE_GUARD = 2
# Result tables whose rows are counted after the commit and each discovery step.
COUNTED = [
    "tables",
    "columns",
    "unique_column_combinations",
    "functional_dependencies",
    "inclusion_estimates",
    "inclusion_dependencies",
    "fk_candidates",
    "table_overlaps",
]


def git_commit() -> dict:
    """The checkout measured: its commit and whether tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=BENCH.parent, capture_output=True, text=True)
        return done.stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "-uno"))}


def machine() -> dict:
    return {
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / (1 << 30), 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def generator_fingerprint() -> str:
    """The generator's source: a cached lake of another version of it is generated again."""
    return hashlib.sha256(Path(dense.__file__).read_bytes()).hexdigest()[:16]


def lake_shape(n_tables: int, seed: int, pair_columns: int) -> dict:
    """The lake's shape from its tables generated again in memory (as written, before any change)."""
    started = time.perf_counter()
    rows = cells = nulls = 0
    by_type: dict[str, int] = {}
    per_column: list[pa.Array] = []  # each column's distinct canonical values
    for _, table in dense.dense_tables(n_tables, seed):
        rows += table.num_rows
        cells += table.num_rows * table.num_columns
        for field, column in zip(table.schema, table.columns, strict=True):
            by_type[str(field.type)] = by_type.get(str(field.type), 0) + 1
            nulls += column.null_count
            values = pc.unique(column.combine_chunks().drop_null())
            per_column.append(pc.unique(canonical(values).cast(pa.large_string())))
    sizes = np.array([len(values) for values in per_column], dtype=np.int64)
    encoded = pa.chunked_array(per_column, pa.large_string()).combine_chunks().dictionary_encode()
    incidence = sp.csr_matrix(
        (
            np.ones(int(sizes.sum()), dtype=np.float32),
            encoded.indices.to_numpy(zero_copy_only=False),
            np.concatenate([[0], np.cumsum(sizes)]),
        ),
        shape=(len(per_column), len(encoded.dictionary)),
    )
    shape = {
        "tables": n_tables,
        "columns": len(per_column),
        "columns_by_type": by_type,
        "rows": rows,
        "cells": cells,
        "null_cells": nulls,
        "distinct_values_per_column_summed": int(sizes.sum()),
        "distinct_values_in_lake": len(encoded.dictionary),
        **overlapping_pairs(incidence, sizes, pair_columns),
    }
    shape["seconds"] = round(time.perf_counter() - started, 1)
    return shape


def overlapping_pairs(incidence: sp.csr_matrix, sizes: np.ndarray, pair_columns: int) -> dict:
    """Column pairs sharing at least one value, and inclusions X ⊆ Y between distinct columns (ordered
    pairs, nulls left out, empty columns never included): exact up to ``pair_columns`` columns, else
    counted among a sample of that many and scaled to all pairs."""
    n = incidence.shape[0]
    picked = np.arange(n)
    if n > pair_columns:
        picked = np.sort(np.random.default_rng(0).choice(n, pair_columns, replace=False))
    sample, sample_sizes = incidence[picked], sizes[picked]
    sharing = included = 0
    block = 256
    for start in range(0, len(picked), block):
        shared = (sample[start : start + block] @ sample.T).tocoo()
        row = shared.row + start
        sharing += int(np.count_nonzero(shared.col > row))
        included += int(np.count_nonzero((shared.col != row) & (shared.data == sample_sizes[row])))
    m = len(picked)
    unordered, ordered = n * (n - 1) / 2, n * (n - 1)
    sampled_unordered, sampled_ordered = max(m * (m - 1) / 2, 1), max(m * (m - 1), 1)
    return {
        "column_pairs": int(unordered),
        "column_pairs_sharing_a_value": round(sharing * unordered / sampled_unordered),
        "column_inclusions": round(included * ordered / sampled_ordered),
        "pairs_counted_on": "all columns" if m == n else f"a sample of {m} columns, scaled",
    }


def prepared_lake(label: str, n_tables: int, seed: int, fresh: bool, pair_columns: int) -> tuple[Path, dict]:
    """The label's cached lake, generated first when absent, stale or ``fresh``; its description."""
    lake, described = SCRATCH / label / "lake", SCRATCH / label / "lake.json"
    wanted = {"tables": n_tables, "seed": seed, "generator": generator_fingerprint()}
    if not fresh and lake.is_dir() and described.exists():
        cached = json.loads(described.read_text())
        if {key: cached.get(key) for key in wanted} == wanted:
            print(f"lake: cached at {lake}", flush=True)
            return lake, cached
    shutil.rmtree(lake, ignore_errors=True)
    described.unlink(missing_ok=True)
    print(f"lake: writing {n_tables} tables (seed {seed}) to {lake}", flush=True)
    started = time.perf_counter()
    dense.write_dense_lake(lake, n_tables, seed)
    written_s = time.perf_counter() - started
    print(f"lake: written in {written_s:.1f} s; its shape ...", flush=True)
    description = {
        **wanted,
        "written_s": round(written_s, 1),
        "shape": lake_shape(n_tables, seed, pair_columns),
    }
    described.write_text(json.dumps(description, indent=2) + "\n")
    return lake, description


def working_copy(lake: Path, copy: Path) -> Path:
    """A hard-linked copy: Delta writers add files and never change one, so the cache stays as written."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(lake, copy, copy_function=os.link)
    return copy


def catalog_rows(catalog: Path) -> dict[str, int | None]:
    """Rows of the counted result tables (None: not written yet) and the accepted FK candidates, from
    the Parquet footers and, for ``accepted``, that one column."""
    counts: dict[str, int | None] = {}
    for name in COUNTED:
        path = Location.parse(catalog / name)
        counts[name] = path.delta_dataset().count_rows() if path.is_delta_table() else None
    candidates = Location.parse(catalog / "fk_candidates")
    counts["fk_accepted"] = (
        candidates.delta_dataset().count_rows(filter=pc.field("accepted"))
        if candidates.is_delta_table()
        else None
    )
    return counts


class Results:
    """The label's entry of the results file, written whole after every change (atomically: the memory
    guard writes it from its own thread)."""

    def __init__(self, label: str, entry: dict) -> None:
        self.label = label
        self.entry = entry
        self._lock = threading.RLock()

    def save(self) -> None:
        with self._lock:
            results = json.loads(RESULT.read_text()) if RESULT.exists() else {}
            results[self.label] = self.entry
            scratch = RESULT.with_name(f".{RESULT.name}.{os.getpid()}.{threading.get_ident()}")
            scratch.write_text(json.dumps(results, indent=2, default=str) + "\n")
            os.replace(scratch, RESULT)


class StepRunner:
    """Runs a pipeline's steps one by one under the memory sampler, recording each in ``records``."""

    def __init__(self, sampler: MemorySampler, results: Results) -> None:
        self.sampler, self.results = sampler, results
        self.catalog = Path()
        self.records: dict[str, dict] = {}  # by the sampler's label of the step
        self.run_name = ""

    def on_exceeded(self, measurement: Measurement | None) -> None:
        """From the sampler's thread: the open step as measured so far, and the results file written."""
        with self.results._lock:
            if measurement is not None and measurement.label in self.records:
                self.records[measurement.label].update(measurement.record(), exceeded=True)
            label = measurement.label if measurement else "(between steps)"
            self.results.entry["stopped"] = {"at": label, "reason": "memory limit exceeded"}
            self.results.save()
        print(f"memory guard fired in {label}: {measurement.peaks if measurement else ''}", flush=True)

    def step(
        self,
        steps: dict,
        name: str,
        action: Callable[[], object],
        describe: Callable[[object], dict] | None = None,
        counts: bool = False,
    ) -> object:
        label = f"{self.run_name}/{name}"
        print(f"[{self.run_name}] {name} ...", flush=True)
        record: dict = {}
        with self.results._lock:
            steps[name] = record
            self.records[label] = record
        try:
            with self.sampler.measure(label) as measured:
                returned = action()
        except MemoryLimitExceededError as error:
            with self.results._lock:
                record.update(error.measurement.record())
            raise
        with self.results._lock:
            record.update(measured.record())
            if describe is not None:
                record.update(describe(returned))
            if counts:
                record["catalog_rows"] = catalog_rows(self.catalog)
        peaks = ", ".join(f"{key.removesuffix('_mb')} {measured.peaks[key]:.0f}" for key in PEAK_KEYS)
        extra = {k: v for k, v in record.items() if k not in measured.record()}
        print(f"[{self.run_name}] {name}: {measured.seconds:.1f} s; MiB {peaks}; {extra}", flush=True)
        self.results.save()
        return returned

    def run(self, pipeline: Pipeline, run_name: str, into: dict) -> None:
        """One run as ``Pipeline.run`` orders its steps, recorded into ``into``."""
        self.run_name = run_name
        self.catalog = pipeline.catalog.root.local_path()
        steps: dict[str, dict] = {}
        into["steps"] = steps
        plan = self.step(
            steps,
            "detect_batches",
            pipeline.detect_batches,
            lambda plan: {"batches": 0 if plan is None else len(plan.batches)},
        )
        if plan is not None:
            self.step(steps, "scan_batches", lambda: pipeline.scan_batches(plan))
            for component in pipeline.components():
                self.step(steps, component.task_id(), lambda c=component: pipeline.update_state(plan, c.name))
            self.step(steps, "commit_batches", lambda: pipeline.commit_batches(plan), counts=True)
            for each in DISCOVERY_STEPS:
                if not each.done_by_commit:
                    self.step(
                        steps,
                        each.name,
                        lambda s=each: pipeline.discover(s.name),
                        lambda ran: {"ran": ran},
                        counts=True,
                    )
            # the audit of write-audit-publish: every catalog table validated, the pair tables in parts
            self.step(
                steps,
                "quality_gate",
                pipeline.audit,
                lambda audit: {"passed": audit.success, "failed_expectations": len(audit.failures)},
            )
        into["total_s"] = round(sum(record["seconds"] for record in steps.values()), 1)

    def against_driver(self, pipeline: Pipeline) -> dict:
        """The inclusion estimates and Many from scratch (nothing written), placed as configured and with
        every pair on the driver (the steps before their pairs moved to the executors); each measured as a
        step, with the ratios baseline / configured."""
        catalog, config = pipeline.catalog, pipeline.config
        unbounded = 1 << 62
        many = many_config(config.inds)

        def estimates(driver_bytes: int, driver_pairs: int) -> dict:
            with catalog.using_state("benchmark"):
                run = estimate_inclusions(catalog, config.sketches, False, driver_bytes, driver_pairs)
                rows = len(run.rows) if run.on_driver else run.rows.count()
                run.release()
            return {"rows": rows, "on_driver": run.on_driver}

        def inds(driver_bytes: int, driver_pairs: int) -> dict:
            with catalog.using_state("benchmark"):
                run = discover_inclusion_dependencies(catalog, many, False, driver_bytes, driver_pairs)
                rows = len(run.result) if run.on_driver else run.result.count()
                run.release()
            return {"rows": rows, "on_driver": run.on_driver}

        scan = config.scan
        steps: dict[str, dict] = {}
        measured = {"steps": steps}
        placements = (
            ("configured", (scan.driver_state_bytes, scan.driver_max_pairs)),
            ("on the driver", (unbounded, unbounded)),
        )
        named = (("inclusion_estimates", estimates), ("inclusion_dependencies", inds))
        # the configured placement of both steps first: the driver's RSS keeps what the baselines freed
        for placement, bounds in placements:
            for name, measure in named:
                self.step(
                    steps, f"{name} {placement}", lambda m=measure, b=bounds: m(*b), lambda found: found
                )
        for name, _ in named:
            configured, driver = steps[f"{name} configured"], steps[f"{name} on the driver"]
            measured[name] = {
                key: round(driver[key] / configured[key], 2) if configured[key] else None
                for key in ("seconds", "driver_growth_mb")
            }
        return measured


def peaks_of(*runs: dict) -> dict[str, float]:
    records = [record for run in runs for record in run.get("steps", {}).values()]
    return {key: max((record.get(key, 0.0) for record in records), default=0.0) for key in PEAK_KEYS}


def totals(entry: dict) -> dict:
    first, batch = entry.get("first_run", {}), entry.get("ten_table_batch", {})
    first_s = sum(r.get("seconds", 0.0) for r in first.get("steps", {}).values())
    batch_s = sum(r.get("seconds", 0.0) for r in batch.get("steps", {}).values())
    peaks = peaks_of(first, batch)
    return {
        "first_run_s": round(first_s, 1),
        "batch_s": round(batch_s, 1),
        "batch_share_of_first_run": round(batch_s / first_s, 3) if first_s and batch_s else None,
        "peak_driver_mb": peaks["driver_mb"],
        "peak_jvm_mb": peaks["jvm_mb"],
        "peak_python_workers_mb": peaks["python_workers_mb"],
        "peak_python_worker_max_mb": peaks["python_worker_max_mb"],
        "peak_total_mb": peaks["total_mb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    add_settings_argument(parser)
    parser.add_argument("--memory-limit-gb", type=float, default=14.0)
    parser.add_argument("--label", default=None, help="the results' key (default dense_<tables>)")
    parser.add_argument("--fresh", action="store_true", help="generate the lake again even when cached")
    parser.add_argument(
        "--pair-columns",
        type=int,
        default=20_000,
        help="count overlapping column pairs exactly up to this many columns, on a sample beyond",
    )
    parser.add_argument("--no-warm-up", action="store_true")
    parser.add_argument(
        "--placement-baseline",
        action="store_true",
        help="measure the inclusion estimates and Many placed as configured against all on the driver",
    )
    args = parser.parse_args()
    label = args.label or f"dense_{args.tables}"
    overrides = parse_settings(args.settings)  # the CLI's --set, read the same way
    work = SCRATCH / label
    run_lake, catalog = work / "run" / "lake", work / "run" / "catalog"

    def config_for(lake_root: Path, catalog_root: Path) -> Config:
        return load_config({**overrides, "lake": str(lake_root), "catalog": str(catalog_root)}, environ={})

    config_for(run_lake, catalog)  # a bad --set fails here, before anything is written
    lake, description = prepared_lake(label, args.tables, args.seed, args.fresh, args.pair_columns)
    print(f"lake shape: {json.dumps(description['shape'])}", flush=True)

    entry: dict = {
        "tables": args.tables,
        "seed": args.seed,
        "settings": args.settings,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        **git_commit(),
        "spark": {"master": MASTER, "driver_memory": os.environ.get("LAKEMETA_DRIVER_MEMORY", "4g")},
        "memory_limit_gb": args.memory_limit_gb,
        "load_average_before": os.getloadavg(),
        "lake": description["shape"],
        "lake_written_s": description["written_s"],
        "stopped": None,
    }
    results = Results(label, entry)
    # the FK step's candidates at each stage, and the other steps' counts, as the steps log them
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("lakemeta.fks").setLevel(logging.INFO)
    runner = StepRunner(MemorySampler(limit_gb=args.memory_limit_gb), results)
    runner.sampler.on_exceeded = runner.on_exceeded
    runner.sampler.start()
    try:
        spark = get_session(MASTER, "bench dense lakes", catalog=SCRATCH / "session")
        if not args.no_warm_up:
            warm = work / "warm_up"
            shutil.rmtree(warm, ignore_errors=True)
            dense.write_dense_lake(warm / "lake", WARM_UP_TABLES, seed=args.seed + 1000)
            entry["warm_up"] = {}
            runner.run(
                Pipeline(spark, config_for(warm / "lake", warm / "catalog")), "warm_up", entry["warm_up"]
            )
            runner.records.clear()
        working_copy(lake, run_lake)
        shutil.rmtree(catalog, ignore_errors=True)
        pipeline = Pipeline(spark, config_for(run_lake, catalog))
        entry["first_run"] = {}
        runner.run(pipeline, "first_run", entry["first_run"])
        started = time.perf_counter()
        changed = dense.change_dense_tables(run_lake, CHANGED_TABLES, seed=args.seed + 1)
        entry["ten_table_batch"] = {
            "changed_tables": changed,
            "change_s": round(time.perf_counter() - started, 2),
        }
        print(f"changed {len(changed)} tables: {', '.join(changed)}", flush=True)
        runner.run(pipeline, "ten_table_batch", entry["ten_table_batch"])
        if args.placement_baseline:
            entry["placement_baseline"] = runner.against_driver(pipeline)
    except (MemoryLimitExceededError, KeyboardInterrupt) as error:
        if not runner.sampler.exceeded:
            raise
        with results._lock:
            entry["totals"] = totals(entry)
            entry["process_peaks_mb"] = runner.sampler.overall.peaks
            entry["load_average_after"] = os.getloadavg()
            results.save()
        print(f"stopped by the memory guard ({error!r}); results in {RESULT}", flush=True)
        sys.stdout.flush()
        os._exit(EXIT_CODE_GUARD)  # the JVM is gone: no orderly stop of the session
    runner.sampler.stop()
    entry["totals"] = totals(entry)
    entry["process_peaks_mb"] = runner.sampler.overall.peaks
    entry["load_average_after"] = os.getloadavg()
    results.save()
    print(f"totals: {json.dumps(entry['totals'])}", flush=True)
    spark.stop()
    print(f"results in {RESULT}")


if __name__ == "__main__":
    main()
