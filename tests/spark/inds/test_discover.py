"""``inclusion_dependencies`` through the pipeline equal a brute-force subset check over every ordered pair
of distinct columns, with the filters off and with each filter profile applied by its rule; the Bloom
parameters and the candidate strategy never change the result (no false negatives, exact validation)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.cli import main
from lakemeta.config import AgreeSetConfig, Config, IndConfig, ScanConfig
from lakemeta.hashing import canonical
from lakemeta.inds.filters import TABLE_2_NULL_VALUES
from lakemeta.orchestration.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark

VOCABULARY = ["1", "2", "3", "7", "10", "x", "y", "N/A", ""]


def random_column(rng: np.random.Generator, n_rows: int) -> pa.Array:
    """Values drawn from a small vocabulary in one of several physical types, with nulls."""
    kind = rng.choice(["int", "string", "double", "null", "digits"])
    if kind == "null":
        return pa.nulls(n_rows, pa.string())
    size = int(rng.integers(1, 6))
    if kind in ("int", "double"):
        pool = rng.choice([1, 2, 3, 7, 10], size=size)
        values = [None if rng.random() < 0.15 else int(rng.choice(pool)) for _ in range(n_rows)]
        if kind == "double":
            return pa.array([None if v is None else float(v) for v in values], pa.float64())
        return pa.array(values, pa.int64())
    vocabulary = VOCABULARY[:5] if kind == "digits" else VOCABULARY
    pool = rng.choice(vocabulary, size=size)
    return pa.array([None if rng.random() < 0.15 else str(rng.choice(pool)) for _ in range(n_rows)])


def write_corpus(rng: np.random.Generator, lake: Path) -> list[str]:
    """Tables of 1-8 rows, each written in up to three commits (so in up to three data files)."""
    names = [f"t{i}" for i in range(6)] + ["empty"]
    for name in names[:-1]:
        n_rows = int(rng.integers(1, 9))
        columns = pa.table({f"c{j}": random_column(rng, n_rows) for j in range(int(rng.integers(1, 4)))})
        for part in np.array_split(np.arange(n_rows), 3):
            if len(part):
                write_deltalake(str(lake / name), columns.slice(part[0], len(part)), mode="append")
    write_deltalake(str(lake / "empty"), pa.table({"e": pa.array([], pa.int64())}))
    return names


def brute_force(lake: Path, names: list[str], filters: str) -> set[tuple[str, str, str, str, int, int]]:
    """Every valid IND (dep ⊆ ref, distinct columns) over canonical non-null value sets, filtered."""
    sets, valued = {}, {}
    for name in names:
        table = DeltaTable(str(lake / name)).to_pyarrow_table()
        for column in table.column_names:
            strings = canonical(table[column].combine_chunks()).to_pylist()
            values = [v for v in strings if v is not None]
            sets[(name, column)] = set(values)
            valued[(name, column)] = [v for v in values if v not in TABLE_2_NULL_VALUES]
    found = set()
    for dep, dep_values in sets.items():
        for ref, ref_values in sets.items():
            if dep == ref or not dep_values <= ref_values:
                continue
            if filters != "none" and not (valued[dep] and valued[ref]):
                continue  # null columns, both sides
            if filters == "web":
                if any(all(re.fullmatch(r"[+-]?[0-9]+", v) for v in valued[c]) for c in (dep, ref)):
                    continue  # integer columns, both sides
                if len(set(valued[ref])) < len(valued[ref]):
                    continue  # non-unique referenced column
                if ref_values and len(dep_values) / len(ref_values) < 0.2:
                    continue  # low coverage
            found.add((*dep, *ref, len(dep_values), len(ref_values)))
    return found


def discovered(pipeline: Pipeline) -> set[tuple[str, str, str, str, int, int]]:
    rows = pipeline.catalog.read_small("inclusion_dependencies").to_pylist()
    for row in rows:  # coverage = |dependentSet| / |referencedSet| (Alg. 11), 1 for an empty referenced set
        ratio = row["dep_distinct"] / row["ref_distinct"] if row["ref_distinct"] else 1.0
        assert row["coverage"] == pytest.approx(ratio)
    names = ["dep_table", "dep_column", "ref_table", "ref_column", "dep_distinct", "ref_distinct"]
    return {tuple(row[name] for name in names) for row in rows}


@pytest.mark.parametrize("seed, max_task_rows", [(5, 1_000_000), (5, 3)])
def test_inclusion_dependencies_equal_brute_force(
    spark, tmp_path: Path, seed: int, max_task_rows: int, caplog: pytest.LogCaptureFixture
) -> None:
    # with a budget of 3 rows a task, the tables of more rows are read in groups of their data files
    rng = np.random.default_rng(seed)
    lake = tmp_path / "lake"
    names = write_corpus(rng, lake)
    budget = {
        "scan": ScanConfig(max_task_rows),
        "agree_sets": AgreeSetConfig(max_rows=min(max_task_rows, AgreeSetConfig.max_rows)),
    }
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog", **budget))
    process(pipeline, "column_profile", "column_values")  # the columns and value sets Many reads
    settings = [
        IndConfig(filters="none"),
        # many false positives: m = 2 is full from two values on. Columns of up to 2 values are validated
        # on the driver, the others by Spark. Signatures sized to each column (m·2^L >= k·n / ln 2, levels 0
        # to 3 here), then the paper's one m.
        IndConfig(
            filters="none", m=2, k=2, p=1, strategy="ref2deps", indexed=False, driver_validation_values=2
        ),
        IndConfig(filters="none", m=2, k=2, p=1, driver_validation_values=2, max_doublings=0),
        # every candidate validated by Spark, every column's inputs computed by Spark
        IndConfig(filters="none", m=64, k=3, p=3, driver_validation_values=0, driver_signature_values=0),
        IndConfig(),  # the null filter
        IndConfig(filters="web"),
    ]
    caplog.set_level(logging.INFO, logger="lakemeta")
    checks = {}
    for inds in settings:
        # the candidates not checked on kept hashes: against the value sets read on the driver, but where
        # every candidate is to be validated by Spark
        by_spark = inds.driver_validation_values == 0
        scan = ScanConfig(max_task_rows, driver_state_bytes=0) if by_spark else budget["scan"]
        configured = Pipeline(
            spark,
            Config(lake=lake, catalog=tmp_path / "catalog", inds=inds, **{**budget, "scan": scan}),
        )
        caplog.clear()
        configured.discover("inclusion_dependencies")
        assert discovered(configured) == brute_force(lake, names, inds.filters), inds
        computed = "by Spark" if inds.driver_signature_values == 0 else "on the driver"
        assert re.search(
            rf"Many: inputs of \d+ columns of \d+ tables \(\d+ distinct values\) {computed}", caplog.text
        )
        checked = re.search(
            r"(\d+) candidates, (\d+) validated \((\d+) on kept value hashes\), \d+ valid, \d+ written "
            r"\((on the driver|in the executors)",
            caplog.text,
        )
        assert checked, caplog.text
        proposed, validated, on_driver = int(checked[1]), int(checked[2]), int(checked[3])
        checks[inds] = proposed, validated
        # no driver bound: the candidates are made, validated and written in the executors
        assert checked[4] == ("in the executors" if by_spark else "on the driver"), caplog.text
        if validated > on_driver and not by_spark:
            stored = re.search(r"validated against the value sets of \d+ tables (.+)$", caplog.text, re.M)
            assert stored and stored[1] == "on the driver", caplog.text
        if inds.driver_validation_values == 0:
            assert on_driver == 0
        elif inds.driver_validation_values == 2:
            assert 0 < on_driver < validated, (on_driver, validated)  # both validations took part
    # the same candidates proposed at m = 2; the sized signatures leave fewer of them to validate
    (sized_proposed, sized_validated), (paper_proposed, paper_validated) = (
        checks[settings[1]],
        checks[settings[2]],
    )
    assert sized_proposed == paper_proposed and sized_validated < paper_validated, checks
    everything = brute_force(lake, names, "none")
    assert any(x[0] != x[2] for x in everything)  # across tables
    assert any(x[4] == 0 for x in everything)  # an empty column is included in every other one


def test_the_graph_command_draws_the_inds_of_each_schema(spark, tmp_path: Path, capsys) -> None:
    lake = tmp_path / "lake"
    write_deltalake(str(lake / "orders"), pa.table({"customer": [1, 2, 2], "note": ["a", "b", "c"]}))
    write_deltalake(str(lake / "customers"), pa.table({"id": [1, 2, 3]}))
    write_deltalake(str(lake / "elsewhere"), pa.table({"word": ["zebra"]}))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, "column_profile", "column_values")  # the columns and value sets Many reads
    pipeline.discover("inclusion_dependencies")
    page = tmp_path / "graph.html"
    assert main(["graph", "--catalog", str(tmp_path / "catalog"), "--out", str(page), "--inds"]) == 0
    assert "1 schemas, 0 accepted FKs, 1 schema graphs drawn" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert "orders" in text and "customers" in text and "customer \u2286 id" in text
    assert "elsewhere" not in text
