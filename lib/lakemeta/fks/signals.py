"""The signals of a foreign-key candidate F -> P beside Zhang's EMD_n, each stored in ``fk_candidates`` so
that an analyst sees why a candidate was chosen or not (``choice`` decides on them).

Zhang et al. rank one database's candidates by EMD_n alone. In a lake that is not enough: a column of
small integers (a line number, a quantity) lies inside every id range that counts from 1, and an id column
of one schema inside the ids of another. These signals tell such accidents from references.

From the values, in the Spark task that holds them (``discover``), for one-column and composite keys:

* ``inclusion``: |F ∩ P| / |F| exactly, over the distinct tuples' 64-bit hashes (after the exact check,
  value shape and type agree for at least θ of F's values, so they are not separate signals);
* ``coverage``: |F ∩ P| / |P|, how much of the key the dependent references; with ``fk_distinct`` and
  ``pk_distinct`` (the cardinality ratio's two sides);
* ``span_start``, ``span_end``: where F's values lie along the key's order, as the first and last cell of
  the key's quantile grid G_P (Def. 3) they fall in, over the cells (one-column keys; None for composite
  ones): a sample of the key spans [0, 1]; a column that counts from the key's first value spans a
  prefix [0, e];
* ``pk_is_integer``: the key's values are all integers (ids numbered 1..N, orders numbered sparsely),
  where counting columns (line numbers, quantities) fall by accident; ``pk_is_range``: they are every
  integer from the smallest to the largest (a surrogate key);
* ``fk_step``: the common divisor of the dependent's integers beyond the key's (``step``): round amounts
  inside an id range are measures, not references.

From the keys and the tables' schemas, after the scoring (``candidates.with_key_signals``):

* ``fk_is_key``: the dependent is a key of its own table (one-to-one: a copy, a shared numbering or code
  list, rarely a reference);
* ``pk_ordinal``: the position of the key's first column in its table (keys come first by convention:
  ``t_time_sk`` before ``t_time``, two columns of TPC-DS's time_dim holding the same numbers).

From the places, in the choice (``choice.choose_per_dependent``):

* ``same_folder``: both tables sit in one schema (a folder of the lake unless ``fks.schemas`` maps it,
  ``FkConfig.schema_of``), which is how lakes keep a schema together.

The names' features are ``names``'; the choice weighs all of them with the learned score (``model``).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import positions, shared_codes
from lakemeta.sketches.discover import type_family

_INTEGER = r"^-?[0-9]+$"
SAMPLE_COVERAGE = 0.05
"""The share of a key that another table's key must cover to be a numbering, copy or sample of it."""
_FIRST_TENTH = 0.1
_DENSE = 0.95  # every key value in a span but 5%, and a span ending before the last 5%


