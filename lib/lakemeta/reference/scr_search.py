"""The SCR baseline MATE is compared with (§7.1.1): Algorithm 1 without super keys.

SCR fetches the same posting lists and applies the same table rules as MATE, but "validates [candidate
rows] through exact value comparisons" instead of the super-key row filter: each candidate row is checked
against the query tuple by its cells. The exact check lives in the kernel of
:func:`lakemeta.joinsearch.search.algorithm_1`, so that SCR and MATE differ in the row filter alone, the
part §7.2's Figure 4 compares; its precision (``items_joinable / items_passed``) is 1.0 by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lakemeta.joinsearch.index import PostingIndex
from lakemeta.joinsearch.search import SearchResult, algorithm_1


def scr_search(
    index: PostingIndex, key_columns: Sequence[pa.Array | pa.ChunkedArray], k: int
) -> SearchResult:
    """SCR baseline (§7.1.1): Alg. 1 with the same table rules, candidate rows checked by exact values."""
    return algorithm_1(index, key_columns, k, None)
