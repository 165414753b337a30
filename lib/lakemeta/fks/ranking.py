"""The ranked list of FK candidates and its answer set (Zhang et al. §5.2), and the column-name check
of §5.4.

Candidates are ranked by increasing EMD_n. The answer set ends at the largest jump of the EMD along the
ranking: on TPC-H the pairs below the answer set "have EMD values at least one order of magnitude larger"
(§5.2), so the jump is measured on a log scale, of EMD_n + 1/l with l the single-column quantiles: EMD
differences below one grid cell are within Lemma 1's grid error and are not jumps. A jump counts only when
that quantity at least doubles; without one, every candidate is in the answer set.

§5.4 compares column names by string identity after deleting the table prefixes (TPC-E's convention,
TPC-H's too: ``l_orderkey`` and ``o_orderkey`` are both ``orderkey``).
"""

from __future__ import annotations

import re

import numpy as np

_MIN_JUMP = np.log(2.0)
_TABLE_PREFIX = re.compile(r"^[A-Za-z]+_(?=.)")


def answer_set(emd: np.ndarray, quantiles: int) -> np.ndarray:
    """For EMD_n values sorted ascending: whether each is in the answer set (ranks up to the largest jump)."""
    emd = np.asarray(emd, np.float64)
    if len(emd) < 2:
        return np.ones(len(emd), dtype=bool)
    if np.any(np.diff(emd) < 0):
        raise ValueError("answer_set needs the EMD values in ascending order")
    gaps = np.diff(np.log(emd + 1.0 / quantiles))
    last = int(np.argmax(gaps))
    accepted = np.zeros(len(emd), dtype=bool)
    accepted[: last + 1 if gaps[last] >= _MIN_JUMP else len(emd)] = True
    return accepted


def bare_name(column: str) -> str:
    """A column name without its table prefix, folded to lower case (§5.4)."""
    return _TABLE_PREFIX.sub("", column).lower()


def names_match(fk_columns: list[str], pk_columns: list[str]) -> bool:
    """Whether each FK column's name equals its key column's once the table prefixes are deleted."""
    return len(fk_columns) == len(pk_columns) and all(
        bare_name(f) == bare_name(p) for f, p in zip(fk_columns, pk_columns, strict=True)
    )
