"""Many's kept inputs (``lakemeta.inds.kept_inputs``) over random sequences of discoveries: tables changed,
added and dropped, columns added and dropped, retries of a discovery, discoveries from scratch. After each,
the newest row of every column is the inputs the discovery computed, exactly; no row of a dropped column is
left; outdated rows stay within their share; a retried discovery writes nothing twice. On delta-rs, no
Spark."""

from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.reflects import recorded_reflects
from lakemeta.inds.bloom import BloomParams, signature_from_hashes
from lakemeta.inds.columns import INPUTS, ColumnInputs
from lakemeta.inds.kept_inputs import COMPUTED_IN, OUTDATED_SHARE, keep_inputs, read_kept_inputs
from lakemeta.storage import Location

# enough columns that a batch of a table or two leaves the outdated rows within their share: appended
TABLES = [f"t{i}" for i in range(12)]
COLUMNS = ["a", "b", "c", "d"]
SIGNATURE = BloomParams(m=64, k=1, p=2)  # a signature of 16 bytes, as the random ones below

# the lake's first tables; then per discovery: the tables changed by batches, a change of the lake's
# tables (a table or a column added or dropped) and its table, whether it runs from scratch (other
# settings), whether it is retried
first_lakes = st.dictionaries(
    st.sampled_from(TABLES), st.sets(st.sampled_from(COLUMNS), min_size=1), min_size=8
)
discoveries = st.lists(
    st.tuples(
        st.sets(st.sampled_from(TABLES), max_size=2),
        st.sampled_from([None, None, None, "add table", "drop table", "add column", "drop column"]),
        st.sampled_from(TABLES),
        st.sampled_from([False, False, False, True]),
        st.booleans(),
    ),
    min_size=1,
    max_size=8,
)


def _changed_lake(lake: dict[str, set[str]], change: str | None, table: str) -> tuple[dict, set[str]]:
    """The lake after ``change`` of ``table`` (where it applies), and the tables it changed."""
    lake = {name: set(columns) for name, columns in lake.items()}
    if change == "add table" and table not in lake:
        lake[table] = {"a", "b"}
    elif change == "drop table" and table in lake and len(lake) > 1:
        del lake[table]
    elif change == "add column" and table in lake and len(lake[table]) < len(COLUMNS):
        lake[table].add(sorted(set(COLUMNS) - lake[table])[0])
    elif change == "drop column" and table in lake and len(lake[table]) > 1:
        lake[table].remove(sorted(lake[table])[0])
    else:
        return lake, set()
    return lake, {table}


def _inputs(rng: np.random.Generator, lake: dict[str, set[str]], old: dict, changed: set[str]) -> dict:
    """Each column's inputs: its old ones for a column of an unchanged table, random new ones otherwise."""
    inputs = {}
    for table in sorted(lake):
        for column in sorted(lake[table]):
            if table not in changed and (table, column) in old:
                inputs[(table, column)] = old[(table, column)]
                continue
            n = int(rng.integers(0, 4))
            hashes = np.sort(rng.integers(0, 2**63, n).astype(np.uint64))
            kept_hashes = rng.integers(0, 3) > 0
            # a column's signature: its hashes' at the paper's m (level 0), or a larger column's at level
            # 1 (32 bytes), or, with its hashes not kept, any
            if not kept_hashes:
                signature = rng.bytes(int(rng.choice([16, 32])))
            elif rng.integers(0, 4) > 0:
                signature = signature_from_hashes(hashes, SIGNATURE).tobytes()
            else:
                signature = rng.bytes(32)
            inputs[(table, column)] = {
                "signature": signature,
                "set_size": n,
                "n_values": n + int(rng.integers(0, 3)),
                "n_distinct": n,
                "all_integer": bool(rng.integers(0, 2)),
                "value_hashes": hashes.tobytes() if kept_hashes else None,
            }
    return inputs


def _table(inputs: dict) -> pa.Table:
    keys = list(inputs)
    rows = [inputs[key] for key in keys]
    return pa.table(
        {
            "table_name": pa.array([table for table, _ in keys], pa.string()),
            "column_name": pa.array([column for _, column in keys], pa.string()),
            **{
                name: pa.array([row[name] for row in rows], kind)
                for name, kind in (
                    ("signature", pa.binary()),
                    ("set_size", pa.int64()),
                    ("n_values", pa.int64()),
                    ("n_distinct", pa.int64()),
                    ("all_integer", pa.bool_()),
                    ("value_hashes", pa.binary()),
                )
            },
        }
    )


@settings(max_examples=25, deadline=None)
@given(first_lakes, discoveries, st.integers(0, 2**32 - 1))
def test_the_newest_row_of_each_column_holds_the_inputs_of_the_last_discovery(
    lake: dict[str, set[str]], steps: list[tuple], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as folder:
        catalog = Catalog(None, Location.parse(folder))
        ensure_tables(catalog)
        old: dict = {}
        for run, (batches, change, changed_table, from_scratch, retried) in enumerate(steps):
            lake, structural = _changed_lake(lake, change, changed_table)
            batches = (batches & set(lake)) | structural  # a dropped table's batch is its drop
            names = [(table, column) for table in sorted(lake) for column in sorted(lake[table])]
            table_names = pa.array([table for table, _ in names], pa.string())
            column_names = pa.array([column for _, column in names], pa.string())
            kept = None if run == 0 or from_scratch else read_kept_inputs(catalog, table_names, column_names)
            # what the discovery computes again: the batches' tables, and as it finds them, those with a
            # column without kept inputs or with rows of a dropped column
            changed = set(TABLES) if kept is None else set(batches) | kept.unlisted
            if kept is not None:
                changed |= {table for (table, _), at in zip(names, kept.at, strict=True) if at < 0}
            inputs = _inputs(rng, lake, old, changed)
            rows = _table(inputs)
            column_inputs = ColumnInputs.from_arrow(rows, SIGNATURE)
            reflects = {"run": run, "settings": "s"}
            stored = []
            for _ in range(2 if retried else 1):
                keep_inputs(catalog, column_inputs, None if kept is None else changed, kept, reflects)
                stored.append(catalog.read_small(INPUTS).num_rows)
            assert recorded_reflects(catalog.delta_table(INPUTS)) == reflects
            assert len(set(stored)) == 1, stored  # a retry writes nothing
            now = read_kept_inputs(catalog, table_names, column_names)
            assert (now.at >= 0).all() and not now.unlisted
            current = now.current_rows().drop_columns([COMPUTED_IN])
            assert current.equals(column_inputs.to_arrow())
            # a signature its kept hashes give back is not stored, and is given back bit for bit
            at_base = pc.equal(pc.binary_length(rows["signature"]), 16)
            given_back = pc.and_(current["value_hashes"].is_valid(), at_base)
            assert current["signature"].is_null().to_pylist() == given_back.to_pylist()
            read = ColumnInputs.from_arrow(current, SIGNATURE)
            assert np.array_equal(read.signature_offsets, column_inputs.signature_offsets)
            assert np.array_equal(read.signature_words, column_inputs.signature_words)
            assert np.array_equal(read.levels, column_inputs.levels)
            assert now.rows.num_rows <= len(rows) * (1 + OUTDATED_SHARE)
            old = inputs
