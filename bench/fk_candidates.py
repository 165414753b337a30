"""FK candidates on TPC-H: precision, recall and F1 against the declared foreign keys, the time of the FK
step once the state exists, and the EMD on coarser grids against l = 1024 (Zhang's Table 1).

For each scale the TPC-H tables (tpchgen-cli) are written as Delta tables, the state is built and the
inclusion estimates refreshed (the pipeline's own steps, default configuration); then the FK step is timed
alone, names ignored (``fks.name_signal`` off). Ground truth: the foreign keys of ../shared/data/README.md
(TPC-H's declared ones, lineitem -> part and lineitem -> supplier). Precision and recall count the
accepted candidates of ``lakemeta.fks.choice`` three ways, on the same scored candidates: names ignored,
names as a signal (the default), and §5.4's name check required; and of the baseline, Zhang's one answer
set cut at the largest EMD jump over all candidates (``ranking.answer_set``). For the grid comparison every
single-column candidate's EMD_n is recomputed in this process at l = 16, 64, 256 and 1024 quantiles.

``--lakes tpcds,mixed``: TPC-DS 0.1 alone (``tpcds/``, tpcgen-cli), and one lake holding TPC-H 0.1
(``tpch/``), TPC-DS 0.1, the shared web tables (``web/``, ../shared/data/webtables) and the demo's 200
generated web tables (``demo/``). Precision, recall and F1 per schema, the same ways; an accepted FK counts
for the schema of its dependent table, and one whose key lies in another schema is a false positive.
Ground truth: TPC-H's foreign keys above, and TPC-DS's declared single-column foreign keys
(../shared/data/tpcds/foreign_keys.tsv) that hold in the generated data (a non-empty dependent column
included in its key, checked here). Also the FK step's time, its candidate and key counts, the overlapping
table pairs found and the FKs accepted among the web tables.

Run: ``.venv/bin/python bench/fk_candidates.py`` (scales 0.1 and 1; ``--scales 0.01`` for a smoke run);
``--lakes tpcds,mixed`` for TPC-DS and the mixed lake (each lake's entry of ``fk_candidates_lakes.json``
replaced); ``--reuse-state`` times the FK step again on the state an earlier run kept in the scratch
folder.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from lakemeta.catalog.freshness import newest_committed_run
from lakemeta.config import Config, FkConfig
from lakemeta.demo import TPCH_FOREIGN_KEYS, WEB_TABLES, generate_tpch
from lakemeta.demo.webtables import write_web_tables
from lakemeta.fks.choice import choose, stored_signals
from lakemeta.fks.discover import run_discovery as fk_candidates_step
from lakemeta.fks.randomness import distinct_tuples, emd_n
from lakemeta.fks.ranking import answer_set
from lakemeta.hashing import canonical
from lakemeta.lake.snapshots import read_columns
from lakemeta.lake.tables import table_path
from lakemeta.orchestration.pipeline import Pipeline

BENCH = Path(__file__).resolve().parent
RESULT = BENCH / "results" / "fk_candidates.json"
LAKES = {"tpcds": ("tpcds",), "mixed": ("tpch", "tpcds", "web", "demo")}  # a lake's folders: its schemas
LAKES_RESULT = BENCH / "results" / "fk_candidates_lakes.json"
TPCDS_FOREIGN_KEYS = BENCH.parents[1] / "shared" / "data" / "tpcds" / "foreign_keys.tsv"
SCRATCH = BENCH / "results" / "scratch" / "fk_candidates"
GRIDS = (16, 64, 256, 1024)
NAMES_IGNORED = FkConfig(name_signal=False)


def scores(found: set, truth: set) -> dict:
    """Precision, recall and F1 of the FKs ``found`` against ``truth``, and the true FKs missed."""
    hits = len(found & truth)
    precision = hits / len(found) if found else 0.0
    recall = hits / len(truth) if truth else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(2 * precision * recall / (precision + recall), 4) if hits else 0.0,
        "missed": sorted(map(str, truth - found)),
    }


def tpch_scores(found: set) -> dict:
    return {**scores(found, TPCH_FOREIGN_KEYS), "wrong": sorted(map(str, found - TPCH_FOREIGN_KEYS))}


def grid_differences(pipeline: Pipeline, rows: list[dict]) -> dict:
    """Mean |EMD_n at l - EMD_n at 1024| over the single-column candidates (Zhang's Table 1), in this
    process. Multi-column keys are left out: at 1024 quantiles per dimension their grids have up to 10^6
    cells, and the transportation problem grows with the square of the cells holding mass."""
    rows = [row for row in rows if len(row["pk_columns"]) == 1]
    lake, cache = pipeline.lake, {}

    def tuples(table: str, columns: list[str]) -> list:
        if (table, tuple(columns)) not in cache:
            path = str(table_path(lake, table))
            version = DeltaTable(path).version()
            strings = [canonical(column) for column in read_columns(path, version, columns)]
            cache[(table, tuple(columns))] = distinct_tuples(strings)
        return cache[(table, tuple(columns))]

    emd = {grid: [] for grid in GRIDS}
    for row in rows:
        key, candidate = (
            tuples(row["pk_table"], row["pk_columns"]),
            tuples(row["fk_table"], row["fk_columns"]),
        )
        for grid in GRIDS:
            emd[grid].append(emd_n(key, candidate, grid))
    reference = np.array(emd[GRIDS[-1]])
    return {
        f"l={grid}": float(np.mean(np.abs(np.array(emd[grid]) - reference))) if rows else 0.0
        for grid in GRIDS[:-1]
    }


def state_and_fks(
    label: str, root: Path, lake: Path, reuse_state: bool = False, fks: FkConfig = NAMES_IGNORED
) -> tuple[Pipeline, dict, list[dict]]:
    """The state and inclusion estimates of ``lake`` by the pipeline's own steps (with
    ``reuse_state``, the state and estimates of an earlier run kept in ``root``), then the FK step timed
    alone with ``fks`` (names ignored unless given);
    the session stays open for the caller (``pipeline.catalog.spark``)."""
    from lakemeta.spark import get_session

    spark = get_session("local[2]", f"bench fk candidates {label}", catalog=root / "spark")
    pipeline = Pipeline(spark, Config(lake=lake, catalog=root / "catalog"))
    started = time.perf_counter()
    if not reuse_state:
        plan = pipeline.detect_batches()
        pipeline.update_state(plan)
        pipeline.commit_batches(plan)
        pipeline.discover("inclusion_estimates")
    state_s = time.perf_counter() - started
    started = time.perf_counter()
    config = dataclasses.replace(pipeline.config, fks=fks)
    accepted_count = fk_candidates_step(
        pipeline.catalog, pipeline.lake, config, newest_committed_run(pipeline.catalog)
    )
    fk_s = time.perf_counter() - started
    rows = pipeline.catalog.read_small("fk_candidates").sort_by("rank").to_pylist()
    figures = {
        "state_and_estimates_s": state_s,
        "state_reused": reuse_state,
        "fk_step_s": fk_s,
        "candidates": len(rows),
        "keys": len({(r["pk_table"], tuple(r["pk_columns"])) for r in rows}),
        "accepted": accepted_count,
        "overlaps": pipeline.catalog.read_small("table_overlaps").num_rows,
    }
    return pipeline, figures, rows


NAMES_USED = FkConfig(name_signal=True)  # name similarity as a signal (the default)
NAMES_REQUIRED = FkConfig(name_signal=True, require_name_match=True)  # and §5.4's check required


def chosen_again(stored: pa.Table, overlaps: pa.Table, config: FkConfig) -> list[dict]:
    """Stored candidates (``fk_candidates``) chosen again under ``config`` (the choice reads only the stored
    signals, so the EMD is not computed twice), accepted ones only."""
    return [r for r in choose(stored_signals(stored), overlaps, config).to_pylist() if r["accepted"]]


def accepted_with(pipeline: Pipeline, config: FkConfig) -> list[dict]:
    """The FK step's candidates chosen again under ``config`` (``chosen_again``)."""
    catalog = pipeline.catalog
    return chosen_again(catalog.read_small("fk_candidates"), catalog.read_small("table_overlaps"), config)


