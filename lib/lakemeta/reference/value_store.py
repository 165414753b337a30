"""Distinct value sets of many columns in memory, laid out for the exact IND-Validator (Many Alg. 7,
``lakemeta.reference.ind_validator``) of the in-memory Many (``lakemeta.reference.many``). The discovery
step over the lake reads each column's distinct value hashes from the state instead
(``lakemeta.inds.discover``).

Alg. 7 compares the projections π_A(r) as sets; Many keeps them in a cache filled while the signatures are
built (§4.2). Here each column's distinct values are sorted by a 64-bit key and concatenated (CSR layout):
column c owns ``keys[col_offsets[c]:col_offsets[c + 1]]``. Two layouts:

- ``from_strings``: the key is the value's xxHash64 and the value bytes are kept beside it, so the
  validator can confirm every key match byte by byte (collision-safe, exact).
- ``from_keys``: the uint64 keys *are* the values (integer-coded columns, or hashes the caller accepts as
  values); the check is exact on the keys.

The keys also feed the Bloom signatures (``bloom.signatures_from_hashes``), so each value is hashed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.hashing import hash_strings, string_buffers
from lakemeta.inds.filters import present_strings


@dataclass(frozen=True)
class ValueStore:
    """Distinct values per column, sorted by uint64 key; value bytes kept when built from strings."""

    keys: np.ndarray
    col_offsets: np.ndarray
    value_offsets: np.ndarray | None = None
    value_data: np.ndarray | None = None

    @property
    def n_columns(self) -> int:
        return self.col_offsets.shape[0] - 1

    @property
    def n_distinct(self) -> np.ndarray:
        """Distinct non-null values per column (int64 [n_columns])."""
        return np.diff(self.col_offsets)

    @property
    def exact_bytes(self) -> bool:
        return self.value_offsets is not None

    @classmethod
    def from_strings(cls, columns: Sequence[pa.Array | pa.ChunkedArray]) -> ValueStore:
        """Distinct non-null canonical strings of each column (Arrow nulls are missing, not values)."""
        sorted_columns: list[pa.Array] = []
        key_parts: list[np.ndarray] = [np.zeros(0, np.uint64)]
        for column in columns:
            distinct = pc.unique(present_strings(column))
            hashes, _ = hash_strings(distinct)
            order = np.argsort(hashes, kind="stable")
            key_parts.append(hashes[order])
            sorted_columns.append(distinct.take(pa.array(order)))
        counts = [len(c) for c in sorted_columns]
        all_values = pa.concat_arrays(sorted_columns) if sorted_columns else pa.array([], pa.large_string())
        value_offsets, value_data, _ = string_buffers(all_values)
        return cls(
            keys=np.concatenate(key_parts),
            col_offsets=np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64),
            value_offsets=np.ascontiguousarray(value_offsets - value_offsets[0]),
            value_data=np.ascontiguousarray(value_data[value_offsets[0] : value_offsets[-1]]),
        )

    @classmethod
    def from_keys(cls, columns: Sequence[np.ndarray]) -> ValueStore:
        """Distinct uint64 values of each column, taken as the values themselves."""
        distinct = [np.unique(np.asarray(c, dtype=np.uint64)) for c in columns]
        counts = [d.shape[0] for d in distinct]
        return cls(
            keys=np.concatenate([np.zeros(0, np.uint64), *distinct]),
            col_offsets=np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64),
        )
