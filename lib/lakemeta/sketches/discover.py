"""Inclusion coefficients Φ(X, Y) = |X ∩ Y| / |X| of column pairs across tables, by BML (BML §3).

From the HLL state (``state.column_registers``) every ordered pair (X, Y) of columns in different
tables is considered, and a pair is estimated unless a cheap exact argument rules it out first:

* type families: the canonical forms of two columns can only coincide when their types can hold the same
  values: numbers with numbers (integers, decimals and floating point share one canonical form), dates
  with dates, timestamps with timestamps, booleans with booleans, binary with binary; strings can hold the
  text of any of them, so a string column pairs with every family;
* empty columns: a column without a non-null value has no inclusion coefficient;
* cardinality: Φ(X, Y) <= |Y| / |X|, so when |X| is far above |Y| the pair cannot reach the floor. The
  cardinalities are HLL estimates with relative standard error 1.04 / sqrt(2^p) (BML §2.2,
  ``hll.relative_standard_error``); a pair is pruned only when even |Y| inflated and |X| deflated by
  ``_CARDINALITY_SIGMAS`` standard errors keeps the ratio below the floor, so estimation error does not
  prune a pair that reaches it.

Every other pair is estimated (Alg. 1-2, m per pair by Eq. 12, error bound by Theorem 4 and Eq. 11), and
those whose estimate reaches the floor are written to ``inclusion_estimates``, replacing its content in
one commit (a deterministic function of the state, so a retried run writes the same rows).
``run_step`` runs it as the discovery step ``inclusion_estimates`` (:mod:`lakemeta.registry`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from lakemeta.catalog import Catalog
from lakemeta.config import Config, SketchConfig
from lakemeta.profile.state import ColumnProfile
from lakemeta.sketches.bml import estimate_inclusion
from lakemeta.sketches.hll import relative_standard_error
from lakemeta.sketches.state import ColumnRegisters, column_registers

log = logging.getLogger(__name__)

TARGET = "inclusion_estimates"
_CARDINALITY_SIGMAS = 4.0
# Pairs per estimation call: bounds the index arrays' memory on lakes with very many columns.
_PAIRS_PER_BLOCK = 1 << 22

_FAMILIES = (
    ("numeric", re.compile(r"^(tinyint|smallint|int|bigint|float|double|decimal.*)$")),
    ("string", re.compile(r"^(string|varchar.*|char.*)$")),
    ("date", re.compile(r"^date$")),
    ("timestamp", re.compile(r"^timestamp.*$")),
    ("boolean", re.compile(r"^boolean$")),
    ("binary", re.compile(r"^binary$")),
)


def type_family(data_type: str) -> str | None:
    """The family of a Spark type name (``simpleString``), None for types that are not sketched."""
    return next((family for family, pattern in _FAMILIES if pattern.match(data_type)), None)


def compatible(family_x: str, family_y: str) -> bool:
    """Whether columns of these families can hold the same canonical values."""
    return family_x == family_y or "string" in (family_x, family_y)


@dataclass
class PairCounts:
    """What happened to the ordered cross-table column pairs, for the job's log."""

    considered: int = 0
    pruned_types: int = 0
    pruned_empty: int = 0
    pruned_cardinality: int = 0
    estimated: int = 0
    written: int = 0