def zhang_answer_set(rows: list[dict]) -> list[dict]:
    """The paper's answer set (Zhang §5.2, ``ranking.answer_set``): every candidate ranked by EMD_n and cut
    at the largest jump, the baseline of ``choice``."""
    ordered = sorted(rows, key=lambda r: (r["emd"], r["fk_table"], r["fk_columns"], r["pk_table"]))
    kept = answer_set(np.array([r["emd"] for r in ordered]), FkConfig().single_column_quantiles)
    return [r for r, keep in zip(ordered, kept, strict=True) if keep]


def pairs(kept: list[dict]) -> set:
    return {(r["fk_table"], tuple(r["fk_columns"]), r["pk_table"], tuple(r["pk_columns"])) for r in kept}


def run_scale(scale: str, reuse_state: bool) -> dict:
    root = SCRATCH / f"sf{scale}"
    lake = root / "lake"
    if not lake.is_dir():
        generate_tpch(root / "sources", scale=scale)
        write_parquet_tables(root / "sources", lake)
    reuse_state = reuse_state and (root / "catalog" / "inclusion_estimates").is_dir()
    if not reuse_state:
        shutil.rmtree(root / "catalog", ignore_errors=True)
    pipeline, counts, rows = state_and_fks(f"sf{scale}", root, lake, reuse_state)
    spark = pipeline.catalog.spark
    figures = {
        "scale": scale,
        **counts,
        "without_names": tpch_scores(pairs([r for r in rows if r["accepted"]])),
        "with_names": tpch_scores(pairs(accepted_with(pipeline, NAMES_USED))),
        "names_required": tpch_scores(pairs(accepted_with(pipeline, NAMES_REQUIRED))),
        "zhang_answer_set": tpch_scores(pairs(zhang_answer_set(rows))),
        "mean_emd_difference_to_l1024": grid_differences(pipeline, rows),
    }
    spark.stop()
    print(json.dumps(figures, indent=2), flush=True)
    return figures


