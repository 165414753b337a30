"""FK discovery end to end on small real databases of the development set (../shared/data/relational):
German snake_case names, ids 1..n in many tables at once, a one-to-one pair of keys, string keys; the
packaged model with names, default settings. ``bench/fk_relational.py`` measures all 123 databases."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from lakemeta.config import Config
from lakemeta.fks.training import canonical
from lakemeta.lake.sqlite import foreign_keys, write_database
from lakemeta.orchestration.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark

DATABASES = ("dorm_1", "customers_and_invoices", "department_management")
UNDECLARED = {
    # a product's parent product: a reference the schema does not declare
    (
        "customers_and_invoices/produkte",
        ("übergeordnete_produkt_id",),
        "customers_and_invoices/produkte",
        ("produkt_id",),
    ),
}


def holding(lake: Path, database: str, path: Path) -> set:
    """The database's declared FKs whose values are all in their key, as lake table names."""
    found = set()
    for table, columns, key_table, key_columns in foreign_keys(path):
        dependent = DeltaTable(str(lake / database / table)).to_pyarrow_table(columns=list(columns))
        key = DeltaTable(str(lake / database / key_table)).to_pyarrow_table(columns=list(key_columns))
        values = pc.unique(pc.drop_null(dependent[columns[0]]))
        if len(columns) == 1 and len(values) and pc.all(pc.is_in(values, key[key_columns[0]])).as_py():
            found.add(canonical((f"{database}/{table}", columns, f"{database}/{key_table}", key_columns)))
    return found


@pytest.fixture(scope="module")
def discovered(spark, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list, dict]:
    root = tmp_path_factory.mktemp("relational")
    truth = {}
    for database in DATABASES:
        path = shared_data / "relational" / "spider" / database / f"{database}.sqlite"
        write_database(path, root / "lake" / database)
        truth[database] = holding(root / "lake", database, path)
    pipeline = Pipeline(spark, Config(lake=root / "lake", catalog=root / "catalog"))
    process(pipeline, "column_profile", "hll_counters", "column_values", "agree_sets")
    for step in ("inclusion_estimates", "fk_candidates"):
        pipeline.discover(step)
    return pipeline.catalog.read_small("fk_candidates").to_pylist(), truth


def test_the_declared_foreign_keys_of_real_databases_are_found(discovered) -> None:
    rows, truth = discovered
    accepted = {
        canonical((r["fk_table"], tuple(r["fk_columns"]), r["pk_table"], tuple(r["pk_columns"])))
        for r in rows
        if r["accepted"]
    }
    for database, true in truth.items():
        found = {fk for fk in accepted if fk[0].startswith(f"{database}/")}
        assert true and found - UNDECLARED == true, (database, sorted(true - found), sorted(found - true))
    # every candidate says why it was or was not accepted
    assert all(r["evidence"] and 0 <= r["score"] <= 1 for r in rows)
    assert all(r["accepted"] == (r["reason"] is None) for r in rows)
