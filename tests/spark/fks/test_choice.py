"""The FK choice on a small lake of two schemas with known foreign keys: ids 1..N in both schemas, a copy
of a table, a self-reference, a dirty FK, counting columns inside every id range; names ignored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config, FkConfig
from lakemeta.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark

TRUE_FKS = {
    ("shop/orders", ("cust_id",), "shop/customers", ("cust_id",)),
    ("shop/orders_copy", ("cust_id",), "shop/customers", ("cust_id",)),  # a copy keeps its references
    ("shop/customers", ("manager_id",), "shop/customers", ("cust_id",)),  # self-reference
    ("shop/payments", ("order_ref",), "shop/orders", ("order_id",)),  # 5% of its values dangle
    ("billing/invoices", ("acct_id",), "billing/accounts", ("acct_id",)),  # ids 1..300 as shop's
    ("shop/customers", ("segment",), "shop/segments", ("segment",)),  # not the copy in billing/
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


def test_the_choice_accepts_exactly_the_true_foreign_keys_and_finds_the_overlaps(
    spark, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    write_lake(lake)
    config = Config(lake=lake, catalog=tmp_path / "catalog", fks=FkConfig(name_signal=False))
    pipeline = Pipeline(spark, config)
    process(pipeline, "column_profile", "hll_counters", "agree_sets")
    for step in ("inclusion_estimates", "fk_candidates"):
        pipeline.discover(step)
    rows = pipeline.catalog.read_small("fk_candidates").to_pylist()
    accepted = {
        (r["fk_table"], tuple(r["fk_columns"]), r["pk_table"], tuple(r["pk_columns"]))
        for r in rows
        if r["accepted"]
    }
    assert accepted == TRUE_FKS
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
    quantity = [r for r in rows if r["fk_table"] == "shop/orders" and r["fk_columns"] == ["quantity"]]
    assert quantity and all(r["reason"] == "counts from the key's first values" for r in quantity)
