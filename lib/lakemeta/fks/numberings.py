"""Which one-column keys number their table's rows, 1..N or 0..N-1, known before any FK candidate is
scored: from the value sets' hashes (``state/column_values``), no table read.

Such a key in another folder of the lake can never be chosen (``choice``, 3: a key in another schema must
be more than a numbering 1..N, since every schema numbers its rows from 1), yet in a lake of small
statistics tables nearly every integer column of every folder is included in it: most of the FK step's
candidates of a dense lake are of such keys (``bench/dense_lakes.py`` counts them).
``candidates.CandidateIndex`` leaves them out before scoring (``candidates.ForeignNumberings``).

A column of N distinct values numbers its rows when its values' hashes are those of the canonical forms of
1..N, or of 0..N-1 (``hashing.hash_strings`` of the integers: "3" whether the column holds 3, 3.0 or
"3"), up to 64-bit collisions. A range that starts elsewhere (years 1990..2010) is not recognised here and
keeps its candidates; the scoring's ``pk_is_range`` sees it, and the choice decides as before.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import run_starts
from lakemeta.hashing import hash_strings

VALUE_COLUMNS = ["table_name", "column_name", "hash", "integer"]
"""The rows of the value sets (``values.state.SCHEMA``) ``numbered_columns`` reads."""
NUMBERED = pa.schema([("table_name", pa.string()), ("column_name", pa.string())])


def _sorted_numbering_hashes(start: int, n: int) -> np.ndarray:
    hashes, _ = hash_strings(pa.array(np.arange(start, start + n, dtype=np.int64)))
    return np.sort(hashes)


def numbered_columns(values: pa.Table) -> pa.Table:
    """The columns (``NUMBERED``) among ``values``' rows (``VALUE_COLUMNS``: each column's distinct values,
    as the value sets keep them) whose values are 1..N or 0..N-1. Per column: its values all integers,
    then its sorted hashes compared with those of the two numberings of its size."""
    if not values.num_rows:
        return NUMBERED.empty_table()
    values = values.select(VALUE_COLUMNS).sort_by([("table_name", "ascending"), ("column_name", "ascending")])
    where = pc.binary_join_element_wise(values["table_name"], values["column_name"], "\x1f")
    changes = pc.not_equal(where.slice(1), where.slice(0, len(where) - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate([[True], changes]))
    ends = np.append(starts[1:], values.num_rows)
    tables, columns = values["table_name"].take(starts), values["column_name"].take(starts)
    hashes = values["hash"].to_numpy().view(np.uint64)
    integer = pc.fill_null(values["integer"], False).to_numpy(zero_copy_only=False)
    all_integer = np.logical_and.reduceat(integer, starts)
    numbered = np.zeros(len(starts), bool)
    for i in np.flatnonzero(all_integer):  # a loop over columns, the values compared by numpy
        own = np.sort(hashes[starts[i] : ends[i]])
        numbered[i] = run_starts(own).all() and any(  # a value listed twice is no value set
            np.array_equal(own, _sorted_numbering_hashes(first, len(own))) for first in (1, 0)
        )
    keep = pa.array(numbered)
    return pa.table({"table_name": tables.filter(keep), "column_name": columns.filter(keep)}, schema=NUMBERED)
