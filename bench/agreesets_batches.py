"""DynASt batch maintenance of agree-sets beside recomputation from scratch (DynASt §7.1, §7.3, §7.4).

For each wide/long dataset of ../shared/data/wide (adult, flight_1k, uniprot_1k) the relation is loaded
without a few held-out tuples, then:

* 50-tuple insert batches (held-out tuples) and 50-tuple delete batches (seeded random live tuples) go
  through ``DynASt.apply_batch`` one at a time (§7.1, Fig. 4); after each, the agree-set multiset of the new
  relation is recomputed from scratch (``from_scratch``, the same zip-bit-product kernel on empty vectors)
  and must equal the maintained one;
* one insert batch and one delete batch of 1% of the relation, the batch-size ratio of Tables 5 and 6;
* a twin state with ``factorize=False`` takes the same 50-tuple batches, for Algorithm 3's effect on the
  number of zip-bit products (§5.3) and on time;
* the AStree (§6) is read once at the end (its first build) and once more after one further batch (its
  update), the cost DynASt pays only when approximate-FD errors are asked for (Table 9);
* the pipeline's Spark step (``update_agree_sets`` on a local[2] session) for one 50-tuple insert batch
  and one 50-tuple delete batch of the same relation held as a Delta table, beside the executor's kernel
  alone on the same two snapshots (``agree_set_delta``, in this process): what the job adds around the
  kernel (Spark task, snapshot reads, the net change, the MERGE into ``state/agree_sets``).

Times are wall seconds (``perf_counter``) with the process CPU seconds beside them: the machine may be shared,
and CPU time shows the work itself. Speed-up = from-scratch seconds / batch seconds. ``pair_ratio`` is the
number of tuple pairs recomputation compares over the number the batch compares, the speed-up an
incremental method gets when a pair costs the same in both.

Run: .venv/bin/python bench/agreesets_batches.py [--quick]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from lakemeta.agreesets import from_scratch
from lakemeta.agreesets.batch_delta import agree_set_delta
from lakemeta.agreesets.values import comparable_table
from lakemeta.config import AgreeSetConfig, Config
from lakemeta.lake.snapshots import read_table
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.reference.dynast import DynASt
from lakemeta.spark import get_session

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wide"
RESULT = ROOT / "bench" / "results" / "agreesets_batches.json"
BATCH = 50
DATASETS = {  # name: (file, delimiter, header row)
    "adult": ("adult.csv", ";", False),
    "flight": ("flight_1k.csv", ";", True),
    "uniprot": ("uniprot_1k.csv", ",", True),
}
TARGET_SECONDS = {"adult": 0.5, "flight": 0.3, "uniprot": 0.3}
# DynASt Table 5 (insertion) and Table 6 (deletion): speed-up over the DepMiner baseline at a 1% batch.
PAPER_SPEEDUP_1PCT = {
    "adult": {"insert": 439.1, "delete": 439.26},
    "flight": {"insert": 581.64, "delete": 153.39},
    "uniprot": {"insert": 6610.56, "delete": 3984.29},
}


def read_strings(name: str) -> pa.Table:
    """Every column as strings; an empty cell is the empty string (null = null, as in the fd/ datasets)."""
    file, delimiter, header = DATASETS[name]
    read = pcsv.ReadOptions(autogenerate_column_names=not header)
    parse = pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
    names = pcsv.read_csv(DATA / file, read_options=read, parse_options=parse).column_names
    convert = pcsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()),
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    return pcsv.read_csv(DATA / file, read_options=read, parse_options=parse, convert_options=convert)


def timed(action: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def pairs(n: int) -> int:
    return n * (n - 1) // 2


def run_batch(
    state: DynASt,
    twin: DynASt | None,
    kind: str,
    rows: pa.Table | None,
    doomed: np.ndarray | None,
) -> dict[str, Any]:
    """One batch through DynASt, then ES^m of the new relation from scratch; both timed, results compared."""
    n_before = state.n_rows
    if kind == "insert":
        result, wall, cpu = timed(lambda: state.apply_batch(inserted=rows))
        size = rows.num_rows
        batch_pairs = size * n_before + pairs(size)  # r^next ⊗ b_ins
    else:
        result, wall, cpu = timed(lambda: state.apply_batch(deleted_positions=doomed))
        size = len(doomed)
        batch_pairs = size * (n_before - size) + pairs(size)  # r^curr ⊗ b_del
    (scratch, _), scratch_wall, scratch_cpu = timed(lambda: from_scratch(state.relation))
    if scratch != state.multiset:
        raise AssertionError(f"{kind} batch: maintained agree-sets differ from recomputation")
    record = {
        "kind": kind,
        "size": size,
        "rows_after": state.n_rows,
        "seconds": wall,
        "cpu_seconds": cpu,
        "from_scratch_seconds": scratch_wall,
        "from_scratch_cpu_seconds": scratch_cpu,
        "speedup": scratch_wall / wall,
        "cpu_speedup": scratch_cpu / cpu if cpu > 0 else None,
        "pair_ratio": pairs(state.n_rows) / batch_pairs,
        "zip_bit_products": result.products.performed,
        "zip_bit_products_unordered": result.products.unfactorised,
    }
    if twin is not None:
        if kind == "insert":
            twin_result, twin_wall, twin_cpu = timed(lambda: twin.apply_batch(inserted=rows))
        else:
            twin_result, twin_wall, twin_cpu = timed(lambda: twin.apply_batch(deleted_positions=doomed))
        if twin.multiset != state.multiset:
            raise AssertionError("factorize=False state differs from the factorised one")
        record["unordered_seconds"] = twin_wall
        record["unordered_cpu_seconds"] = twin_cpu
        record["unordered_products_performed"] = twin_result.products.performed
    return record


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["seconds"] for r in records]
    cpu = [r["cpu_seconds"] for r in records]
    performed = sum(r["zip_bit_products"] for r in records)
    unordered = sum(r["zip_bit_products_unordered"] for r in records)
    out = {
        "batches": len(records),
        "median_seconds": statistics.median(seconds),
        "max_seconds": max(seconds),
        "median_cpu_seconds": statistics.median(cpu),
        "max_cpu_seconds": max(cpu),
        "median_speedup": statistics.median(r["speedup"] for r in records),
        "median_pair_ratio": statistics.median(r["pair_ratio"] for r in records),
        "zip_bit_products": performed,
        "zip_bit_products_unordered": unordered,
        "product_reduction": unordered / performed if performed else None,
    }
    if all("unordered_seconds" in r for r in records):
        out["unordered_median_seconds"] = statistics.median(r["unordered_seconds"] for r in records)
        out["unordered_median_cpu_seconds"] = statistics.median(r["unordered_cpu_seconds"] for r in records)
    return out


def bench_dataset(name: str, n_batches: int, seed: int) -> dict[str, Any]:
    table = read_strings(name)
    n = table.num_rows
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    one_percent = max(1, round(0.01 * n))
    held_out = n_batches * BATCH + one_percent + BATCH  # insert batches, the 1% batch, the AStree batch
    initial = table.take(order[: n - held_out])
    extra = table.take(order[n - held_out :])

    state = DynASt(table.column_names)
    _, build_wall, build_cpu = timed(lambda: state.apply_batch(inserted=initial))
    twin = copy.deepcopy(state)
    twin.factorize = False
    print(f"{name}: {n} rows x {table.num_columns} columns; {state.n_rows} rows built in {build_wall:.2f} s")

    records = []
    for i in range(n_batches):
        records.append(run_batch(state, twin, "insert", extra.slice(i * BATCH, BATCH), None))
    for _ in range(n_batches):
        doomed = rng.choice(state.relation.live_positions(), BATCH, replace=False)
        records.append(run_batch(state, twin, "delete", None, doomed))
    for r in records:
        print(
            f"  {r['kind']:6} {r['size']:4} tuples: {r['seconds']:.4f} s (cpu {r['cpu_seconds']:.4f}), "
            f"from scratch {r['from_scratch_seconds']:.3f} s, speed-up {r['speedup']:.0f}x "
            f"(pair ratio {r['pair_ratio']:.0f}), products {r['zip_bit_products']} vs "
            f"{r['zip_bit_products_unordered']} unordered ({r['unordered_seconds']:.4f} s)"
        )

    start = n_batches * BATCH
    one_pct = [run_batch(state, None, "insert", extra.slice(start, one_percent), None)]
    doomed = rng.choice(state.relation.live_positions(), one_percent, replace=False)
    one_pct.append(run_batch(state, None, "delete", None, doomed))
    for r in one_pct:
        paper = PAPER_SPEEDUP_1PCT[name][r["kind"]]
        r["paper_speedup"] = paper
        print(
            f"  1% {r['kind']:6} ({r['size']} tuples): {r['seconds']:.4f} s, from scratch "
            f"{r['from_scratch_seconds']:.3f} s, speed-up {r['speedup']:.0f}x (pair ratio "
            f"{r['pair_ratio']:.0f}; paper {paper}x over DepMiner)"
        )

    tree, first_wall, first_cpu = timed(lambda: state.astree)
    nodes_first = tree.size
    last = extra.slice(start + one_percent, BATCH)
    _, last_wall, _ = timed(lambda: state.apply_batch(inserted=last))
    tree, refresh_wall, refresh_cpu = timed(lambda: state.astree)
    print(
        f"  AStree: first read {first_wall:.3f} s ({nodes_first} nodes); after one more 50-tuple insert "
        f"({last_wall:.4f} s) its update {refresh_wall:.3f} s"
    )

    inserts = [r for r in records if r["kind"] == "insert"]
    deletes = [r for r in records if r["kind"] == "delete"]
    return {
        "rows": n,
        "columns": table.num_columns,
        "initial_rows": n - held_out,
        "initial_build_seconds": build_wall,
        "initial_build_cpu_seconds": build_cpu,
        "attribute_value_vectors": int(state.relation.n_vectors),
        "agree_sets": len(state.multiset),
        "target_seconds_per_50_batch": TARGET_SECONDS[name],
        "insert_50": summary(inserts),
        "delete_50": summary(deletes),
        "target_met": max(r["seconds"] for r in records) <= TARGET_SECONDS[name],
        "one_percent": one_pct,
        "astree": {
            "first_read_seconds": first_wall,
            "first_read_cpu_seconds": first_cpu,
            "nodes_first_read": nodes_first,
            "nodes": tree.size,
            "update_after_50_insert_seconds": refresh_wall,
            "update_after_50_insert_cpu_seconds": refresh_cpu,
        },
        "batches": records,
    }


def bench_spark_step(name: str, seed: int, work: Path) -> dict[str, Any]:
    """``update_agree_sets`` for a 50-tuple insert and a 50-tuple delete batch beside its kernel alone."""
    table = read_strings(name)
    table = table.rename_columns([f"c{i:03d}" for i in range(table.num_columns)])  # names Spark accepts
    rng = np.random.default_rng(seed)
    order = rng.permutation(table.num_rows)
    initial, extra = table.take(order[BATCH:]), table.take(order[:BATCH])
    lake, path = work / name / "lake", work / name / "lake" / name
    deltalake.write_deltalake(str(path), initial)
    spark = get_session("local[2]", "bench agree-set step", catalog=work / name / "catalog")
    config = AgreeSetConfig(max_rows=max(AgreeSetConfig().max_rows, table.num_rows))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=work / name / "catalog", agree_sets=config))

    def step() -> dict[str, Any]:
        plan = pipeline.detect_batches()
        pipeline.update_state(plan, "column_profile")
        (batch,) = plan.batches
        _, wall, _ = timed(lambda: pipeline.update_state(plan, "agree_sets"))
        _, commit_wall, _ = timed(lambda: pipeline.commit_batches(plan))
        record = {"kind": batch.kind, "step_seconds": wall, "commit_seconds": commit_wall}
        if batch.kind == "incremental":
            before = comparable_table(read_table(str(path), batch.from_version))
            after = comparable_table(read_table(str(path), batch.to_version))
            _, kernel_wall, _ = timed(lambda: agree_set_delta(before, after, config.null_equals_null))
            record["kernel_seconds"] = kernel_wall
            record["added_by_the_job_seconds"] = wall - kernel_wall
        return record

    built = step()
    deltalake.write_deltalake(str(path), extra, mode="append")
    inserted = step()
    remaining = deltalake.DeltaTable(str(path)).to_pyarrow_table()
    keep = np.ones(remaining.num_rows, dtype=bool)
    keep[rng.choice(remaining.num_rows, BATCH, replace=False)] = False
    deltalake.write_deltalake(str(path), remaining.filter(pa.array(keep)), mode="overwrite")
    deleted = step()
    for label, record in (("build", built), ("insert 50", inserted), ("delete 50", deleted)):
        kernel = record.get("kernel_seconds")
        print(
            f"  spark step {label:9}: {record['step_seconds']:.2f} s"
            + (f" (kernel alone {kernel:.3f} s)" if kernel is not None else "")
            + f"; commit with keys and FDs {record['commit_seconds']:.2f} s"
        )
    return {"build": built, "insert_50": inserted, "delete_50": deleted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 batches of each kind instead of 5")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} not found")
    n_batches = 2 if args.quick else 5
    load_before = os.getloadavg()
    results = {name: bench_dataset(name, n_batches, args.seed) for name in args.datasets}
    with tempfile.TemporaryDirectory(prefix="bench-agree-sets-") as work:
        for name in args.datasets:
            print(f"{name}: the Spark step")
            results[name]["spark_step"] = bench_spark_step(name, args.seed, Path(work))
    report = {
        "benchmark": "agreesets_batches",
        "command": "python bench/agreesets_batches.py" + (" --quick" if args.quick else ""),
        "seed": args.seed,
        "batch_size": BATCH,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "datasets": results,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULT.relative_to(ROOT)}")
    for name, r in results.items():
        ins, dele = r["insert_50"], r["delete_50"]
        one = {x["kind"]: x for x in r["one_percent"]}
        print(
            f"{name}: 50-tuple insert median {ins['median_seconds']:.4f} s (max {ins['max_seconds']:.4f}), "
            f"delete median {dele['median_seconds']:.4f} s (max {dele['max_seconds']:.4f}); target "
            f"{r['target_seconds_per_50_batch']} s {'met' if r['target_met'] else 'MISSED'}; 1% speed-up "
            f"insert {one['insert']['speedup']:.0f}x (paper {one['insert']['paper_speedup']}x), delete "
            f"{one['delete']['speedup']:.0f}x (paper {one['delete']['paper_speedup']}x); products "
            f"{ins['zip_bit_products'] + dele['zip_bit_products']} with Alg. 3 vs "
            f"{ins['zip_bit_products_unordered'] + dele['zip_bit_products_unordered']} without"
        )


if __name__ == "__main__":
    main()
