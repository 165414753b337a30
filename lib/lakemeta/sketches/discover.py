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
  prune a pair that reaches it;
* no shared register: a pair where Y dominates none of X's filled registers has Φ̂ = 0 under the exact
  marginal (``dominance``); the pairs that remain are found through an index of the registers, without
  visiting the others.

Every other pair is estimated (Alg. 1-2 with every bucket's exact marginal at m = p, ``bml``; error bound
by Theorem 4 and Eq. 11, e_p from the binomial variance). Where the estimate plus its bound reaches the
floor and one of the two columns is small (at most ``sketches.exact_max_distinct`` values), Φ is counted
exactly from the value sets of the state instead (``values.inclusion``): that is where the sketch is
weakest, a few values inside a large column (BML's Theorem 1), and where counting is cheap; the other
pairs that may reach the floor, of two large columns, are estimated again from the joint distribution of
their register pairs (``joint``), which is three times more accurate there. The pairs
that reach the floor, and those whose bound is too wide to say (``undetermined``, no estimate), are
written to ``inclusion_estimates`` with their ``status`` (``refresh_inclusion_estimates``), replacing its
content in one commit (a deterministic function of the state, so a retried run writes the same rows).
``run_step`` runs it as the discovery step ``inclusion_estimates`` (:mod:`lakemeta.registry`); it reads
the state only, not the lake.
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
from lakemeta.sketches.bml import estimate_from_dominated
from lakemeta.sketches.dominance import RegisterIndex
from lakemeta.sketches.hll import relative_standard_error
from lakemeta.sketches.joint import joint_inclusion
from lakemeta.sketches.state import ColumnRegisters, column_registers
from lakemeta.values.inclusion import PAIR, countable, shared_values

log = logging.getLogger(__name__)

TARGET = "inclusion_estimates"
EXACT, ESTIMATED, UNDETERMINED = "exact", "estimated", "undetermined"  # the rows' status
_CARDINALITY_SIGMAS = 4.0
# Pairs estimated at once: bounds the memory of the pair arrays on lakes with very many columns.
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
    estimated: int = 0
    exact: int = 0
    undetermined: int = 0
    written: int = 0


def register_index(
    registers: ColumnRegisters,
    cardinality: np.ndarray,
    families: list[str | None],
    floor: float,
    p: int,
    counts: PairCounts,
) -> RegisterIndex:
    """The index of the registers that finds the pairs surviving the rules of the module docstring, with
    their dominated-bucket counts z (``dominance``); counts the cross-table pairs."""
    relative_error = _CARDINALITY_SIGMAS * relative_standard_error(p)
    _, table_of, per_table = np.unique(
        np.array(registers.table_names, dtype=object), return_inverse=True, return_counts=True
    )
    family_names = sorted({f for f in families if f is not None})
    # a column of no family (not sketched) gets a family of its own, compatible with none
    family_of = np.array([family_names.index(f) if f is not None else len(family_names) for f in families])
    compatible_matrix = np.zeros((len(family_names) + 1,) * 2, dtype=bool)
    compatible_matrix[:-1, :-1] = [[compatible(a, b) for b in family_names] for a in family_names]
    counts.considered += int(len(table_of) ** 2 - (per_table.astype(np.int64) ** 2).sum())
    return RegisterIndex(
        registers.registers,
        table_of,
        family_of,
        compatible_matrix,
        cardinality * (1.0 + relative_error),
        cardinality * max(0.0, 1.0 - relative_error),
        floor,
    )


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


def _value_counts(catalog: Catalog, registers: ColumnRegisters) -> np.ndarray:
    """Each register row's exact number of distinct values (``columns.n_distinct``, from the value sets),
    0 where unknown."""
    columns = catalog.read_small("columns")
    if "n_distinct" not in columns.column_names:
        return np.zeros(len(registers.table_names), np.int64)
    known = {
        (t, c): n
        for t, c, n in zip(
            columns["table_name"].to_pylist(),
            columns["column_name"].to_pylist(),
            columns["n_distinct"].to_pylist(),
            strict=True,
        )
        if n is not None
    }
    names = zip(registers.table_names, registers.column_names, strict=True)
    return np.array([known.get(key, 0) for key in names], np.int64)


def _rows(pairs: pa.Table, estimate: np.ndarray, bound: np.ndarray, status: np.ndarray | str) -> pa.Table:
    """Rows of ``inclusion_estimates`` for ``pairs``; an undetermined row has no estimate."""
    status = np.broadcast_to(np.asarray(status, dtype=object), (len(pairs),))
    return (
        pairs.select(PAIR)
        .append_column("estimate", pa.array(estimate, pa.float64(), mask=status == UNDETERMINED))
        .append_column("error_bound", pa.array(bound, pa.float64()))
        .append_column("status", pa.array(status, pa.string()))
    )


def refresh_inclusion_estimates(catalog: Catalog, config: SketchConfig) -> PairCounts:
    """Φ for every candidate pair, and ``inclusion_estimates`` replaced with the pairs that reach the floor
    or may reach it:

    * ``exact``: one of the two columns has at most ``exact_max_distinct`` values and the estimate plus
      its bound reaches the floor: Φ counted from the value sets (``values.inclusion``), kept when it
      reaches the floor, with bound 0;
    * ``estimated``: two large columns, whose joint estimate (``joint``) reaches the floor with a bound of
      at most ``max_error_bound``;
    * ``undetermined``: the bound is wider than ``max_error_bound`` and the estimate plus the bound
      reaches the floor: no estimate is reported, as the sketch cannot say (an FK search still treats the
      pair as a candidate, ``fks.discover``)."""
    registers = column_registers(catalog, config.precision)
    families = _column_families(catalog, registers)
    counts = PairCounts()
    cardinalities = registers.cardinalities()
    index = register_index(
        registers, cardinalities, families, config.inclusion_floor, config.precision, counts
    )
    kept_x, kept_y, kept_estimate, kept_bound = [], [], [], []
    for pairs in index.blocks(_PAIRS_PER_BLOCK):
        estimates = estimate_from_dominated(
            pairs.z,
            pairs.x,
            pairs.y,
            cardinalities,
            config.precision,
            confidence=config.confidence,
            eps=config.tolerance,
        )
        counts.estimated += len(pairs.x)
        kept = estimates.estimate + estimates.error_bound >= config.inclusion_floor
        kept_x.append(pairs.x[kept])
        kept_y.append(pairs.y[kept])
        kept_estimate.append(estimates.estimate[kept])
        kept_bound.append(estimates.error_bound[kept])
    x_idx, y_idx = (np.concatenate([np.zeros(0, np.int64), *kept]) for kept in (kept_x, kept_y))
    estimate, bound = (np.concatenate([np.zeros(0), *kept]) for kept in (kept_estimate, kept_bound))
    tables = np.array(registers.table_names, dtype=object)
    columns = np.array(registers.column_names, dtype=object)
    value_counts = _value_counts(catalog, registers)
    dep_distinct, ref_distinct = value_counts[x_idx], value_counts[y_idx]
    exact = countable(dep_distinct, ref_distinct, config.exact_max_distinct)
    pairs = pa.table(
        {
            "dep_table": pa.array(tables[x_idx], pa.string()),
            "dep_column": pa.array(columns[x_idx], pa.string()),
            "ref_table": pa.array(tables[y_idx], pa.string()),
            "ref_column": pa.array(columns[y_idx], pa.string()),
            "dep_distinct": pa.array(dep_distinct),
            "ref_distinct": pa.array(ref_distinct),
        }
    )
    # what is not counted has two large sides: there the joint distribution of the register pairs says
    # more than the dominated ones (``joint``)
    estimated_jointly = ~exact
    estimate[estimated_jointly], bound[estimated_jointly] = joint_inclusion(
        registers.registers,
        x_idx[estimated_jointly],
        y_idx[estimated_jointly],
        cardinalities,
        config.confidence,
    )
    counted = pairs.filter(pa.array(exact))
    counts.exact = len(counted)
    phi = shared_values(catalog, counted) / np.maximum(counted["dep_distinct"].to_numpy(), 1)
    reaches = phi >= config.inclusion_floor
    estimated = ~exact & (estimate >= config.inclusion_floor) & (bound <= config.max_error_bound)
    undetermined = ~exact & (bound > config.max_error_bound)
    sketched = estimated | undetermined
    result = pa.concat_tables(
        [
            _rows(counted.filter(pa.array(reaches)), phi[reaches], np.zeros(int(reaches.sum())), EXACT),
            _rows(
                pairs.filter(pa.array(sketched)),
                estimate[sketched],
                bound[sketched],
                np.where(estimated, ESTIMATED, UNDETERMINED)[sketched],
            ),
        ]
    )
    result = result.sort_by([(name, "ascending") for name in PAIR])
    catalog.replace_small(TARGET, result)
    counts.written = len(result)
    counts.undetermined = int(undetermined.sum())
    log.info(
        "inclusion estimates: %d columns, %d cross-table pairs; %d estimated (a dominated register, types "
        "and cardinalities that allow the floor %.2f), %d counted exactly from the value sets, %d written "
        "(reaching the floor, or undetermined: %d)",
        len(registers.table_names),
        counts.considered,
        counts.estimated,
        config.inclusion_floor,
        counts.exact,
        counts.written,
        counts.undetermined,
    )
    return counts


def run_step(catalog: Catalog, lake: Path, config: Config) -> PairCounts:
    """The discovery step ``inclusion_estimates``: it reads the state only, not the lake."""
    return refresh_inclusion_estimates(catalog, config.sketches)