def candidate_pairs(
    registers: ColumnRegisters, families: list[str | None], floor: float, p: int, counts: PairCounts
) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs (x, y) of ``registers`` rows that survive the pruning; counts what each rule prunes."""
    n = len(registers.table_names)
    cardinality = registers.cardinalities()
    relative_error = _CARDINALITY_SIGMAS * relative_standard_error(p)
    upper = cardinality * (1.0 + relative_error)
    lower = cardinality * max(0.0, 1.0 - relative_error)
    _, table_of = np.unique(np.array(registers.table_names, dtype=object), return_inverse=True)
    family_names = sorted({f for f in families if f is not None})
    family_of = np.array([family_names.index(f) if f is not None else -1 for f in families], dtype=np.int64)
    compatible_matrix = np.array([[compatible(a, b) for b in family_names] for a in family_names], dtype=bool)
    xs, ys = [], []
    rows_per_block = max(1, _PAIRS_PER_BLOCK // max(n, 1))
    for start in range(0, n, rows_per_block):
        x = np.arange(start, min(n, start + rows_per_block))[:, None]
        y = np.arange(n)[None, :]
        cross_table = table_of[x] != table_of[y]
        counts.considered += int(cross_table.sum())
        typed = (
            cross_table
            & (family_of[x] >= 0)
            & (family_of[y] >= 0)
            & compatible_matrix[np.maximum(family_of[x], 0), np.maximum(family_of[y], 0)]
        )
        counts.pruned_types += int(cross_table.sum() - typed.sum())
        non_empty = typed & (cardinality[x] > 0) & (cardinality[y] > 0)
        counts.pruned_empty += int(typed.sum() - non_empty.sum())
        # Φ(X, Y) <= |Y| / |X| <= upper_Y / lower_X
        reachable = non_empty & (upper[y] >= floor * lower[x])
        counts.pruned_cardinality += int(non_empty.sum() - reachable.sum())
        bx, by = np.nonzero(reachable)
        xs.append(bx + start)
        ys.append(by)
    x_idx = np.concatenate(xs) if xs else np.zeros(0, np.int64)
    y_idx = np.concatenate(ys) if ys else np.zeros(0, np.int64)
    return x_idx.astype(np.int64), y_idx.astype(np.int64)


def _column_families(catalog: Catalog, registers: ColumnRegisters) -> list[str | None]:
    profile = catalog.read_small(ColumnProfile.state_table())
    profile = profile.select(["table_name", "column_name", "data_type"])
    types = {
        (t, c): d
        for t, c, d in zip(
            profile["table_name"].to_pylist(),
            profile["column_name"].to_pylist(),
            profile["data_type"].to_pylist(),
            strict=True,
        )
    }
    return [
        type_family(types.get((t, c), ""))
        for t, c in zip(registers.table_names, registers.column_names, strict=True)
    ]


def refresh_inclusion_estimates(catalog: Catalog, config: SketchConfig) -> PairCounts:
    """Estimate Φ for every candidate pair and replace ``inclusion_estimates`` with those >= the floor."""
    registers = column_registers(catalog, config.precision)
    families = _column_families(catalog, registers)
    counts = PairCounts()
    x_idx, y_idx = candidate_pairs(registers, families, config.inclusion_floor, config.precision, counts)
    estimates = estimate_inclusion(
        registers.registers,
        x_idx,
        y_idx,
        cardinalities=registers.cardinalities(),
        confidence=config.confidence,
        eps=config.tolerance,
    )
    counts.estimated = int(x_idx.shape[0])
    kept = estimates.estimate >= config.inclusion_floor
    tables = np.array(registers.table_names, dtype=object)
    columns = np.array(registers.column_names, dtype=object)
    result = pa.table(
        {
            "dep_table": pa.array(tables[x_idx[kept]], pa.string()),
            "dep_column": pa.array(columns[x_idx[kept]], pa.string()),
            "ref_table": pa.array(tables[y_idx[kept]], pa.string()),
            "ref_column": pa.array(columns[y_idx[kept]], pa.string()),
            "estimate": pa.array(estimates.estimate[kept]),
            "error_bound": pa.array(estimates.error_bound[kept]),
        }
    )
    result = result.sort_by(
        [(name, "ascending") for name in ("dep_table", "dep_column", "ref_table", "ref_column")]
    )
    catalog.replace_small(TARGET, result)
    counts.written = len(result)
    log.info(
        "inclusion estimates: %d columns, %d cross-table pairs; pruned %d by type family, %d empty, "
        "%d by cardinality (|Y|/|X| below the floor %.2f); %d estimated by BML, %d written (>= floor)",
        len(registers.table_names),
        counts.considered,
        counts.pruned_types,
        counts.pruned_empty,
        counts.pruned_cardinality,
        config.inclusion_floor,
        counts.estimated,
        counts.written,
    )
    return counts


def run_step(catalog: Catalog, lake: Path, config: Config) -> PairCounts:
    """The discovery step ``inclusion_estimates``: it reads the state only, not the lake."""
    return refresh_inclusion_estimates(catalog, config.sketches)
