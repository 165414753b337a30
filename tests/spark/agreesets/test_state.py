"""``state/agree_sets`` and the keys and FDs derived from it, against brute force and a rebuild.

After random insert / delete / update batch sequences (duplicates, nulls, emptied and refilled tables, a
dropped table, a retried run), the incremental state must equal both a pairwise comparison over the final
snapshots and the state a fresh catalog computes from them; UCCs, exact and approximate FDs and the
per-column uniqueness must equal an enumeration over the same pairs.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.agreesets.state import AgreeSets
from lakemeta.config import AgreeSetConfig, Config, ScanConfig
from lakemeta.orchestration.pipeline import Pipeline
from tests.unit.agreesets.brute import agree_set

from ..lake_changes import (
    SCHEMA,
    create_foreign_table,
    create_spark_table,
    drop_table,
    process,
    random_change,
    random_rows,
)

pytestmark = pytest.mark.spark

COMPONENTS = ("column_profile", "agree_sets")  # what the keys and FDs are derived from
MAX_FD_ERROR = 0.1  # larger than the default, so that the small relations have approximate FDs


def open_pipeline(spark, lake: Path, catalog: Path, config: AgreeSetConfig) -> Pipeline:
    return Pipeline(spark, Config(lake=lake, catalog=catalog, agree_sets=config))


# -- brute force over the final snapshots ------------------------------------------------------------------
def snapshot(lake: Path, name: str) -> tuple[list[str], list[tuple]]:
    table = deltalake.DeltaTable(str(lake / name)).to_pyarrow_table()
    columns = sorted(table.column_names)
    return columns, [tuple(row[c] for c in columns) for row in table.to_pylist()]


def pair_agree_sets(columns: list[str], rows: list[tuple], null_equals_null: bool) -> list[frozenset[str]]:
    """The agree-set of every unordered pair of rows, empty ones included."""
    return [
        frozenset(columns[a] for a in agree_set(t, u, null_equals_null)) for t, u in combinations(rows, 2)
    ]


def expected_results(columns: list[str], pairs: list[frozenset[str]]) -> dict[str, object]:
    """The stored multiset (with the marker of a tracked table), minimal UCCs, minimal exact FDs, minimal
    approximate FDs with error > 0, and each column's uniqueness."""
    subsets = [frozenset(c) for k in range(len(columns) + 1) for c in combinations(columns, k)]
    unique = {x for x in subsets if not any(x <= s for s in pairs)}
    uccs = {x for x in unique if not any(x - {c} in unique for c in x)}
    exact, approximate = set(), set()
    for rhs in columns:
        candidates = [x for x in subsets if rhs not in x]
        error = {x: sum(x <= s and rhs not in s for s in pairs) / max(len(pairs), 1) for x in candidates}
        for bound, found in ((0.0, exact), (MAX_FD_ERROR, approximate)):
            holds = {x for x in candidates if error[x] <= bound}
            minimal = {x for x in holds if not any(x - {c} in holds for c in x)}
            found |= {
                (tuple(sorted(x)), rhs, round(error[x], 9)) for x in minimal if error[x] > 0 or bound == 0
            }
    return {
        "agree_sets": {(): 1} | dict(Counter(tuple(sorted(s)) for s in pairs if s)),
        "uccs": {tuple(sorted(x)) for x in uccs},
        "fds": exact | approximate,
        "unique": {c: frozenset([c]) in unique for c in columns},
    }


def untracked(columns: list[str]) -> dict[str, object]:
    """A table over ``max_rows``: no state, no keys or FDs, uniqueness unknown."""
    return {"agree_sets": {}, "uccs": set(), "fds": set(), "unique": dict.fromkeys(columns)}


def catalog_results(pipeline: Pipeline, table_name: str) -> dict[str, object]:
    catalog = pipeline.catalog

    def rows_of(name: str) -> list[dict]:
        return [r for r in catalog.read_small(name).to_pylist() if r["table_name"] == table_name]

    flags = AgreeSets(catalog, pipeline.lake, pipeline.config).derive().to_pylist()
    return {
        "agree_sets": {tuple(r["agree_set"]): r["count"] for r in rows_of("state/agree_sets")},
        "uccs": {tuple(r["columns"]) for r in rows_of("unique_column_combinations")},
        "fds": {
            (tuple(r["lhs"]), r["rhs"], round(r["error"], 9)) for r in rows_of("functional_dependencies")
        },
        "unique": {r["column_name"]: r["is_unique"] for r in flags if r["table_name"] == table_name},
    }


