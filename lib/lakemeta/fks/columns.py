"""The columns one Spark task of the FK search reads, and what it derives from them, each once: the key
checks (``keys``) and the FK candidates (``discover``) read through it.

Each table snapshot's needed columns are read together (``lakemeta.lake.snapshots.read_columns``, delta-rs),
each column is hashed once (``lakemeta.hashing.hash_strings``), and per column tuple its distinct hashes and
distinct tuples are kept for the task's other keys and candidates until the task releases the column after
its last use, so a task holds the columns of the keys in hand, not of all its keys.

A snapshot of more than ``max_rows`` rows (``scan.max_task_rows``) whose files allow it is read in groups of
its data files (``snapshots.file_groups``): of its columns only the 64-bit value hashes of every row are
kept, and the values of the rows that need them (the rows of a key check's shared hashes, one row of each
distinct tuple for EMD) are read again from the groups that hold them. Such a snapshot's values are never
in memory for more than a group's rows at a time, beside what is kept of them: hashes, and distinct tuples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa

from lakemeta.arrays import sorted_unique
from lakemeta.fks.domain_order import DomainKeys, domain_keys
from lakemeta.fks.randomness import distinct_rows
from lakemeta.fks.signals import common_divisor
from lakemeta.hashing import canonical, combine_hashes, hash_strings
from lakemeta.lake.snapshots import file_groups, read_columns

Snapshot = tuple[str, int]  # a table's path and version
RowValues = Callable[[np.ndarray], list[pa.Array]]
"""The values of some columns at row positions of a snapshot, one array per column, the rows in the same
order in every array (not necessarily the order asked)."""


def values_at(columns: list[pa.Array]) -> RowValues:
    """``RowValues`` of columns in memory."""
    return lambda rows: [column.take(pa.array(rows, pa.int64())) for column in columns]


class ColumnCache:
    """The columns of table snapshots, read on first use; ``need`` lists them beforehand so that a
    snapshot's columns are read together, and says how many rows the snapshot has. ``scope``: the
    snapshots are opened once per process for it (``snapshots.read_columns``)."""

    def __init__(self, max_rows: int, scope: str | None = None) -> None:
        self._max_rows = max_rows
        self._scope = scope
        self._needed: dict[Snapshot, set[str]] = {}
        self._rows: dict[Snapshot, int] = {}
        self._groups: dict[Snapshot, list[tuple[list[str], int]] | None] = {}
        self._values: dict[Snapshot, dict[str, pa.Array]] = {}
        self._hashes: dict[tuple[str, int, str], tuple[np.ndarray, np.ndarray]] = {}
        self._distinct_hashes: dict[tuple[str, int, tuple[str, ...]], np.ndarray] = {}
        self._distinct_tuples: dict[tuple[str, int, tuple[str, ...]], list[pa.Array]] = {}
        self._domain_keys: dict[tuple[str, int, tuple[str, ...]], list[DomainKeys]] = {}
        self._divisors: dict[tuple[str, int, tuple[str, ...]], int | None] = {}
        # the column tuples something was derived from, per snapshot: a release looks at its snapshot's
        # only (a task holds thousands of snapshots' entries, and releases as many times)
        self._derived: dict[Snapshot, set[tuple[str, ...]]] = {}

    def need(self, path: str, version: int, columns: Iterable[str], rows: int) -> None:
        """Columns of a snapshot of ``rows`` rows that will be read."""
        self._needed.setdefault((path, version), set()).update(columns)
        self._rows[(path, version)] = rows

    def release(self, path: str, version: int, columns: Iterable[str]) -> None:
        """Forget columns of a snapshot that are no longer needed, and all that was derived from them."""
        gone = set(columns)
        self._needed.get((path, version), set()).difference_update(gone)
        values = self._values.get((path, version), {})
        for column in gone:
            values.pop(column, None)
            self._hashes.pop((path, version, column), None)
        derived_from = self._derived.get((path, version), set())
        for columns_ in [c for c in derived_from if gone.intersection(c)]:
            derived_from.discard(columns_)
            for derived in (self._distinct_hashes, self._distinct_tuples, self._domain_keys, self._divisors):
                derived.pop((path, version, columns_), None)

    def _deriving(
        self, path: str, version: int, columns: tuple[str, ...]
    ) -> tuple[str, int, tuple[str, ...]]:
        """The place of what is derived from a snapshot's columns, noted for ``release``."""
        self._derived.setdefault((path, version), set()).add(columns)
        return (path, version, columns)

    def _file_groups(self, path: str, version: int) -> list[tuple[list[str], int]] | None:
        """The snapshot's groups of data files when it is read by groups, else None (read whole)."""
        snapshot = (path, version)
        if snapshot not in self._groups:
            large = self._rows.get(snapshot, 0) > self._max_rows
            self._groups[snapshot] = file_groups(path, version, self._max_rows) if large else None
        return self._groups[snapshot]

    def _wanted(self, path: str, version: int, column: str, read: Iterable[str]) -> list[str]:
        """The snapshot's needed columns not read yet, with ``column``."""
        return sorted((self._needed.get((path, version), set()) | {column}) - set(read))

    def _column(self, path: str, version: int, column: str) -> pa.Array:
        """A column of a snapshot read whole; its first use reads every needed one not read yet."""
        values = self._values.setdefault((path, version), {})
        if column not in values:
            wanted = self._wanted(path, version, column, values)
            values.update(zip(wanted, read_columns(path, version, wanted, scope=self._scope), strict=True))
        return values[column]

    def _hash_by_groups(
        self, path: str, version: int, column: str, groups: list[tuple[list[str], int]]
    ) -> None:
        """Hash every needed column of a snapshot read by groups not hashed yet, one group at a time."""
        hashed = [c for p, v, c in self._hashes if (p, v) == (path, version)]
        wanted = self._wanted(path, version, column, hashed)
        parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {c: [] for c in wanted}
        for files, _ in groups:
            for name, values in zip(
                wanted, read_columns(path, version, wanted, files, self._scope), strict=True
            ):
                parts[name].append(hash_strings(values))
        for name, hashes in parts.items():
            self._hashes[(path, version, name)] = (
                np.concatenate([h for h, _ in hashes]),
                np.concatenate([v for _, v in hashes]),
            )

    def hashes(self, path: str, version: int, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, valid) of a column's values in every row (``hash_strings``); valid is False at a null."""
        where = (path, version, column)
        if where not in self._hashes:
            groups = self._file_groups(path, version)
            if groups is None:
                self._hashes[where] = hash_strings(self._column(path, version, column))
            else:
                self._hash_by_groups(path, version, column, groups)
        return self._hashes[where]

    def values(self, path: str, version: int, columns: list[str] | tuple[str, ...]) -> RowValues:
        """The columns' values at row positions of the snapshot: taken from the columns in memory, or read
        from the groups of files that hold the rows."""
        groups = self._file_groups(path, version)
        if groups is None:
            return values_at([self._column(path, version, column) for column in columns])

        def at(rows: np.ndarray) -> list[pa.Array]:
            taken: list[list[pa.Array]] = []
            start = 0
            for files, count in groups:
                local = rows[(rows >= start) & (rows < start + count)] - start
                if len(local):
                    read = read_columns(path, version, list(columns), files, self._scope)
                    taken.append([column.take(pa.array(local, pa.int64())) for column in read])
                start += count
            if not taken:  # no rows asked: the columns' types, from the first group
                taken.append(
                    [
                        c.slice(0, 0)
                        for c in read_columns(path, version, list(columns), groups[0][0], self._scope)
                    ]
                )
            return [pa.concat_arrays([part[i] for part in taken]) for i in range(len(columns))]

        return at

    def tuple_hashes(self, path: str, version: int, columns: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, valid) of the rows' tuples: ``hash_tuples`` combined from the column hashes, or for one
        column its value hashes (the same equality, one hashing pass fewer); valid is False at a null."""
        column_hashes = [self.hashes(path, version, column) for column in columns]
        if len(columns) == 1:
            return column_hashes[0]
        return combine_hashes(column_hashes)

    def distinct_hashes(self, path: str, version: int, columns: list[str]) -> np.ndarray:
        """The sorted hashes of the distinct null-free tuples."""
        where = self._deriving(path, version, tuple(columns))
        if where not in self._distinct_hashes:
            hashes, valid = self.tuple_hashes(path, version, columns)
            self._distinct_hashes[where] = sorted_unique(hashes[valid])
        return self._distinct_hashes[where]

    def distinct_tuples(self, path: str, version: int, columns: list[str]) -> list[pa.Array]:
        """The distinct null-free tuples, column by column, as canonical strings (as ``distinct_tuples``):
        the values of one row of each (``distinct_rows``)."""
        where = self._deriving(path, version, tuple(columns))
        if where not in self._distinct_tuples:
            rows = distinct_rows(*self.tuple_hashes(path, version, columns))
            self._distinct_tuples[where] = [canonical(v) for v in self.values(path, version, columns)(rows)]
        return self._distinct_tuples[where]

    def domain_keys(self, path: str, version: int, columns: list[str]) -> list[DomainKeys]:
        """The distinct tuples' places in each column's domain order (``domain_order.domain_keys``), kept
        for every key the tuples are a candidate of."""
        where = self._deriving(path, version, tuple(columns))
        if where not in self._domain_keys:
            self._domain_keys[where] = [domain_keys(v) for v in self.distinct_tuples(path, version, columns)]
        return self._domain_keys[where]

    def common_divisor(self, path: str, version: int, column: str) -> int | None:
        """``signals.common_divisor`` of a column's distinct values."""
        where = self._deriving(path, version, (column,))
        if where not in self._divisors:
            self._divisors[where] = common_divisor(self.distinct_tuples(path, version, [column])[0])
        return self._divisors[where]