def write_parquet_tables(sources: Path, lake: Path) -> None:
    """Each Parquet file of ``sources`` as a Delta table under ``lake`` (string views as strings)."""
    for path in sorted(sources.glob("*.parquet")):
        table = pq.read_table(path)
        schema = pa.schema(
            [
                field.with_type(pa.string()) if field.type == pa.string_view() else field
                for field in table.schema
            ]
        )
        write_deltalake(str(lake / path.stem), table.cast(schema))


def tpcds_foreign_keys(lake: Path) -> tuple[set, list[str]]:
    """TPC-DS's declared foreign keys (schema prefix ``tpcds/``) that hold in ``lake``: a dependent column
    with a value, all of its values in the key; and those that do not."""
    declared = pa_csv.read_csv(TPCDS_FOREIGN_KEYS, parse_options=pa_csv.ParseOptions(delimiter="\t"))
    holding, not_holding = set(), []
    for row in declared.to_pylist():
        dependent = DeltaTable(str(lake / row["fk_table"])).to_pyarrow_table(columns=[row["fk_column"]])
        key = DeltaTable(str(lake / row["pk_table"])).to_pyarrow_table(columns=[row["pk_column"]])
        values = pc.unique(pc.drop_null(dependent[row["fk_column"]]))
        fk = (
            f"tpcds/{row['fk_table']}",
            (row["fk_column"],),
            f"tpcds/{row['pk_table']}",
            (row["pk_column"],),
        )
        if len(values) and pc.all(pc.is_in(values, pc.unique(key[row["pk_column"]]))).as_py():
            holding.add(fk)
        else:
            not_holding.append(str(fk))
    return holding, not_holding


def schema_scores(accepted: set, truth: dict[str, set]) -> dict:
    """Precision, recall and F1 per schema of ``truth``: an accepted FK counts for its dependent's schema."""
    out = {}
    for schema, true in truth.items():
        found = {fk for fk in accepted if fk[0].split("/")[0] == schema}
        out[schema] = {
            "accepted": len(found),
            "true": len(found & true),
            **scores(found, true),
            "wrong_into_other_schemas": sum(fk[2].split("/")[0] != schema for fk in found),
        }
    return out