def sorted_rows(pipeline: Pipeline, name: str) -> list[tuple]:
    table = pipeline.catalog.read_small(name)
    return sorted(
        tuple(tuple(v) if isinstance(v, list) else v for v in row.values()) for row in table.to_pylist()
    )


def state_version(pipeline: Pipeline) -> int:
    return deltalake.DeltaTable(pipeline.catalog.path("state/agree_sets")).version()


def write_wide_table(rng: np.random.Generator, path: Path) -> None:
    """Five small-domain columns with nulls and a duplicate row: keys and FDs of every size occur."""
    rows = [[None if rng.random() < 0.1 else f"v{int(rng.integers(3))}" for _ in range(5)] for _ in range(9)]
    rows.append(rows[0])
    names = ["p", "q", "r", "s", "t"]
    write_deltalake(
        str(path), pa.table({n: pa.array([row[i] for row in rows], pa.string()) for i, n in enumerate(names)})
    )


# -- the test ----------------------------------------------------------------------------------------------
# Seed 4 bounds the tracked tables to 8 rows, so that tables cross the bound both ways between batches.
@pytest.mark.parametrize(("seed", "null_equals_null", "max_rows"), [(3, True, 50_000), (4, False, 8)])
def test_random_batches_equal_brute_force_and_rebuild(
    spark, tmp_path: Path, seed: int, null_equals_null: bool, max_rows: int
) -> None:
    rng = np.random.default_rng(seed)
    config = AgreeSetConfig(null_equals_null=null_equals_null, max_fd_error=MAX_FD_ERROR, max_rows=max_rows)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "a", random_rows(rng, 9))
    create_spark_table(spark, lake / "web" / "b", random_rows(rng, 5))
    create_foreign_table(lake / "foreign", random_rows(rng, 7))
    write_wide_table(rng, lake / "wide")
    pipeline = open_pipeline(spark, lake, tmp_path / "catalog", config)
    process(pipeline, *COMPONENTS)
    applied = []
    for step in range(2):
        for name in ("a", "web/b", "foreign"):
            if rng.random() < 0.8:
                applied.append(random_change(spark, rng, lake / name, foreign=name == "foreign"))
        if step == 1:
            spark.sql(f"DELETE FROM delta.`{lake / 'a'}`")  # every tuple deleted...
        process(pipeline, *COMPONENTS)
    again = random_rows(rng, 3)
    spark.createDataFrame(again + again, SCHEMA).write.format("delta").mode("append").save(str(lake / "a"))
    random_change(spark, rng, lake / "foreign", foreign=True)
    drop_table(lake / "web" / "b")

    # ...then re-inserted, twice over, in a run that dies after its agree-set update; the retry resumes the
    # recorded plan and applies nothing a second time.
    plan = pipeline.detect_batches()
    pipeline.update_state(plan, "column_profile")
    before = state_version(pipeline)
    AgreeSets(pipeline.catalog, lake, pipeline.config).update(plan)
    applied_version = state_version(pipeline)
    assert applied_version > before
    retried = open_pipeline(spark, lake, tmp_path / "catalog", config)
    assert retried.detect_batches() == plan
    AgreeSets(retried.catalog, lake, retried.config).update(plan)
    assert state_version(retried) == applied_version
    retried.commit_batches(plan)

    approximate = 0
    for name in ("a", "foreign", "wide"):
        columns, rows = snapshot(lake, name)
        if len(rows) > max_rows:
            assert catalog_results(retried, name) == untracked(columns), name
            continue
        expected = expected_results(columns, pair_agree_sets(columns, rows, null_equals_null))
        assert catalog_results(retried, name) == expected, (name, applied)
        approximate += sum(error > 0 for _lhs, _rhs, error in expected["fds"])
    assert approximate > 0  # the relations are varied enough to have approximate FDs to check
    assert catalog_results(retried, "web/b") == {"agree_sets": {}, "uccs": set(), "fds": set(), "unique": {}}

    # rebuilt through Spark alone (keys and FDs derived in Spark tasks), where the batches above were merged
    # and their keys derived on the driver (``scan.driver_state_bytes``)
    through_spark = ScanConfig(driver_state_bytes=0)
    fresh = Pipeline(
        spark, Config(lake=lake, catalog=tmp_path / "fresh-catalog", agree_sets=config, scan=through_spark)
    )
    process(fresh, *COMPONENTS)
    for name in ("state/agree_sets", "unique_column_combinations", "functional_dependencies", "columns"):
        assert sorted_rows(retried, name) == sorted_rows(fresh, name), name
