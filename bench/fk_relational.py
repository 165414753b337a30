"""FK discovery on real relational databases, and the training of the FK score (``lakemeta.fks.model``).

One lake holds the development databases of ../shared/data/relational (123 small SQLite databases with
declared foreign keys, one folder each: ``spider/<database>/<table>``), TPC-H 0.1 (``tpch/``), TPC-DS 0.1
(``tpcds/``) and the shared web tables (``web/``, copies and extracts of one another, no FKs). The
pipeline's own steps build the state and the inclusion estimates, then the FK step runs with the default
configuration (``--reuse-state``: the FK step alone, on the state an earlier run kept in the scratch
folder).

Ground truth: the declared FKs that hold (``holds`` in spider_foreign_keys.tsv), TPC-H's and TPC-DS's
(``fk_candidates.py``). A declared FK that does not hold (values missing from its key) is a label for the
training, not for the figures: detecting it counts as a false positive (beside, the figures with those
detections left out, as neither hit nor false). An accepted FK counts for the
database of its dependent table. Reported per lake part: micro precision, recall and F1, and for the
development databases the median of the per-database F1 over the databases with FKs that hold and the
number of those below 0.5; each the three ways of ``fk_candidates.py``: the packaged model with names
(the default), without names (``fks.name_signal`` off), and Zhang's answer set at the largest EMD jump.

``--train`` (the training command): the figures by cross-validation that holds out whole databases (ten
folds; a database's FKs are never seen by the model that scores it), for the model with names and the one
without; then both models fitted on every candidate and written to ``lib/lakemeta/fks/fk_model.json``, and
the figures of the packaged models again.

Run: ``.venv/bin/python bench/fk_relational.py [--reuse-state] [--train]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
from fk_candidates import (
    TPCDS_FOREIGN_KEYS,
    chosen_again,
    state_and_fks,
    tpcds_foreign_keys,
    write_schema,
    zhang_answer_set,
)

from lakemeta.config import FkConfig
from lakemeta.demo import TPCH_FOREIGN_KEYS
from lakemeta.fks import model
from lakemeta.fks.training import (
    ForeignKey,
    LabelledLake,
    canonical,
    cross_validate,
    identity,
    labelled_rows,
    scores,
    train,
)
from lakemeta.lake.sqlite import write_database

BENCH = Path(__file__).resolve().parent
RELATIONAL = BENCH.parents[1] / "shared" / "data" / "relational"
RESULT = BENCH / "results" / "fk_relational.json"
SCRATCH = BENCH / "results" / "scratch" / "fk_relational"
FOLDER = "spider"
BESIDE = ("tpch", "tpcds", "web")  # the other folders of the lake
WAYS = {"names_used": FkConfig(), "names_ignored": FkConfig(name_signal=False)}


def declared_foreign_keys(relational: Path = RELATIONAL, holding: bool = True) -> dict[str, set[ForeignKey]]:
    """Per database, its declared FKs that hold (``holding``; else those that do not: values missing from
    the key, an empty dependent), as lake table names (``spider/<database>/<table>``)."""
    declared = pa_csv.read_csv(
        relational / "spider_foreign_keys.tsv",
        parse_options=pa_csv.ParseOptions(delimiter="\t"),
        convert_options=pa_csv.ConvertOptions(column_types={"holds": pa.string(), "note": pa.string()}),
    )
    truth: dict[str, set[ForeignKey]] = {}
    for row in declared.to_pylist():
        found = truth.setdefault(row["database"], set())
        if (row["holds"] == "true") == holding:
            where = f"{FOLDER}/{row['database']}"
            fk = (
                f"{where}/{row['fk_table']}",
                tuple(row["fk_columns"].split(",")),
                f"{where}/{row['pk_table']}",
                tuple(row["pk_columns"].split(",")),
            )
            found.add(canonical(fk))
    return truth


def write_lake(lake: Path, relational: Path = RELATIONAL) -> dict[str, int]:
    """The lake of the module docstring (each part written once); returns its tables per part."""
    for database in sorted((relational / FOLDER).iterdir()):
        if not (lake / FOLDER / database.name).is_dir():
            write_database(database / f"{database.name}.sqlite", lake / FOLDER / database.name)
    for schema in BESIDE:
        write_schema(schema, SCRATCH, lake)
    tables = {FOLDER: sum(len(list(database.iterdir())) for database in (lake / FOLDER).iterdir())}
    return tables | {schema: len(list((lake / schema).iterdir())) for schema in BESIDE}


def group_of(table: str) -> str:
    """A table's database: ``spider/<database>`` is one, each other folder is one."""
    parts = table.split("/")
    return parts[1] if parts[0] == FOLDER else parts[0]


def truths(lake: Path) -> tuple[dict[str, set], set[ForeignKey]]:
    """The FKs that hold per database; and the declared ones that do not."""
    holding = declared_foreign_keys()
    holding["tpch"] = {canonical((f"tpch/{f}", fc, f"tpch/{p}", pc_)) for f, fc, p, pc_ in TPCH_FOREIGN_KEYS}
    holding["tpcds"] = {canonical(fk) for fk in tpcds_foreign_keys(lake / "tpcds")[0]}
    holding["web"] = set()
    dirty = set().union(*declared_foreign_keys(holding=False).values())
    return holding, dirty


