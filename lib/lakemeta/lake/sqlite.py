"""A SQLite database as Delta tables of a lake folder, with the keys its schema declares.

Real relational databases often travel as SQLite files. Each table becomes a Delta table
``<folder>/<table>``; each column's Arrow type follows SQLite's type affinity of its declared type (§3.1 of
SQLite's "Datatypes" page: INT → integer, CHAR/CLOB/TEXT → text, REAL/FLOA/DOUB → real, else numeric),
narrowed by what the column holds, because SQLite stores any value in any column: a column whose values are
not all of one kind is text, every value written as SQLite's own text form of it (a blob as hex). Column
names are made valid for Delta as ``lakemeta ingest`` makes them (``ingest.valid_column_names``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from lakemeta.lake.ingest import valid_column_names


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection (the file may sit on a read-only mount)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    connection.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return connection


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_names(connection: sqlite3.Connection) -> list[str]:
    """The database's tables (not SQLite's own), in the order they were created."""
    query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    return [name for (name,) in connection.execute(query)]


def _column(
    connection: sqlite3.Connection, table: str, column: str, declared: str
) -> tuple[str, pa.DataType]:
    """A column's SQL expression and Arrow type: integers, reals or text as its values allow (module
    docstring), the values' kinds read by SQLite (``typeof``) and the conversion made by SQLite too."""
    quoted = _quoted(column)
    kinds = {
        kind for (kind,) in connection.execute(f"SELECT DISTINCT typeof({quoted}) FROM {_quoted(table)}")
    }
    kinds.discard("null")
    affinity = declared.upper()
    numeric = not any(text in affinity for text in ("CHAR", "CLOB", "TEXT"))
    if numeric and (kinds == {"integer"} or (not kinds and "INT" in affinity)):
        return quoted, pa.int64()
    if numeric and kinds and kinds <= {"integer", "real"}:
        return f"CAST({quoted} AS REAL)", pa.float64()
    return (
        f"CASE typeof({quoted}) WHEN 'blob' THEN hex({quoted}) ELSE CAST({quoted} AS TEXT) END",
        pa.string(),
    )


def read_table(connection: sqlite3.Connection, table: str) -> pa.Table:
    """A table's rows as Arrow (see the module docstring for the types)."""
    info = connection.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()
    names = [row[1] for row in info]
    columns = [_column(connection, table, row[1], row[2]) for row in info]
    rows = connection.execute(f"SELECT {', '.join(e for e, _ in columns)} FROM {_quoted(table)}").fetchall()
    values = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [pa.array(list(v), kind) for v, (_, kind) in zip(values, columns, strict=True)]
    return pa.table(arrays, names=valid_column_names(names))


def primary_keys(path: Path) -> dict[str, tuple[str, ...]]:
    """Each table's declared primary key (tables without one left out)."""
    with _connect(path) as connection:
        keys = {}
        for table in table_names(connection):
            info = connection.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()
            in_key = sorted((row[5], row[1]) for row in info if row[5])
            if in_key:
                keys[table] = tuple(name for _, name in in_key)
        return keys


def foreign_keys(path: Path) -> list[tuple[str, tuple[str, ...], str, tuple[str, ...]]]:
    """The declared foreign keys: (table, columns, referenced table, referenced columns), a composite one's
    columns in their declared order; a reference naming no columns names the referenced table's primary
    key."""
    declared = []
    keys = primary_keys(path)
    with _connect(path) as connection:
        for table in table_names(connection):
            listed: dict[int, list[tuple]] = {}
            for row in connection.execute(f"PRAGMA foreign_key_list({_quoted(table)})").fetchall():
                listed.setdefault(row[0], []).append(row)
            for rows in listed.values():
                rows.sort(key=lambda row: row[1])
                referenced = rows[0][2]
                to = tuple(row[4] for row in rows)
                if None in to:
                    to = keys.get(referenced, ())
                declared.append((table, tuple(row[3] for row in rows), referenced, to))
    return declared


def write_database(path: Path, lake_folder: Path) -> list[str]:
    """Every table of the SQLite database at ``path`` as a Delta table under ``lake_folder`` (replaced when
    there); returns the tables' names."""
    with _connect(path) as connection:
        names = table_names(connection)
        for table in names:
            write_deltalake(str(lake_folder / table), read_table(connection, table), mode="overwrite")
    return names
