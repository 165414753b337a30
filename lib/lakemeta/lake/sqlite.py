"""A SQLite database as Delta tables of a lake folder, with the keys its schema declares.

Real relational databases often travel as SQLite files. Each table becomes a Delta table
``<folder>/<table>``; each column's Arrow type follows SQLite's type affinity of its declared type (§3.1 of
SQLite's "Datatypes" page: INT → integer, CHAR/CLOB/TEXT → text, REAL/FLOA/DOUB → real, else numeric),
narrowed by what the column holds, because SQLite stores any value in any column: a column whose values are
not all of one kind is text, every value written as SQLite's own text form of it. Column names are made
valid for Delta as ``lakemeta ingest`` makes them (``ingest.valid_column_names``).
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


def _column_array(values: list, declared: str) -> pa.Array:
    """One column's values as Arrow: integers, reals or text as the values allow (module docstring)."""
    kinds = {type(value) for value in values if value is not None}
    affinity = declared.upper()
    numeric = not any(text in affinity for text in ("CHAR", "CLOB", "TEXT"))
    if numeric and (kinds == {int} or (not kinds and "INT" in affinity)):
        try:
            return pa.array(values, pa.int64())
        except OverflowError:  # beyond 64 bits: kept exactly as text
            pass
    elif numeric and kinds and kinds <= {int, float}:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array([None if v is None else _text(v) for v in values], pa.string())


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def read_table(connection: sqlite3.Connection, table: str) -> pa.Table:
    """A table's rows as Arrow (see the module docstring for the types)."""
    info = connection.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()
    names = [row[1] for row in info]
    rows = connection.execute(f"SELECT {', '.join(map(_quoted, names))} FROM {_quoted(table)}").fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [_column_array(list(values), row[2]) for values, row in zip(columns, info, strict=True)]
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
