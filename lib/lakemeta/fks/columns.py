"""The columns one Spark task of the FK search reads, and what it derives from them, each once: the key
checks (``keys``) and the FK candidates (``discover``) read through it.

Each table snapshot's needed columns are read together (``lakemeta.lake.snapshots.read_columns``, delta-rs),
each column is hashed once (``lakemeta.hashing.hash_strings``), and per column tuple its distinct hashes and
distinct tuples are kept for the task's other keys and candidates until the task releases the column after
its last use, so a task holds the columns of the keys in hand, not of all its keys.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from lakemeta.arrays import sorted_unique
from lakemeta.fks.randomness import distinct_tuples
from lakemeta.hashing import combine_hashes, hash_strings
from lakemeta.lake.snapshots import read_columns

Snapshot = tuple[str, int]  # a table's path and version


class ColumnCache:
    """The columns of table snapshots, read on first use; ``need`` lists them beforehand so that a
    snapshot's columns are read together."""

    def __init__(self) -> None:
        self._needed: dict[Snapshot, set[str]] = {}
        self._values: dict[Snapshot, dict[str, pa.Array]] = {}
        self._hashes: dict[tuple[str, int, str], tuple[np.ndarray, np.ndarray]] = {}
        self._distinct_hashes: dict[tuple[str, int, tuple[str, ...]], np.ndarray] = {}
        self._distinct_tuples: dict[tuple[str, int, tuple[str, ...]], list[pa.Array]] = {}

    def need(self, path: str, version: int, columns: Iterable[str]) -> None:
        """Columns of a snapshot that will be read."""
        self._needed.setdefault((path, version), set()).update(columns)

    def release(self, path: str, version: int, columns: Iterable[str]) -> None:
        """Forget columns of a snapshot that are no longer needed, and all that was derived from them."""
        gone = set(columns)
        self._needed.get((path, version), set()).difference_update(gone)
        values = self._values.get((path, version), {})
        for column in gone:
            values.pop(column, None)
            self._hashes.pop((path, version, column), None)
        for derived in (self._distinct_hashes, self._distinct_tuples):
            for where in [w for w in derived if w[:2] == (path, version) and gone.intersection(w[2])]:
                del derived[where]

    def column(self, path: str, version: int, column: str) -> pa.Array:
        """A column's values; the first use of a snapshot's column reads every needed one not read yet."""
        values = self._values.setdefault((path, version), {})
        if column not in values:
            wanted = sorted((self._needed.get((path, version), set()) | {column}) - values.keys())
            values.update(zip(wanted, read_columns(path, version, wanted), strict=True))
        return values[column]

    def hashes(self, path: str, version: int, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, valid) of a column's values (``hash_strings``); valid is False at a null."""
        where = (path, version, column)
        if where not in self._hashes:
            self._hashes[where] = hash_strings(self.column(path, version, column))
        return self._hashes[where]

    def tuple_hashes(self, path: str, version: int, columns: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, valid) of the rows' tuples: ``hash_tuples`` combined from the column hashes, or for one
        column its value hashes (the same equality, one hashing pass fewer); valid is False at a null."""
        column_hashes = [self.hashes(path, version, column) for column in columns]
        if len(columns) == 1:
            return column_hashes[0]
        return combine_hashes(column_hashes)

    def distinct_hashes(self, path: str, version: int, columns: list[str]) -> np.ndarray:
        """The sorted hashes of the distinct null-free tuples."""
        where = (path, version, tuple(columns))
        if where not in self._distinct_hashes:
            hashes, valid = self.tuple_hashes(path, version, columns)
            self._distinct_hashes[where] = sorted_unique(hashes[valid])
        return self._distinct_hashes[where]

    def distinct_tuples(self, path: str, version: int, columns: list[str]) -> list[pa.Array]:
        """The distinct null-free tuples, column by column, as canonical strings (``distinct_tuples``)."""
        where = (path, version, tuple(columns))
        if where not in self._distinct_tuples:
            self._distinct_tuples[where] = distinct_tuples(
                [self.column(path, version, column) for column in columns],
                self.tuple_hashes(path, version, columns),
            )
        return self._distinct_tuples[where]