def _integers(values: pa.Array) -> np.ndarray | None:
    """Distinct canonical values as 64-bit integers, or None when one is not an integer or exceeds 64 bits."""
    if not len(values) or not pc.all(pc.match_substring_regex(values, _INTEGER)).as_py():
        return None
    try:
        return pc.cast(values, pa.int64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None


def integer_key(values: pa.Array) -> tuple[bool, bool]:
    """Whether distinct canonical values are all integers, and whether they are every integer between their
    smallest and largest."""
    numbers = _integers(values)
    if numbers is None:  # not integers, or beyond 64 bits: integers, not a surrogate key's
        return len(values) > 0 and pc.all(pc.match_substring_regex(values, _INTEGER)).as_py(), False
    return True, int(numbers.max()) - int(numbers.min()) + 1 == len(numbers)


def common_divisor(values: pa.Array) -> int | None:
    """The greatest common divisor of distinct canonical values that are all integers (None otherwise)."""
    numbers = _integers(values)
    return None if numbers is None else int(np.gcd.reduce(np.abs(numbers)))


def step(divisor: int | None, key_divisor: int | None) -> int | None:
    """``fk_step``: the common divisor of the dependent's integers (``divisor``, ``common_divisor``'s)
    beyond the key's own (a key numbered in tens has references in tens), None when either is not all
    integers. Amounts, estimates and sizes are round numbers (TPC-DS's cd_purchase_estimate: multiples of
    500 inside customer ids 1..10,000); k random ids of a key share a divisor above 1 with probability
    about 2^-k."""
    if divisor is None or not key_divisor:
        return None
    return divisor // math.gcd(divisor, key_divisor)


def span(cells: np.ndarray, n_cells: int) -> tuple[float, float]:
    """(first cell, last cell + 1) / cells of a candidate's values on a one-column key's grid."""
    return float(cells.min()) / n_cells, float(cells.max() + 1) / n_cells


def filled(candidates: pa.Table, name: str, fill: float | bool = 0) -> np.ndarray:
    """A column of the candidates as a numpy array, its nulls ``fill``."""
    return pc.fill_null(candidates[name], fill).to_numpy()


def counts_from_first_values(candidates: pa.Table, prefix_share: float) -> np.ndarray:
    """Whether each candidate counts from its integer key's first values rather than referring to the key:
    its values start in the key's first tenth and end before ``prefix_share`` of it (a line number, a
    quantity or a year inside an id range numbered from 1), or they hold every key value up to their
    largest and stop short of the key's end (TPC-H's ps_availqty, 1..9,999 inside c_custkey's 1..15,000:
    a counter; a sample of the key has gaps or reaches its end). A window further in (a few years of a
    two-century calendar) is left to the other signals (``choice``); a candidate without a span (a
    composite key's) counts nothing."""
    spanned = candidates["span_start"].is_valid().to_numpy(zero_copy_only=False) & candidates[
        "span_end"
    ].is_valid().to_numpy(zero_copy_only=False)
    start, end = filled(candidates, "span_start", 1.0), filled(candidates, "span_end", 1.0)
    dense = (filled(candidates, "coverage", 0.0) >= _DENSE * (end - start)) & (end < _DENSE)
    return (
        spanned
        & filled(candidates, "pk_is_integer", False)
        & (start <= _FIRST_TENTH)
        & ((end <= prefix_share) | dense)
    )


class ColumnTypes:
    """What the catalog's ``columns`` says of each column that the FK search reads: its type family
    (``sketches.discover.type_family``) and its place in its table, and of each table its shape (the
    families in order), read once for the index of candidates, the key signals and the overlaps."""

    def __init__(self, columns: pa.Table) -> None:
        self.family: dict[tuple[str, str], str | None] = {}
        self.ordinal: dict[tuple[str, str], int] = {}
        by_table: dict[str, list[tuple[int, str, str | None]]] = {}
        for r in columns.select(["table_name", "column_name", "ordinal", "data_type"]).to_pylist():
            where = (r["table_name"], r["column_name"])
            self.family[where] = type_family(r["data_type"] or "")
            self.ordinal[where] = r["ordinal"]
            by_table.setdefault(r["table_name"], []).append(
                (r["ordinal"], r["column_name"], self.family[where])
            )
        self.columns = {table: [c for _, c, _ in sorted(listed)] for table, listed in by_table.items()}
        self.shape = {table: tuple(f for _, _, f in sorted(listed)) for table, listed in by_table.items()}


def sides(candidates: pa.Table) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """Each candidate's dependent (its table and columns) and key (likewise), as one string each."""
    return tuple(
        pc.binary_join_element_wise(candidates[table], pc.binary_join(candidates[columns], "\x1f"), "\x1e")
        for table, columns in (("fk_table", "fk_columns"), ("pk_table", "pk_columns"))
    )


def reverses(candidates: pa.Table) -> np.ndarray:
    """For each candidate, the row of its reverse among the candidates (the key's columns as dependent of
    the dependent's), or -1."""
    (dependent, key), found = shared_codes(*sides(candidates))
    size = max(len(found), 1)
    return positions(key * size + dependent, dependent * size + key)


def both_ways(candidates: pa.Table) -> np.ndarray:
    """Whether each candidate's reverse is a candidate too: keys included in one another (``overlaps``
    takes copies from them, ``model`` weighs them)."""
    return reverses(candidates) >= 0
