"""The driver's merges of a small batch equal what the Spark MERGEs' clauses leave, row for row: random
stored rows and deltas (keys on one side or both, counts reaching zero, replaced tables, list keys,
descriptive columns) against a reference written from the clauses, one row at a time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.catalog.merges import NegativeCountError, matched, merged_counts
from lakemeta.joinsearch.state import merged_postings

TABLES = ["t0", "t1", "t2", "it's"]
AGREE_SETS = [[], ["a"], ["b"], ["a", "b"], ["ab"], ["a:b"], ["1:a"]]  # "1:a" and ["a"] must not meet


def _agree_rows(rng: np.random.Generator, n: int, low: int, high: int) -> dict[tuple, dict]:
    rows = {}
    for _ in range(n):
        table, agree_set = TABLES[rng.integers(len(TABLES))], AGREE_SETS[rng.integers(len(AGREE_SETS))]
        count = int(rng.integers(low, high))
        if count:
            rows[(table, tuple(agree_set))] = {"table_name": table, "agree_set": agree_set, "count": count}
    return rows


def _value_rows(rng: np.random.Generator, n: int, low: int, high: int) -> dict[tuple, dict]:
    rows = {}
    for _ in range(n):
        table, column, value = TABLES[rng.integers(len(TABLES))], f"c{rng.integers(2)}", int(rng.integers(6))
        count = int(rng.integers(low, high))
        if count:
            rows[(table, column, value)] = {
                "table_name": table,
                "column_name": column,
                "hash": value,
                "count": count,
                "integer": bool(rng.integers(2)),
            }
    return rows


KINDS = {
    "agree_sets": (
        _agree_rows,
        ["table_name", "agree_set"],
        pa.schema([("table_name", pa.string()), ("agree_set", pa.list_(pa.string())), ("count", pa.int64())]),
    ),
    "column_values": (
        _value_rows,
        ["table_name", "column_name", "hash"],
        pa.schema(
            [
                ("table_name", pa.string()),
                ("column_name", pa.string()),
                ("hash", pa.int64()),
                ("count", pa.int64()),
                ("integer", pa.bool_()),
            ]
        ),
    ),
}


def _clauses(stored: dict, delta: dict, replaced: set[str]) -> dict | tuple:
    """The MERGE's clauses applied one delta row at a time; ("negative", keys) when a count goes below 0."""
    result = {key: row for key, row in stored.items() if row["table_name"] not in replaced}
    negative = set()
    for key, row in delta.items():
        if row["table_name"] in replaced:
            result[key] = row
        elif key in result:
            total = result[key]["count"] + row["count"]
            if total < 0:
                negative.add(key)
            elif total == 0:
                del result[key]
            else:
                result[key] = {**row, "count": total}
        elif row["count"] < 0:
            negative.add(key)
        else:
            result[key] = row
    return ("negative", negative) if negative else result


def _key(row: dict, keys: list[str]) -> tuple:
    return tuple(tuple(row[k]) if isinstance(row[k], list) else row[k] for k in keys)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("seed", range(60))
def test_merged_counts_equal_the_merge_clauses(kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, keys, schema = KINDS[kind]
    stored = rows(rng, int(rng.integers(0, 25)), 1, 5)
    delta = rows(rng, int(rng.integers(0, 15)), -4 if seed % 3 else -1, 4)
    if seed % 3 == 0:  # mostly removals the state can bear
        delta = {
            k: {**r, "count": max(r["count"], -stored[k]["count"])} for k, r in delta.items() if k in stored
        }
    replaced = {t for t in TABLES if rng.random() < 0.25}
    for key in [k for k, r in delta.items() if r["table_name"] in replaced]:
        delta[key]["count"] = abs(delta[key]["count"])  # a replaced table's rows are its complete counts
    expected = _clauses(stored, delta, replaced)
    as_table = pa.Table.from_pylist
    arguments = (as_table(list(stored.values()), schema), as_table(list(delta.values()), schema))
    if isinstance(expected, tuple):
        with pytest.raises(NegativeCountError, match=r"negative count in state/x at \[") as raised:
            merged_counts("state/x", *arguments, keys, ["count"], sorted(replaced))
        values = [[list(v) if isinstance(v, tuple) else v for v in key] for key in expected[1]]
        named = [[dict(zip(keys, v, strict=True))] for v in values]
        assert any(f" at {key}: " in str(raised.value) for key in named)
        return
    merged = merged_counts("state/x", *arguments, keys, ["count"], sorted(replaced)).to_pylist()
    assert {_key(row, keys): row for row in merged} == expected
    assert len(merged) == len(expected)


@pytest.mark.parametrize("seed", range(40))
def test_merged_postings_equal_the_merge_clauses(seed: int) -> None:
    rng = np.random.default_rng(seed)

    def items(n: int) -> list[dict]:
        found = {}
        for _ in range(n):
            table, row_id, column = TABLES[rng.integers(3)], int(rng.integers(8)), f"c{rng.integers(2)}"
            found[(table, row_id, column)] = {
                "value": f"v{row_id}",
                "table_name": table,
                "column_name": column,
                "row_id": row_id,
                "super_key": [row_id, 7],
            }
        return list(found.values())

    stored, inserted = items(int(rng.integers(0, 20))), items(int(rng.integers(0, 12)))
    removed = [{"table_name": TABLES[rng.integers(3)], "row_id": int(rng.integers(8))} for _ in range(5)]
    replaced = {t for t in TABLES if rng.random() < 0.3}

    def key(item: dict) -> tuple:
        return item["table_name"], item["row_id"], item["column_name"]

    # The clauses: a stored item matched by a removal's (table, row id) is deleted; an insert matched by
    # no (table, row id, column) inserted; a stored item of a replaced table matched by no source row deleted.
    gone = {(r["table_name"], r["row_id"]) for r in removed}
    again = {key(i) for i in inserted}
    expected = [
        s
        for s in stored
        if (s["table_name"], s["row_id"]) not in gone and (s["table_name"] not in replaced or key(s) in again)
    ]
    expected += [i for i in inserted if key(i) not in {key(s) for s in stored}]
    schema = pa.schema(
        [
            ("value", pa.string()),
            ("table_name", pa.string()),
            ("column_name", pa.string()),
            ("row_id", pa.int64()),
            ("super_key", pa.list_(pa.int64())),
        ]
    )
    merged = merged_postings(
        pa.Table.from_pylist(stored, schema),
        pa.Table.from_pylist(inserted, schema),
        pa.Table.from_pylist(removed, pa.schema([("table_name", pa.string()), ("row_id", pa.int64())])),
        sorted(replaced),
    )
    assert sorted(merged.to_pylist(), key=key) == sorted(expected, key=key)


def test_matched_meets_equal_lists_only() -> None:
    rows = pa.table(
        {"k": pa.array([["a"], ["1:a"], [], None, ["a", "b"]], pa.list_(pa.string())), "n": range(5)}
    )
    other = pa.table({"k": pa.array([["a"], [], None, ["ab"]], pa.list_(pa.string()))})
    assert matched(rows, other, ["k"]).tolist() == [True, False, True, False, False]
