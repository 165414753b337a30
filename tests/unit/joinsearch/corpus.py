"""Test helpers: build a PostingIndex from tables given as rows, and a brute-force top-k search."""

from itertools import permutations

import numpy as np
import pyarrow as pa

from lakemeta.joinsearch.index import PostingIndex, table_postings
from lakemeta.joinsearch.normalise import normalise_values
from lakemeta.joinsearch.superkey import SuperKeyHasher, super_keys_from_binary

Table = list[list[str | None]]


def columns_of(rows: Table, width: int) -> list[pa.Array]:
    return [pa.array([row[j] for row in rows], pa.string()) for j in range(width)]


def build_index(tables: dict[int, Table], hasher: SuperKeyHasher) -> PostingIndex:
    values, table_ids, column_ids, row_ids, keys = [], [], [], [], []
    for table_id, rows in tables.items():
        if not rows:
            continue
        batch = table_postings(columns_of(rows, len(rows[0])), np.arange(len(rows)) * 3 + 7, hasher)
        values.append(batch.column("value"))
        table_ids.append(np.full(batch.num_rows, table_id))
        column_ids.append(batch.column("column_id").to_numpy())
        row_ids.append(batch.column("row_id").to_numpy())
        keys.append(super_keys_from_binary(batch.column("super_key")))
    if not values:
        return PostingIndex.from_arrays(
            pa.array([], pa.string()), [], [], [], np.zeros((0, hasher.n_words), np.uint64)
        )
    return PostingIndex.from_arrays(
        pa.chunked_array(values, pa.large_string()),
        np.concatenate(table_ids),
        np.concatenate(column_ids),
        np.concatenate(row_ids),
        np.concatenate(keys),
    )


def normalised_rows(rows: Table, width: int) -> Table:
    columns = [normalise_values(c).to_pylist() for c in columns_of(rows, width)]
    return [list(r) for r in zip(*columns, strict=True)] if rows else []


def joinability(query_tuples: set[tuple], rows: Table, mapping: tuple[int, ...]) -> int:
    """|π_Q(d) ∩ π_mapping(table)| (Eq. 1), nulls never equal."""
    projected = {tuple(row[c] for c in mapping) for row in rows}
    return len({t for t in query_tuples if t in projected})


def brute_force(tables: dict[int, Table], query_rows: Table, n_key: int) -> dict[int, tuple[int, set]]:
    """For every table: J of Eq. 2 over every injective mapping, and the set of mappings reaching it."""
    query = {tuple(r) for r in normalised_rows(query_rows, n_key) if None not in r}
    result = {}
    for table_id, rows in tables.items():
        if not rows:
            continue
        normal = normalised_rows(rows, len(rows[0]))
        scores = {m: joinability(query, normal, m) for m in permutations(range(len(rows[0])), n_key)}
        best = max(scores.values(), default=0)
        result[table_id] = (best, {m for m, s in scores.items() if s == best})
    return result


def top_k_scores(per_table: dict[int, tuple[int, set]], k: int) -> list[int]:
    return sorted((j for j, _ in per_table.values() if j > 0), reverse=True)[:k]
