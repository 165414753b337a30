"""The four IND filters of Many (§3.2, §4.6, Alg. 10-11) as pure functions over column statistics.

1. null columns: empty, or only null representations (Table 2) — removed as dependent and referenced side.
2. integer columns: every value is an integer literal — removed as both sides.
3. non-unique referenced columns: a referenced attribute must be a key — removed as referenced side only.
4. low coverage: keep a valid IND only if |dependentSet| / |referencedSet| ≥ τ (Alg. 11, default τ = 0.2).

Filters 1-3 give the bit-arrays filteredCols and filteredRefs of Alg. 10 (lines 2-5); filter 4 runs after
validation. Defaults: the null filter on, the others off (§5.1: "Unless stated otherwise, Many's filters are
not activated"; the null filter stays on because null = null semantics otherwise floods the result, §3.2).
``FilterConfig.web()`` is the paper's Web-table setting: all four on, τ = 0.2.

Statistics are computed over the *valued* rows of a column: Arrow nulls (missing) and the configured null
representations are left out, since both stand for an absent value (§3.1). "Integer" means the canonical
string matches ``[+-]?[0-9]+`` (``lakemeta.hashing.INTEGER_LITERAL``); a column needs at least one valued
row to count as an integer column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.hashing import INTEGER_LITERAL

# Table 2 ("Values considered as null values"), the 14 most frequent null representations of WikiTables.
# Our copy of the table is partly illegible: the empty string, the three dash characters (6th, 11th, 19th
# per §3.1: en dash, hyphen-minus, em dash), "N/A", "?", "Unknown", "n/a", "•", "??" and "(n/a)" are
# legible; the entries ranked 176th, 578th and 604th are not and are left out. The list is configurable.
TABLE_2_NULL_VALUES: tuple[str, ...] = (
    "",
    "\u2013",
    "-",
    "\u2014",
    "N/A",
    "?",
    "Unknown",
    "n/a",
    "\u2022",
    "??",
    "(n/a)",
)


def present_strings(values: pa.Array | pa.ChunkedArray) -> pa.LargeStringArray:
    """The non-null values as one large_string array; non-string arrays are cast to strings.

    Missing values (Arrow nulls) are dropped: they are absent values, not values (see
    ``lakemeta.reference.many``).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = pc.drop_null(values)
    if not pa.types.is_large_string(values.type):
        values = values.cast(pa.large_string())
    return values


@dataclass(frozen=True)
class ColumnStats:
    """Per-column statistics the filters read (struct of arrays, one entry per global column index)."""

    n_values: np.ndarray  # int64: rows holding a value that is neither missing nor a null representation
    n_distinct: np.ndarray  # int64: distinct such values
    all_integer: np.ndarray  # bool: at least one such value, and all of them integer literals

    @classmethod
    def from_columns(
        cls, columns: Sequence[pa.Array | pa.ChunkedArray], null_values: Sequence[str] = TABLE_2_NULL_VALUES
    ) -> ColumnStats:
        """Statistics of whole columns (all rows, duplicates included) of canonical strings."""
        nulls = pa.array(list(null_values), pa.large_string())
        n_values, n_distinct, all_integer = [], [], []
        for column in columns:
            values = present_strings(column)
            values = values.filter(pc.invert(pc.is_in(values, value_set=nulls)))
            n_values.append(len(values))
            n_distinct.append(len(pc.unique(values)))
            all_integer.append(
                len(values) > 0 and pc.all(pc.match_substring_regex(values, INTEGER_LITERAL)).as_py()
            )
        return cls(np.array(n_values, np.int64), np.array(n_distinct, np.int64), np.array(all_integer, bool))


@dataclass(frozen=True)
class FilterConfig:
    """Which of the four filters run, τ, and the null representations (§3.2, Table 2, Alg. 10)."""

    null_columns: bool = True
    integer_columns: bool = False
    non_unique_refs: bool = False
    low_coverage: bool = False
    tau: float = 0.2
    null_values: tuple[str, ...] = field(default=TABLE_2_NULL_VALUES)

    @classmethod
    def web(cls) -> FilterConfig:
        """All four filters with τ = 0.2, as Many runs on Web tables (§3.2, §5.3)."""
        return cls(null_columns=True, integer_columns=True, non_unique_refs=True, low_coverage=True, tau=0.2)

    @classmethod
    def none(cls) -> FilterConfig:
        """No filter: every valid unary IND (§5.6, the setting compared against Spider and Binder)."""
        return cls(null_columns=False, integer_columns=False, non_unique_refs=False, low_coverage=False)

    @property
    def needs_stats(self) -> bool:
        return self.null_columns or self.integer_columns or self.non_unique_refs


def null_columns(stats: ColumnStats) -> np.ndarray:
    """Filter 1: columns without any valued row (empty, all missing, or only null representations)."""
    return stats.n_values == 0


def integer_columns(stats: ColumnStats) -> np.ndarray:
    """Filter 2: columns whose values are all integer literals."""
    return stats.all_integer.copy()


def non_unique_columns(stats: ColumnStats) -> np.ndarray:
    """Filter 3: columns with a repeated value, which cannot be referenced (not a key)."""
    return stats.n_distinct < stats.n_values


def coverage(dep_distinct: np.ndarray, ref_distinct: np.ndarray) -> np.ndarray:
    """|dependentSet| / |referencedSet| of valid INDs (Alg. 11); 1.0 for an empty referenced set (then the
    dependent set is empty too and covers all of it)."""
    dep = np.asarray(dep_distinct, dtype=np.float64)
    ref = np.asarray(ref_distinct, dtype=np.float64)
    return np.divide(dep, ref, out=np.ones_like(dep), where=ref > 0)


def low_coverage(dep_distinct: np.ndarray, ref_distinct: np.ndarray, tau: float) -> np.ndarray:
    """Filter 4: valid INDs to drop because coverage < τ."""
    return coverage(dep_distinct, ref_distinct) < tau


def column_filters(
    stats: ColumnStats | None, config: FilterConfig, n_columns: int
) -> tuple[np.ndarray, np.ndarray]:
    """filteredCols (filters 1, 2) and filteredRefs (filter 3) of Alg. 10 lines 2-5, as bool arrays."""
    filtered_cols = np.zeros(n_columns, dtype=bool)
    filtered_refs = np.zeros(n_columns, dtype=bool)
    if config.needs_stats:
        if stats is None or stats.n_values.shape != (n_columns,):
            raise ValueError(f"the configured filters need ColumnStats for all {n_columns} columns")
        if config.null_columns:
            filtered_cols |= null_columns(stats)
        if config.integer_columns:
            filtered_cols |= integer_columns(stats)
        if config.non_unique_refs:
            filtered_refs |= non_unique_columns(stats)
    return filtered_cols, filtered_refs