def write_schema(schema: str, root: Path, lake: Path) -> None:
    """One schema of the lakes of the module docstring, under ``lake / schema`` (written once)."""
    from many_inds import web_corpus

    if (lake / schema).is_dir():
        return
    sources = root.parent / "sources" / schema
    if schema == "tpch":
        generate_tpch(sources, scale="0.1")
    elif schema == "tpcds":
        tpcgen = str(Path(sys.executable).with_name("tpcgen-cli"))
        subprocess.run([tpcgen, "tpcds", "parquet", "-s", "0.1", "--output-dir", str(sources)], check=True)
    if schema in ("tpch", "tpcds"):
        write_parquet_tables(sources, lake / schema)
    elif schema == "web":
        web_corpus(lake / "web")
    else:
        for path in write_web_tables(sources, WEB_TABLES):
            write_deltalake(str(lake / schema / path.stem), pa_csv.read_csv(path))


def run_lake(label: str, reuse_state: bool) -> dict:
    """TPC-DS alone (``tpcds``) or the mixed lake (``mixed``) of the module docstring."""
    root = SCRATCH / label
    lake = root / "lake"
    schemas = LAKES[label]
    for schema in schemas:
        write_schema(schema, root, lake)
    truth = {}
    if "tpch" in schemas:
        truth["tpch"] = {(f"tpch/{f}", fc, f"tpch/{p}", pc_) for f, fc, p, pc_ in TPCH_FOREIGN_KEYS}
    truth["tpcds"], not_holding = tpcds_foreign_keys(lake / "tpcds")
    reuse_state = reuse_state and (root / "catalog" / "inclusion_estimates").is_dir()
    if not reuse_state:
        shutil.rmtree(root / "catalog", ignore_errors=True)
    pipeline, counts, rows = state_and_fks(label, root, lake, reuse_state)
    with_names, names_required = [accepted_with(pipeline, c) for c in (NAMES_USED, NAMES_REQUIRED)]
    pipeline.catalog.spark.stop()
    accepted = [r for r in rows if r["accepted"]]
    figures = {
        "tables": {schema: len(list((lake / schema).iterdir())) for schema in schemas},
        "tpcds_declared_not_holding": not_holding,
        **counts,
        "names_ignored": schema_scores(pairs(accepted), truth),
        "names_used": schema_scores(pairs(with_names), truth),
        "names_required": schema_scores(pairs(names_required), truth),
        "zhang_answer_set": schema_scores(pairs(zhang_answer_set(rows)), truth),
        "accepted_among_web_tables": sum(r["fk_table"].split("/")[0] in ("web", "demo") for r in accepted),
    }
    print(label, json.dumps(figures, indent=2), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="0.1,1", help="comma-separated TPC-H scale factors")
    parser.add_argument(
        "--lakes", help=f"instead of TPC-H alone, comma-separated lakes of {sorted(LAKES)} (TPC-DS inside)"
    )
    parser.add_argument(
        "--reuse-state",
        action="store_true",
        help="time the FK step on the state an earlier run kept in the scratch folder",
    )
    args = parser.parse_args()
    if args.lakes:
        if not TPCDS_FOREIGN_KEYS.exists():
            raise SystemExit(f"the lakes hold TPC-DS, whose foreign keys are missing: {TPCDS_FOREIGN_KEYS}")
        results = json.loads(LAKES_RESULT.read_text()) if LAKES_RESULT.exists() else {}
        results["load_average_before"] = os.getloadavg()
        for label in args.lakes.split(","):
            results[label] = run_lake(label, args.reuse_state)
            results["load_average_after"] = os.getloadavg()
            LAKES_RESULT.write_text(json.dumps(results, indent=2) + "\n")  # after each lake: kept if stopped
        print(f"results in {LAKES_RESULT}")
        return
    results = {"load_average_before": os.getloadavg()}
    results["scales"] = [run_scale(scale, args.reuse_state) for scale in args.scales.split(",")]
    results["load_average_after"] = os.getloadavg()
    if args.scales == "0.1,1":
        RESULT.write_text(json.dumps(results, indent=2) + "\n")
        print(f"results in {RESULT}")


if __name__ == "__main__":
    main()
