"""``fk_candidates`` through the pipeline, on one lake run once with the default settings (TPC-H's foreign
keys: ``test_tpch``; real databases: ``test_relational``):

* ``shop/`` and ``billing/``: two schemas with known foreign keys, ids 1..N in both, a copy of a table, a
  self-reference, a dirty FK, a one-row table, counting columns and round amounts inside id ranges: the
  choice accepts the named references, leaves a self-reference without a name link and a one-value column
  for review (answer set 2: the training data holds no such FK to learn from), and finds the overlaps;
* ``ranges/``: ranges of a key rank below random samples of it, and multi-column candidates are pruned
  on their tuples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config
from lakemeta.fks.schema_view import write_catalog_page
from lakemeta.orchestration.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark

ACCEPTED_FKS = {
    ("shop/orders", ("cust_id",), "shop/customers", ("cust_id",)),
    ("shop/orders_copy", ("cust_id",), "shop/customers", ("cust_id",)),  # a copy keeps its references
    ("shop/payments", ("order_ref",), "shop/orders", ("order_id",)),  # 5% of its values dangle
    ("billing/invoices", ("acct_id",), "billing/accounts", ("acct_id",)),  # ids 1..300 as shop's
    ("shop/customers", ("segment",), "shop/segments", ("segment",)),  # not the copy in billing/
}
REVIEWED_FKS = {
    ("shop/customers", ("manager_id",), "shop/customers", ("cust_id",)),  # self-reference, no name link
    ("shop/orders", ("wh_id",), "shop/warehouses", ("wh_id",)),  # one value, a one-row table's key
    ("shop/orders_copy", ("wh_id",), "shop/warehouses", ("wh_id",)),
}
SEGMENTS = ["retail", "trade", "public"]


def write_lake(lake: Path) -> None:
    rng = np.random.default_rng(11)
    customers = np.arange(1, 301)
    bosses = rng.choice(customers, 60, replace=False)
    managers = np.where(rng.random(300) < 0.2, None, rng.choice(bosses, 300)).tolist()
    managers = [None if m is None else int(m) for m in managers]
    write_deltalake(
        str(lake / "shop/customers"),
        pa.table(
            {
                "cust_id": customers,
                "segment": rng.choice(SEGMENTS, 300),
                "manager_id": pa.array(managers, pa.int64()),
            }
        ),
    )
    orders = pa.table(
        {
            "order_id": np.arange(1, 2401),
            "cust_id": rng.choice(customers, 2400),
            "quantity": rng.integers(1, 21, 2400),  # 1..20 inside every id range: no FK
            "status": rng.choice(["open", "shipped", "returned", "lost"], 2400),
            "wh_id": np.ones(2400, dtype=np.int64),
            "budget": rng.choice(np.arange(100, 2401, 100), 2400),  # round amounts among the order ids
        }
    )
    write_deltalake(str(lake / "shop/orders"), orders)
    write_deltalake(
        str(lake / "shop/orders_copy"), orders.take(np.sort(rng.choice(2400, 1400, replace=False)))
    )
    dangling = np.arange(5001, 5026)
    write_deltalake(
        str(lake / "shop/payments"),
        pa.table(
            {
                "pay_id": np.arange(1, 1001),
                "order_ref": np.concatenate([rng.choice(np.arange(1, 2401), 975), rng.choice(dangling, 25)]),
            }
        ),
    )
    write_deltalake(str(lake / "shop/warehouses"), pa.table({"wh_id": [1], "city": ["Leeds"]}))
    write_deltalake(
        str(lake / "billing/accounts"),
        pa.table({"acct_id": customers, "plan": rng.choice(["basic", "gold"], 300)}),
    )
    write_deltalake(
        str(lake / "shop/segments"), pa.table({"segment": SEGMENTS, "discount": [0.0, 0.1, 0.05]})
    )
    write_deltalake(str(lake / "billing/segments_2024"), pa.table({"segment": SEGMENTS, "rate": [1, 2, 3]}))
    write_deltalake(
        str(lake / "billing/invoices"),
        pa.table({"inv_id": np.arange(1, 1001), "acct_id": rng.choice(customers, 1000)}),
    )


def write_ranges(lake: Path) -> None:
    rng = np.random.default_rng(3)
    key = np.arange(1, 4001)
    write_deltalake(str(lake / "ranges/accounts"), pa.table({"account": key, "region": key % 7}))
    samples = {
        "sampled": rng.choice(key, 2500),  # random subset, with repeats
        "prefix": rng.choice(key[:2500], 2500),
        "suffix": rng.choice(key[-2500:], 2500),
    }
    for name, values in samples.items():
        write_deltalake(str(lake / "ranges" / name), pa.table({"ref": values}))
    # A two-column key (x, y) = (a, a + d mod 60), d < 10, and candidates whose columns are each included
    # in x and y: one holding the key's tuples, one holding (a, a + 30 + d mod 60), none of them the key's.
    tuples = [(a, (a + d) % 60) for a in range(60) for d in range(10)]
    write_deltalake(
        str(lake / "ranges/grid"), pa.table({"x": [a for a, _ in tuples], "y": [b for _, b in tuples]})
    )
    chosen = [tuples[i] for i in rng.choice(len(tuples), 400, replace=False)]
    write_deltalake(
        str(lake / "ranges/grid_refs"), pa.table({"gx": [a for a, _ in chosen], "gy": [b for _, b in chosen]})
    )
    crossed = [(a, (b + 30) % 60) for a, b in tuples]
    write_deltalake(
        str(lake / "ranges/crossed"), pa.table({"cx": [a for a, _ in crossed], "cy": [b for _, b in crossed]})
    )


def candidates(pipeline: Pipeline) -> list[dict]:
    """The ranked candidates: answer set 1, then 2, then the rest, each by score, then EMD_n."""
    rows = pipeline.catalog.read_small("fk_candidates").sort_by("rank").to_pylist()
    assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1))
    ordered = [(row["answer_set"] or 3, -row["score"], row["emd"]) for row in rows]
    assert ordered == sorted(ordered)
    return rows


@pytest.fixture(scope="module")
def discovered(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Pipeline, list[dict]]:
    root = tmp_path_factory.mktemp("fks")
    write_lake(root / "lake")
    write_ranges(root / "lake")
    config = Config(lake=root / "lake", catalog=root / "catalog")
    pipeline = Pipeline(spark, config)
    process(
        pipeline, "column_profile", "hll_counters", "column_values", "agree_sets"
    )  # keys come from the agree-sets
    for step in ("inclusion_estimates", "fk_candidates"):
        pipeline.discover(step)
    return pipeline, candidates(pipeline)


def identity(row: dict) -> tuple:
    return row["fk_table"], tuple(row["fk_columns"]), row["pk_table"], tuple(row["pk_columns"])


def test_the_choice_accepts_the_named_references_and_finds_the_overlaps(discovered) -> None:
    pipeline, rows = discovered
    rows = [r for r in rows if not r["fk_table"].startswith("ranges/")]
    assert {identity(r) for r in rows if r["accepted"]} == ACCEPTED_FKS
    reviewed = {identity(r): r for r in rows if identity(r) in REVIEWED_FKS}
    assert set(reviewed) == REVIEWED_FKS
    assert all(r["choice"] == 1 and r["answer_set"] == 2 for r in reviewed.values())
    assert all(r["reason"].startswith("score ") and r["evidence"] for r in reviewed.values())
    dirty = next(r for r in rows if r["fk_table"] == "shop/payments" and r["accepted"])
    assert 0.95 < dirty["inclusion"] < 1.0
    overlaps = {
        (r["left_table"], r["right_table"]): r
        for r in pipeline.catalog.read_small("table_overlaps").to_pylist()
    }
    # two lists of one vocabulary are copies; two tables numbered 1..300 or 1..1000 are not
    assert set(overlaps) == {("billing/segments_2024", "shop/segments"), ("shop/orders", "shop/orders_copy")}
    assert overlaps[("billing/segments_2024", "shop/segments")]["mutual_keys"]
    assert overlaps[("shop/orders", "shop/orders_copy")]["right_in_left"] == 1.0
    copies = [r for r in rows if {r["fk_table"], r["pk_table"]} == {"shop/orders", "shop/orders_copy"}]
    assert copies and all(r["reason"] == "tables overlap" for r in copies)
    # counting columns and round amounts inside id ranges are candidates, none accepted
    for column in ("quantity", "budget"):
        found = [r for r in rows if r["fk_table"] == "shop/orders" and r["fk_columns"] == [column]]
        assert found and not any(r["accepted"] for r in found)


def test_ranges_of_a_key_rank_below_random_samples_and_tuples_prune_multi_column_candidates(
    discovered,
) -> None:
    pipeline, rows = discovered
    single = {
        row["fk_table"].removeprefix("ranges/"): row for row in rows if row["pk_columns"] == ["account"]
    }
    assert set(single) >= {"sampled", "prefix", "suffix"}
    assert single["sampled"]["emd"] < min(single["prefix"]["emd"], single["suffix"]["emd"])
    # a sample of the key scores above a range of it
    assert single["sampled"]["score"] > max(single["prefix"]["score"], single["suffix"]["score"])
    assert single["sampled"]["rank"] < min(single["prefix"]["rank"], single["suffix"]["rank"])
    several = {(r["fk_table"], tuple(r["fk_columns"])): r for r in rows if r["pk_table"] == "ranges/grid"}
    assert several[("ranges/grid_refs", ("gx", "gy"))]["inclusion_estimate"] >= 0.9
    assert not [table for table, _ in several if table == "ranges/crossed"]  # pruned on its tuples
    page_path = pipeline.config.catalog.local_path().parent / "schemas.html"
    write_catalog_page(pipeline.config.catalog, page_path, pipeline.config.fks.schema_of)
    page = page_path.read_text(encoding="utf-8")
    assert "(order_ref) \u2192 (order_id)" in page  # accepted FKs drawn
