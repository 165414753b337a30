"""Name features of foreign-key candidates in every naming style (``names``)."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from lakemeta.fks.names import bare_tokens, in_compound, name_columns, same_word, tokens


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ss_sold_date_sk", ["ss", "sold", "date", "sk"]),  # snake_case
        ("SalesRepId", ["sales", "rep", "id"]),  # CamelCase, split before folding case
        ("EmployeeID", ["employee", "id"]),
        ("HTMLParser", ["html", "parser"]),  # an acronym before a word
        ("customerID2", ["customer", "id", "2"]),  # digits
        ("schüler_id", ["schuler", "id"]),  # umlauts are letters
        ("Größe der Straße", ["grosse", "der", "strasse"]),
        ("café-nr", ["cafe", "nr"]),
    ],
)
def test_names_split_into_folded_tokens_in_every_style(name: str, expected: list[str]) -> None:
    assert tokens(name) == tuple(expected)


@pytest.mark.parametrize(
    ("column", "table", "expected"),
    [
        ("l_orderkey", "tpch/lineitem", ["orderkey"]),  # TPC-H's table prefixes
        ("ps_partkey", "tpch/partsupp", ["partkey"]),
        ("cd_demo_sk", "tpcds/customer_demographics", ["demo", "sk"]),  # initials of the table's words
        ("inv_item_sk", "tpcds/inventory", ["item", "sk"]),
        ("kunden_id", "shop/kunden", ["kunden", "id"]),  # a word, not a prefix
        ("ort_id", "geo/ort", ["ort", "id"]),  # the table's whole name is no abbreviation of it
        ("customer_id", "shop/orders", ["customer", "id"]),
    ],
)
def test_only_a_table_prefix_is_dropped(column: str, table: str, expected: list[str]) -> None:
    assert bare_tokens(column, table) == tuple(expected)


def test_word_forms_and_compounds_match() -> None:
    assert same_word("kunde", "kunden") and same_word("produkt", "produkte") and same_word("konto", "konten")
    assert same_word("category", "categories") and same_word("land", "lander")
    assert not same_word("date", "data") and not same_word("order", "ordinal")
    assert in_compound("gastgeberstadt", "stadt") and in_compound("kundenkonto", "konto")
    assert not in_compound("stadt", "gastgeberstadt") and not in_compound("produktmenge", "produkt")


def name_features(
    fk_table: str, fk_columns: list[str], pk_table: str, pk_columns: list[str]
) -> SimpleNamespace:
    """The name features of one candidate."""
    candidate = pa.table(
        {
            "fk_table": [fk_table],
            "fk_columns": [fk_columns],
            "pk_table": [pk_table],
            "pk_columns": [pk_columns],
        }
    )
    return SimpleNamespace(**{name: values[0].item() for name, values in name_columns(candidate).items()})


@pytest.mark.parametrize(
    ("fk_table", "fk", "pk_table", "pk", "equal", "names_key_table", "similarity"),
    [
        ("shop/bestellungen", "kunden_id", "shop/kunden", "kunden_id", True, True, 1.0),  # snake_case, German
        ("crm/Orders", "CustomerId", "crm/Customers", "Id", False, True, 1.0),  # CamelCase, plural table
        ("crm/Orders", "SalesRepId", "crm/Employees", "EmployeeId", False, False, 0.0),
        ("school/wohnt_in", "student_id", "school/schüler", "student_id", True, False, 1.0),
        ("tpch/lineitem", "l_partkey", "tpch/part", "p_partkey", True, True, 1.0),  # TPC prefixes
        ("tpcds/store_sales", "ss_sold_date_sk", "tpcds/date_dim", "d_date_sk", False, True, 1.0),
        ("tpcds/store_sales", "ss_sold_date_sk", "tpcds/time_dim", "t_time_sk", False, False, 0.0),
        ("tpcds/customer", "c_current_addr_sk", "tpcds/customer_address", "ca_address_sk", False, False, 1.0),
        ("world/landessprache", "ländercode", "world/land", "code", False, True, 1.0),  # umlaut plural
        ("farm/wettbewerb", "gastgeberstadt_id", "farm/stadt", "stadt_id", False, True, 1.0),  # compound
        ("shop/orders", "quantity", "shop/parts", "part_id", False, False, 0.0),
    ],
)
def test_name_features_of_references(
    fk_table: str, fk: str, pk_table: str, pk: str, equal: bool, names_key_table: bool, similarity: float
) -> None:
    features = name_features(fk_table, [fk], pk_table, [pk])
    assert features.name_equal == equal
    assert features.names_key_table == names_key_table
    assert features.name_similarity == pytest.approx(similarity)


def test_names_tell_a_table_s_own_key_and_the_direction_of_a_detail_table() -> None:
    own = name_features("bank/girokonto", ["kunden_id"], "bank/konten", ["kunden_id"])
    assert own.fk_table_extends_key_table and not own.key_table_extends_fk_table
    assert not own.key_names_own_table  # konten.kunden_id is named after another table
    reverse = name_features("bank/konten", ["kunden_id"], "bank/girokonto", ["kunden_id"])
    assert reverse.key_table_extends_fk_table and not reverse.fk_table_extends_key_table
    keyed = name_features("shop/orders", ["customer_id"], "shop/customers", ["customer_id"])
    assert keyed.key_names_own_table and not keyed.fk_names_own_table and keyed.fk_identifier
    composite = name_features("s/lines", ["order_id", "part_id"], "s/stock", ["order_id", "part_id"])
    assert composite.name_equal and composite.name_similarity == 1.0
