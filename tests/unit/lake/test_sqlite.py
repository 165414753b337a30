"""A SQLite database as Delta tables (``lake.sqlite``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from lakemeta.lake.sqlite import foreign_keys, primary_keys, write_database


def test_a_database_becomes_typed_delta_tables_with_valid_names(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(
            """
            CREATE TABLE "kunden" ("kunden_id" INTEGER PRIMARY KEY, "name" VARCHAR(20), "rabatt" REAL,
                                   "plz" TEXT, "quote (%)" NUMERIC, "seit" DATETIME);
            INSERT INTO "kunden" VALUES (1, 'Ärzte eG', 0.5, '01067', 3, '2020-01-01'),
                                        (2, NULL, 1, '80331', 2.5, NULL),
                                        (3, 'Bäckerei', NULL, NULL, 'n/a', '2021-05-03');
            CREATE TABLE "bestellungen" ("bestell_nr" INT, "kunden_id" INT, "menge" INT,
                                         PRIMARY KEY ("bestell_nr", "kunden_id"),
                                         FOREIGN KEY ("kunden_id") REFERENCES "kunden" ("kunden_id"));
            """
        )
    assert write_database(path, tmp_path / "lake" / "shop") == ["kunden", "bestellungen"]
    kunden = DeltaTable(str(tmp_path / "lake/shop/kunden")).to_pyarrow_table()
    assert kunden.schema.names == ["kunden_id", "name", "rabatt", "plz", "quote__%_", "seit"]
    assert kunden.schema.types[:4] == [pa.int64(), pa.string(), pa.float64(), pa.string()]
    assert kunden["rabatt"].to_pylist() == [0.5, 1.0, None]  # an integer among reals is a real
    assert kunden["plz"].to_pylist() == ["01067", "80331", None]  # text keeps its leading zero
    assert kunden["quote__%_"].to_pylist() == ["3", "2.5", "n/a"]  # mixed kinds: text, each as written
    assert kunden["name"].to_pylist() == ["Ärzte eG", None, "Bäckerei"]
    empty = DeltaTable(str(tmp_path / "lake/shop/bestellungen")).to_pyarrow_table()
    assert empty.num_rows == 0 and empty.schema.types == [pa.int64()] * 3  # INT affinity, no rows
    assert primary_keys(path) == {"kunden": ("kunden_id",), "bestellungen": ("bestell_nr", "kunden_id")}
    assert foreign_keys(path) == [("bestellungen", ("kunden_id",), "kunden", ("kunden_id",))]
