"""The choice among foreign-key candidates (``choice``) on hand-made signals."""

from __future__ import annotations

import pyarrow as pa

from lakemeta.config import FkConfig
from lakemeta.fks.candidates import SCORED
from lakemeta.fks.choice import choose
from lakemeta.fks.overlaps import SCHEMA as OVERLAPS


def candidate(fk: str, pk: str, emd: float, **signals: object) -> dict:
    fk_table, fk_column = fk.split(".")
    pk_table, pk_column = pk.split(".")
    return {
        "fk_table": fk_table, "fk_columns": [fk_column], "pk_table": pk_table, "pk_columns": [pk_column],
        "pk_source": "agree_sets", "emd": emd, "inclusion": 1.0, "coverage": 0.5,
        "fk_distinct": 100, "pk_distinct": 1000, "span_start": 0.0, "span_end": 1.0,
        "pk_is_integer": True, "pk_is_range": True, "fk_step": 1,
        "fk_is_key": False, "pk_ordinal": 0,
        **signals,
    }  # fmt: skip


def accepted(rows: list[dict], config: FkConfig, overlaps: list[dict] = ()) -> dict[str, str]:
    chosen = choose(
        pa.Table.from_pylist(rows, schema=SCORED), pa.Table.from_pylist(overlaps, schema=OVERLAPS), config
    )
    result = chosen.to_pylist()
    assert [r["rank"] for r in result] == list(range(1, len(result) + 1))
    return {
        f"{r['fk_table']}.{r['fk_columns'][0]}": f"{r['pk_table']}.{r['pk_columns'][0]}"
        for r in result
        if r["accepted"]
    }


NAMES_IGNORED = FkConfig(name_signal=False)


def test_each_dependent_takes_one_key_its_own_schema_first() -> None:
    rows = [
        # the same ids 1..N in two schemas: a sample of both; its own folder's key wins
        candidate("a/orders.cust", "a/customers.id", 0.01),
        candidate("a/orders.cust", "b/accounts.id", 0.0),
        # a dependent of schema c with a key only elsewhere: taken only as a sample of more than a numbering
        candidate("c/events.user", "a/customers.id", 0.02, pk_is_range=False),
        candidate("c/events.line", "a/customers.id", 0.0),
        candidate("c/logs.code", "a/customers.id", 0.3, span_start=0.3, span_end=0.7),
    ]
    assert accepted(rows, NAMES_IGNORED) == {
        "a/orders.cust": "a/customers.id",
        "c/events.user": "a/customers.id",
    }
    chosen = choose(pa.Table.from_pylist(rows, schema=SCORED), OVERLAPS.empty_table(), NAMES_IGNORED)
    graphs = {(r["fk_table"], r["schema_graph"]) for r in chosen.to_pylist()}
    # schema graphs join tables of one folder only: c's tables reference a's, each is its own graph
    assert graphs == {("a/orders", "a/customers"), ("c/events", "c/events"), ("c/logs", "c/logs")}


def test_accidents_are_ruled_out_and_the_only_key_left_is_accepted() -> None:
    rows = [
        # a line number counting from 1 inside two id ranges: ruled out in both
        candidate("s/lineitem.line", "s/orders.id", 0.45, span_end=0.01),
        candidate("s/lineitem.line", "s/parts.id", 0.4, span_start=0.001, span_end=0.04),
        # ... and inside a sparse one (TPC-H's order keys): still an accident
        candidate("s/lineitem.line", "s/invoices.no", 0.45, span_end=0.01, pk_is_range=False),
        # a few years of a calendar: no sample, but the schema's only key holding them
        candidate("s/sales.sold_date", "s/dates.date_sk", 0.3, span_start=0.48, span_end=0.51),
        # a year inside two id ranges, neither a sample: answer set 2 only
        candidate("s/dates.year", "s/orders.id", 0.3, span_start=0.19, span_end=0.21),
        candidate("s/dates.year", "s/parts.id", 0.35, span_start=0.38, span_end=0.42),
        # a self-reference
        candidate("s/employees.manager", "s/employees.id", 0.01),
        # one value is no evidence: the only key holding it, yet not accepted
        candidate("s/flags.one", "s/parts.id", 0.3, fk_distinct=1, span_start=0.5, span_end=0.51),
        # more week numbers than ids, 95% of them among the ids: a longer numbering
        candidate("s/weeks.week", "s/orders.id", 0.02, fk_distinct=1040, inclusion=0.96, coverage=1.0),
        # amounts in round hundreds spread over the ids: a measure; ten of them are enough to tell
        candidate("s/quotes.amount", "s/orders.id", 0.01, fk_step=100, fk_distinct=10),
        candidate("s/quotes.bids", "s/orders.id", 0.01, fk_step=2, fk_distinct=9),
    ]
    assert accepted(rows, NAMES_IGNORED) == {
        "s/sales.sold_date": "s/dates.date_sk",
        "s/employees.manager": "s/employees.id",
        "s/quotes.bids": "s/orders.id",
    }
    chosen = {
        (r["fk_table"], r["pk_table"]): r
        for r in choose(
            pa.Table.from_pylist(rows, schema=SCORED), OVERLAPS.empty_table(), NAMES_IGNORED
        ).to_pylist()
    }
    assert (
        chosen[("s/dates", "s/orders")]["answer_set"] == 2 and chosen[("s/dates", "s/parts")]["choice"] == 2
    )
    assert chosen[("s/lineitem", "s/orders")]["reason"] == "counts from the key's first values"
    reasons = {r["fk_columns"][0]: r["reason"] for r in chosen.values() if r["pk_table"] == "s/orders"}
    assert reasons["week"] == "more distinct values than the key" and reasons["amount"] == "multiples of 100"
    # with names as a signal, a wholly matching name takes the year's... nothing: no key is named year
    assert accepted(rows, FkConfig()) == accepted(rows, NAMES_IGNORED)


def test_overlapping_tables_reference_no_one_and_names_order_equal_data() -> None:
    rows = [
        candidate("w/planets_1.planet", "w/planets_2.planet", 0.0, pk_is_integer=False, pk_is_range=False),
        candidate("w/moons.planet", "w/planets_2.planet", 0.01, pk_is_integer=False, pk_is_range=False),
        candidate("w/moons.planet", "w/planets_1.planet", 0.0, pk_is_integer=False, pk_is_range=False),
    ]
    overlap = {"left_table": "w/planets_1", "right_table": "w/planets_2", "columns": ["planet=planet"],
               "left_in_right": 1.0, "right_in_left": 0.5, "mutual_keys": False}  # fmt: skip
    assert accepted(rows, NAMES_IGNORED, [overlap]) == {"w/moons.planet": "w/planets_1.planet"}
    named = [
        dict(row, pk_columns=["planet_name"]) if row["pk_table"] == "w/planets_1" else row for row in rows
    ]
    assert accepted(named, FkConfig(), [overlap]) == {"w/moons.planet": "w/planets_2.planet"}