def figures(accepted: set[ForeignKey], holding: dict[str, set], dirty: set[ForeignKey]) -> dict:
    """The scores of accepted FKs: the development databases together, TPC-H, TPC-DS, and the web tables'
    accepted count. Beside the development databases' figures, the same with the declared FKs that do not
    hold (``dirty``) left out of the accepted: the schema declares them, so that accepting one is neither a
    hit nor a false detection."""
    databases = {g: t for g, t in holding.items() if g not in BESIDE}
    developed_fks = {fk for fk in accepted if fk[0].startswith(f"{FOLDER}/")}
    developed = scores(developed_fks, databases, group_of)
    declared_left_out = scores(developed_fks - dirty, databases, group_of)
    per_database = developed.pop("per_group")
    beside = scores(accepted, {g: holding[g] for g in BESIDE}, group_of)["per_group"]
    return {
        "development_databases": {
            **{k.replace("group", "database"): v for k, v in developed.items()},
            "below_half": sorted(d for d, f in per_database.items() if f.get("f1", 1.0) < 0.5),
            "declared_not_holding_accepted": len(developed_fks & dirty),
            "declared_not_holding_left_out": {
                k: declared_left_out[k] for k in ("accepted", "precision", "recall", "micro_f1")
            },
            "per_database": {d: [f["hits"], f["accepted"], f["true"]] for d, f in per_database.items()},
        },
        "tpch": beside["tpch"],
        "tpcds": beside["tpcds"],
        "web_accepted": beside["web"]["accepted"],
    }


def rechosen(lake: LabelledLake, config: FkConfig) -> set:
    """The FKs the choice accepts among the stored candidates under ``config``."""
    return {identity(r) for r in chosen_again(lake.candidates, lake.overlaps, config)}


def evaluate(lake: LabelledLake, holding: dict[str, set], dirty: set[ForeignKey]) -> dict:
    """The packaged models' figures, both ways, and Zhang's answer set's."""
    out = {way: figures(rechosen(lake, config), holding, dirty) for way, config in WAYS.items()}
    zhang = {identity(r) for r in zhang_answer_set(lake.candidates.to_pylist())}
    return out | {"zhang_answer_set": figures(zhang, holding, dirty)}


def trained(
    lake: LabelledLake, holding: dict[str, set], dirty: set[ForeignKey], tables: dict[str, int]
) -> dict:
    """Cross-validation by database of both models, then both fitted on everything and packaged."""
    out, models = {}, {}
    for way, config in WAYS.items():
        started = time.perf_counter()
        rows, truth = labelled_rows([lake], config)
        held_out = cross_validate(rows, truth, config)
        models["names" if config.name_signal else "values"] = train(rows, truth, config)
        out[way] = figures(held_out, holding, dirty) | {"seconds": round(time.perf_counter() - started, 1)}
    model.save(
        models,
        {
            "command": ".venv/bin/python bench/fk_relational.py --train",
            "lake": tables,
            "candidates": lake.candidates.num_rows,
            "labels": "declared FKs of the development databases (holding or not), TPC-H's and TPC-DS's",
        },
    )
    model.load.cache_clear()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse-state", action="store_true", help="run the FK step on the kept state")
    parser.add_argument("--train", action="store_true", help="cross-validate, fit and package the models")
    args = parser.parse_args()
    for needed in (RELATIONAL, TPCDS_FOREIGN_KEYS):
        if not needed.exists():
            raise SystemExit(f"the development data is missing: {needed}")
    lake, catalog = SCRATCH / "lake", SCRATCH / "catalog"
    tables = write_lake(lake)
    reuse = args.reuse_state and (catalog / "inclusion_estimates").is_dir()
    if not reuse:
        shutil.rmtree(catalog, ignore_errors=True)
    pipeline, counts, _ = state_and_fks("relational", SCRATCH, lake, reuse, fks=FkConfig())
    stored = pipeline.catalog.read_small("fk_candidates")
    labelled = LabelledLake(stored, pipeline.catalog.read_small("table_overlaps"), set(), group_of)
    pipeline.catalog.spark.stop()
    holding, dirty = truths(lake)
    labelled = dataclasses.replace(labelled, truth=set().union(*holding.values()) | dirty)
    results = {
        "load_average_before": os.getloadavg(),
        "tables": tables,
        **counts,
        "fks_holding": {
            FOLDER: sum(len(t) for g, t in holding.items() if g not in BESIDE),
            **{part: len(holding[part]) for part in BESIDE},
        },
        "declared_fks_not_holding": len(dirty),
    }
    if args.train:
        results["cross_validated"] = trained(labelled, holding, dirty, tables)
    results["packaged"] = evaluate(labelled, holding, dirty)
    results["load_average_after"] = os.getloadavg()
    RESULT.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    for way in ("cross_validated", "packaged"):
        for name, found in results.get(way, {}).items():
            developed = {k: v for k, v in found["development_databases"].items() if k != "per_database"}
            print(way, name, json.dumps(developed, ensure_ascii=False))
            print(
                "   tpch",
                found["tpch"].get("f1"),
                "tpcds",
                found["tpcds"].get("f1"),
                "web",
                found["web_accepted"],
            )
    print(f"results in {RESULT}")


if __name__ == "__main__":
    main()
