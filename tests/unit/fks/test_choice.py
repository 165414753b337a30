"""The choice among foreign-key candidates (``choice``): its mechanics under a given score, and the packaged
model's choices on hand-made signals of cases real databases hold."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakemeta.config import FkConfig
from lakemeta.fks.candidates import SCORED
from lakemeta.fks.choice import choose
from lakemeta.fks.model import LogisticModel
from lakemeta.fks.overlaps import SCHEMA as OVERLAPS


def candidate(fk: str, pk: str, emd: float = 0.02, **signals: object) -> dict:
    fk_table, fk_column = fk.rsplit(".", 1)
    pk_table, pk_column = pk.rsplit(".", 1)
    return {
        "fk_table": fk_table, "fk_columns": fk_column.split("+"), "pk_table": pk_table,
        "pk_columns": pk_column.split("+"), "pk_source": "agree_sets", "emd": emd, "inclusion": 1.0,
        "coverage": 0.5, "fk_distinct": 100, "pk_distinct": 1000, "span_start": 0.0, "span_end": 1.0,
        "pk_is_integer": True, "pk_is_range": True, "fk_step": 1, "fk_is_key": False, "pk_ordinal": 0,
        **signals,
    }  # fmt: skip


DEFAULTS = FkConfig()


def chosen(
    rows: list[dict], config: FkConfig = DEFAULTS, scoring: LogisticModel | None = None, overlaps=()
) -> list[dict]:
    table = choose(
        pa.Table.from_pylist(rows, schema=SCORED),
        pa.Table.from_pylist(list(overlaps), schema=OVERLAPS),
        config,
        scoring,
    )
    result = table.to_pylist()
    assert [r["rank"] for r in result] == list(range(1, len(result) + 1))
    return result


def accepted(result: list[dict]) -> dict[str, str]:
    return {
        f"{r['fk_table']}.{'+'.join(r['fk_columns'])}": f"{r['pk_table']}.{'+'.join(r['pk_columns'])}"
        for r in result
        if r["accepted"]
    }


# a score of the coverage alone: P = 1 / (1 + exp(-10 (coverage - 0.5))), accepted from 0.5 on
BY_COVERAGE = LogisticModel(("coverage",), (10.0,), (0.5,), 0.0, 0.5)


def test_each_dependent_takes_its_best_scored_key_when_the_score_reaches_the_threshold() -> None:
    rows = [
        candidate("a/orders.cust", "a/customers.id", coverage=0.9),
        candidate("a/orders.cust", "a/accounts.id", coverage=0.8),
        candidate("a/orders.line", "a/customers.id", coverage=0.3),
        candidate("c/events.user", "a/customers.id", coverage=0.7),
    ]
    result = chosen(rows, scoring=BY_COVERAGE)
    assert accepted(result) == {"a/orders.cust": "a/customers.id", "c/events.user": "a/customers.id"}
    by_pair = {(r["fk_columns"][0], r["pk_table"]): r for r in result}
    assert by_pair[("cust", "a/accounts")]["reason"] == "outranked by a/customers"
    assert (
        by_pair[("cust", "a/accounts")]["choice"] == 2
        and by_pair[("cust", "a/accounts")]["answer_set"] is None
    )
    line = by_pair[("line", "a/customers")]
    assert line["answer_set"] == 2 and line["reason"] == f"score {line['score']:.3f} below 0.500"
    assert [r["answer_set"] for r in result] == [1, 1, 2, None]  # ranked by answer set, then score
    assert result[0]["score"] > result[1]["score"]
    # schema graphs join the tables of one folder only
    graphs = {(r["fk_table"], r["schema_graph"]) for r in result}
    assert graphs == {("a/orders", "a/accounts"), ("c/events", "c/events")}
    # the evidence names the features that moved the score
    assert result[0]["evidence"] == "coverage +4.00"
    # a configured score from which to accept
    assert accepted(chosen(rows, FkConfig(min_score=0.99), BY_COVERAGE)) == {}


def test_facts_rule_a_candidate_out_and_ties_are_not_accepted() -> None:
    rows = [
        # more week numbers than ids: at least the surplus would dangle
        candidate("s/weeks.week", "s/orders.id", fk_distinct=1040, inclusion=0.96, coverage=1.0),
        # two keys told apart by nothing the score sees
        candidate("s/lines.item", "s/parts.id", coverage=0.9),
        candidate("s/lines.item", "s/stock.id", coverage=0.9, emd=0.02),
    ]
    result = {(r["fk_columns"][0], r["pk_table"]): r for r in chosen(rows, scoring=BY_COVERAGE)}
    assert result[("week", "s/orders")]["reason"] == "more distinct values than the key"
    assert not result[("week", "s/orders")]["accepted"]
    tied = result[("item", "s/parts")]
    assert tied["answer_set"] == 2 and tied["reason"] == "as likely s/stock"
    # §5.4's check, when required, rules out names that differ
    required = chosen(rows[1:], FkConfig(require_name_match=True), BY_COVERAGE)
    assert {r["reason"] for r in required} == {"names differ"}


NAMED = [
    # CamelCase: the order's customer among three keys numbered 1..N
    candidate("crm/Orders.CustomerId", "crm/Customers.Id", coverage=0.8),
    candidate("crm/Orders.CustomerId", "crm/Employees.EmployeeId", coverage=0.9),
    candidate("crm/Orders.CustomerId", "crm/Shippers.ShipperId", coverage=1.0, pk_distinct=120),
    # snake_case in German: the same name on both sides
    candidate("shop/bestellungen.kunden_id", "shop/kunden.kunden_id", coverage=0.7),
    candidate("shop/bestellungen.kunden_id", "shop/adressen.adresse_id", coverage=0.9),
    # TPC-H's table prefixes
    candidate("tpch/orders.o_custkey", "tpch/customer.c_custkey", coverage=0.65),
    candidate("tpch/orders.o_custkey", "tpch/part.p_partkey", coverage=0.5),
]


def test_the_packaged_model_follows_names_in_every_style() -> None:
    assert accepted(chosen(NAMED)) == {
        "crm/Orders.CustomerId": "crm/Customers.Id",
        "shop/bestellungen.kunden_id": "shop/kunden.kunden_id",
        "tpch/orders.o_custkey": "tpch/customer.c_custkey",
    }


@pytest.mark.parametrize(
    "case",
    [
        # one-to-one: a subtype's key references its supertype's key (the dependent is a key itself)
        candidate("club/poker_player.people_id", "club/people.people_id", fk_is_key=True, coverage=0.6),
        # a skewed lookup: ids 1..6 of a status table used as 1..4
        candidate(
            "jobs/tasks.status_id",
            "jobs/status.status_id",
            emd=0.3,
            fk_distinct=4,
            pk_distinct=6,
            coverage=0.67,
            span_end=0.67,
        ),
        # a self-reference: a department's parent department
        candidate(
            "org/abteilungen.übergeordnete_abteilung_id",
            "org/abteilungen.abteilung_id",
            fk_distinct=12,
            pk_distinct=200,
            coverage=0.06,
            span_end=0.9,
            emd=0.2,
        ),
        # a composite key of a link table, referenced by both its columns
        candidate(
            "shop/lines.order_id+part_id",
            "shop/stock.order_id+part_id",
            pk_is_integer=False,
            pk_is_range=False,
            span_start=None,
            span_end=None,
            fk_step=None,
        ),
    ],
)
def test_the_packaged_model_accepts_references_the_old_vetoes_rejected(case: dict) -> None:
    result = chosen([case])
    assert result[0]["accepted"], result[0]["evidence"]


def test_a_composite_key_competes_with_a_single_column_key_of_its_table() -> None:
    rows = [
        candidate("shop/lines.order_id+part_id", "shop/stock.order_id+part_id", pk_is_integer=False,
                  pk_is_range=False, span_start=None, span_end=None, fk_step=None),
        candidate("shop/lines.order_id", "shop/orders.order_id", coverage=0.8),
        candidate("shop/lines.part_id", "shop/parts.part_id", coverage=0.7),
    ]  # fmt: skip
    assert accepted(chosen(rows)) == {
        "shop/lines.order_id+part_id": "shop/stock.order_id+part_id",
        "shop/lines.order_id": "shop/orders.order_id",
        "shop/lines.part_id": "shop/parts.part_id",
    }


def test_overlapping_tables_and_keys_both_ways_weigh_against_a_reference() -> None:
    rows = [
        candidate("w/planets_1.planet", "w/planets_2.planet", 0.0, pk_is_integer=False, pk_is_range=False),
        candidate("w/planets_2.planet", "w/planets_1.planet", 0.0, pk_is_integer=False, pk_is_range=False),
    ]
    overlap = {"left_table": "w/planets_1", "right_table": "w/planets_2", "columns": ["planet=planet"],
               "left_in_right": 1.0, "right_in_left": 1.0, "mutual_keys": True}  # fmt: skip
    result = chosen(rows, overlaps=[overlap])
    assert all(r["tables_overlap"] and r["keys_both_ways"] for r in result)
    assert not accepted(result)


def test_schemas_set_by_patterns_join_folders_and_split_a_flat_one() -> None:
    rows = [
        # one database over two folders: the archive's invoices reference the customers
        candidate("erp_2019/invoices.customer_id", "erp/customers.customer_id", coverage=0.8),
        # two databases in one flat folder, told apart by their tables' prefixes
        candidate("flat/shop_orders.customer_id", "flat/shop_customers.customer_id", coverage=0.8),
        candidate("flat/hr_staff.customer_id", "flat/shop_customers.customer_id", coverage=0.8),
    ]
    dependents = ("erp_2019/invoices", "flat/shop_orders", "flat/hr_staff")
    by_folder = {r["fk_table"]: r for r in chosen(rows, scoring=BY_COVERAGE)}
    assert [by_folder[t]["same_folder"] for t in dependents] == [False, True, True]
    schemas = FkConfig(schemas={"erp_2019/*": "erp", "flat/shop_*": "shop", "flat/hr_*": "hr"})
    by_schema = {r["fk_table"]: r for r in chosen(rows, schemas, BY_COVERAGE)}
    assert [by_schema[t]["same_folder"] for t in dependents] == [True, True, False]
    # the schema graphs follow the schemas
    assert by_schema["erp_2019/invoices"]["schema_graph"] == "erp/customers"
    assert by_schema["flat/hr_staff"]["schema_graph"] == "flat/hr_staff"
    assert by_schema["flat/shop_orders"]["schema_graph"] == "flat/shop_customers"
    # by folder, one graph holds the flat folder's three tables
    assert by_folder["flat/shop_orders"]["schema_graph"] == by_folder["flat/hr_staff"]["schema_graph"]


def test_of_a_candidate_and_its_reverse_at_most_one_is_accepted() -> None:
    rows = [
        # a subtype's key references its supertype's: both ways included, the better scored stays
        candidate("hr/managers.person_id", "hr/people.person_id", coverage=0.9, fk_is_key=True),
        candidate("hr/people.person_id", "hr/managers.person_id", coverage=0.7, fk_is_key=True),
        # two tables numbered 1..N, told apart by nothing: neither
        candidate("x/station.id", "x/train.id", coverage=0.8, fk_is_key=True),
        candidate("x/train.id", "x/station.id", coverage=0.8, fk_is_key=True),
    ]
    result = {(r["fk_table"], r["pk_table"]): r for r in chosen(rows, scoring=BY_COVERAGE)}
    assert accepted(list(result.values())) == {"hr/managers.person_id": "hr/people.person_id"}
    people = result[("hr/people", "hr/managers")]
    assert people["answer_set"] == 2 and people["reason"] == "its reverse from hr/managers scores higher"
    assert result[("x/station", "x/train")]["reason"] == "as likely as its reverse from x/train"
    assert all(r["keys_both_ways"] for r in result.values())
