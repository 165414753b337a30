"""The FK candidates of keys (Zhang et al. Alg. B.1, ``discover``'s module docstring): proposed from the
inclusion estimates (``CandidateIndex``), scored in the tasks that hold their values
(``scored_candidates``: phase 2's tuple sketches, the exact inclusion, EMD_n and the signals), and kept
for the smallest keys with the key signals (``smallest_keys_only``, ``with_key_signals``). Both
placements of the step (``discover`` on the driver, ``in_executors``) run these functions, the executors
over the groups that decide each.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import mapped
from lakemeta.config import FkConfig, SketchConfig
from lakemeta.fks.columns import ColumnCache
from lakemeta.fks.keys import Key
from lakemeta.fks.randomness import KeyGrid
from lakemeta.fks.signals import ColumnTypes, common_divisor, integer_key, span, step
from lakemeta.sketches.bml import estimate_inclusion
from lakemeta.sketches.hll import registers_of
from lakemeta.values.hashes import shared_count

SCORED_STATE = "state/fk_scored"
"""Every proposed candidate's outcome, kept for the next run (``discover``)."""
_STRINGS = pa.list_(pa.string())
_CANDIDATE = pa.struct(
    [
        ("fk_table", pa.string()),
        ("fk_path", pa.string()),
        ("fk_version", pa.int64()),
        ("fk_rows", pa.int64()),
        ("fk_columns", _STRINGS),
        ("estimate", pa.float64()),
        ("error", pa.float64()),
    ]
)
DESCRIPTOR = pa.schema(
    [
        ("pk_table", pa.string()),
        ("pk_path", pa.string()),
        ("pk_version", pa.int64()),
        ("pk_rows", pa.int64()),
        ("pk_columns", _STRINGS),
        ("pk_source", pa.string()),
        ("candidates", pa.list_(_CANDIDATE)),
    ]
)
"""A key and its candidates, as the scoring tasks read them (``scored_candidates``)."""
ROWS = pa.schema(
    [
        ("fk_table", pa.string()),
        ("fk_columns", pa.list_(pa.string())),
        ("pk_table", pa.string()),
        ("pk_columns", pa.list_(pa.string())),
        ("pk_source", pa.string()),
        ("inclusion_estimate", pa.float64()),
        ("inclusion_error", pa.float64()),
        ("emd", pa.float64()),
        ("inclusion", pa.float64()),
        ("coverage", pa.float64()),
        ("fk_distinct", pa.int64()),
        ("pk_distinct", pa.int64()),
        ("span_start", pa.float64()),
        ("span_end", pa.float64()),
        ("pk_is_integer", pa.bool_()),
        ("pk_is_range", pa.bool_()),
        ("fk_step", pa.int64()),
    ]
)
# What the tasks return for every candidate: its scored row, or a pruned one (passed false, no signals),
# with the phase-1 estimate it was proposed with; kept as ``SCORED_STATE`` for the next run.
OUTCOMES = pa.schema(
    [*ROWS, ("proposed_estimate", pa.float64()), ("proposed_error", pa.float64()), ("passed", pa.bool_())]
)
# The scored candidates with the key signals added (``with_key_signals``): what ``choice`` reads.
SCORED = ROWS.append(pa.field("fk_is_key", pa.bool_())).append(pa.field("pk_ordinal", pa.int32()))


@dataclass(frozen=True)
class Candidate:
    """A candidate F for a key P; the estimate is phase 1's for one column, None until phase 2 for more."""

    table: str
    columns: tuple[str, ...]
    estimate: float | None
    error: float | None


_SEPARATOR = "\x1f"  # between a table's and a column's name, in one string naming a column


def _column_names(tables: pa.Array | pa.ChunkedArray, columns: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One string per (table, column), to look columns up in Arrow."""
    return pc.binary_join_element_wise(tables, columns, _SEPARATOR)


@dataclass(frozen=True)
class ForeignNumberings:
    """The cut before scoring at any density: a one-column key that numbers its table's rows (``numberings``)
    has no candidates in other schemas (folders, ``FkConfig.schema_of``), which ``choice`` could never accept
    (its rule 3: a key in another schema must be more than a numbering 1..N), unless the dependent is a key
    itself and its table may be a copy of the key's (``CandidateIndex.may_overlap``): ``overlaps`` finds
    copies from such candidates. So the overlaps and every kept candidate's own signals are those of the full
    list; what changes is that such a key no longer outranks a candidate of another schema's key that is more
    than a numbering (``choice``, 2). ``numbered``: the numbering keys (table, column); ``keys``: every key
    (table, columns); ``overlap_share``: ``fks.overlap_share``; ``schema_of``: ``fks.schema_of``."""

    numbered: frozenset[tuple[str, str]]
    keys: frozenset[tuple[str, tuple[str, ...]]]
    overlap_share: float
    schema_of: Callable[[str], str]  # ``FkConfig.schema_of``
    _one_column_keys: pa.Array = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [_SEPARATOR.join((table, columns[0])) for table, columns in self.keys if len(columns) == 1]
        object.__setattr__(self, "_one_column_keys", pa.array(sorted(names), pa.string()))

    def kept(self, candidates: pa.Table, key: Key, index: CandidateIndex) -> pa.Array:
        """Which of a numbering key's one-column candidates (``CandidateIndex``' rows into its column) are
        kept: those of its schema, and those whose dependent is a key of a table that may be its table's
        copy."""
        same_folder = pc.equal(
            mapped(candidates["dep_table"], self.schema_of, pa.string()), self.schema_of(key.table)
        )
        dependents = _column_names(candidates["dep_table"], candidates["dep_column"])
        is_key = pc.is_in(dependents, self._one_column_keys)
        foreign_keys = pc.and_(pc.invert(same_folder), is_key)
        copies = {
            table: index.may_overlap(table, key.table, self.overlap_share)
            for table in pc.unique(candidates["dep_table"].filter(foreign_keys)).to_pylist()
        }
        copy_tables = pa.array([table for table, may in copies.items() if may], pa.string())
        return pc.or_(same_folder, pc.and_(foreign_keys, pc.is_in(candidates["dep_table"], copy_tables)))


class CandidateIndex:
    """S(C) for every column C: the columns F of other tables whose phase-1 estimate sigma(F, C) may reach θ
    (the estimate plus its error bound reaches it, so that a dirty FK, included at 0.95 in a large key,
    is not lost to estimator noise: the exact check in the task decides), the other columns of C's own
    table that can hold its values (self-references, Zhang's phase 2 allows the key's table), and from
    them the candidates of a key (Alg. B.1, Zhang §4). The estimates stay one Arrow table sorted by
    referenced column; only the rows of the keys' columns asked for become Python objects."""

    def __init__(self, estimates: pa.Table, types: ColumnTypes, threshold: float) -> None:
        # an undetermined pair (no estimate: its bound is too wide) may reach θ
        reach = pc.fill_null(pc.add(estimates["estimate"], estimates["error_bound"]), 1.0)
        rows = estimates.filter(pc.greater_equal(reach, threshold)).select(
            ["dep_table", "dep_column", "ref_table", "ref_column", "estimate", "error_bound"]
        )
        rows = rows.sort_by([("ref_table", "ascending"), ("ref_column", "ascending")]).combine_chunks()
        self._rows = rows
        referenced = _column_names(rows["ref_table"], rows["ref_column"])
        starts = np.zeros(0, np.int64)
        if rows.num_rows:  # each referenced column's first row
            changes = pc.not_equal(referenced.slice(1), referenced.slice(0, rows.num_rows - 1))
            starts = np.flatnonzero(np.concatenate([[True], changes.to_numpy(zero_copy_only=False)]))
        ends = np.append(starts[1:], rows.num_rows)[: len(starts)]
        at = zip(*(rows[name].take(starts).to_pylist() for name in ("ref_table", "ref_column")), strict=True)
        self._span = dict(zip(at, zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
        self._dependents: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._pairs: dict[tuple[str, str], tuple[int, bool]] | None = None
        self._threshold = threshold
        self._types = types

    def _into(self, table: str, column: str) -> pa.Table:
        """The rows of the estimates into one column that may reach θ."""
        start, end = self._span.get((table, column), (0, 0))
        return self._rows.slice(start, end - start)

    def _dependent_columns(self, table: str, column: str) -> list[tuple[str, str]]:
        """S(C) of a column C: the (table, column) of each row into it."""
        if (table, column) not in self._dependents:
            into = self._into(table, column)
            self._dependents[(table, column)] = list(
                zip(into["dep_table"].to_pylist(), into["dep_column"].to_pylist(), strict=True)
            )
        return self._dependents[(table, column)]

    def _same_table(self, table: str, column: str) -> list[Candidate]:
        """The columns of the key's own table that could reference it, those of the key's type family (a
        manager's id is an id, not text that happens to hold digits): no BML estimate (BML relates columns
        of different tables), the exact check decides."""
        family = self._types.family.get((table, column))
        if family is None:
            return []
        return [
            Candidate(table, (other,), None, None)
            for other in sorted(self._types.columns.get(table, []))
            if other != column and self._types.family[(table, other)] == family
        ]

    def _several(self, key: Key) -> Iterator[Candidate]:
        """Phase 2's candidates of a key of several columns, before their tuple sketches, one by one: every
        F in S(C1) x ... x S(Cn) whose columns are distinct and in one table."""
        sets = [self._dependent_columns(key.table, column) for column in key.columns]
        for table in sorted(set.intersection(*({t for t, _ in s} for s in sets))):
            per_column = [[c for t, c in s if t == table] for s in sets]
            for columns in itertools.product(*per_column):
                if len(set(columns)) == len(columns):
                    yield Candidate(table, columns, None, None)

    def referenced(self, key: Key) -> bool:
        """Whether another table holds candidates of the key, stopping at the first (the key checks ask
        this of every column combination of a wide table, where listing the products would cost millions
        of tuples). Keys are looked for where other tables reference them; once found, their own table's
        columns are candidates too (``candidates``), but these alone do not make a key worth checking:
        nearly every column has a sibling of a compatible type."""
        if len(key.columns) == 1:
            return (key.table, key.columns[0]) in self._span
        return next(self._several(key), None) is not None

    def may_overlap(self, table: str, other: str, share: float) -> bool:
        """Whether ``overlaps`` could find ``table`` contained in ``other``: of its columns, at least two
        and ``share`` of them included in ``other``'s, one of them holding strings (a necessary condition:
        the containment counts a matching of these columns)."""
        if self._pairs is None:  # of each pair of tables, its included columns and whether one holds strings
            included = self._rows.filter(pc.greater_equal(self._rows["estimate"], self._threshold))
            family = self._types.family
            strings = pa.array([_SEPARATOR.join(c) for c in family if family[c] == "string"], pa.string())
            included = included.append_column(
                "strings", pc.is_in(_column_names(included["dep_table"], included["dep_column"]), strings)
            )
            pairs = included.group_by(["dep_table", "ref_table"]).aggregate(
                [("dep_column", "count_distinct"), ("strings", "any")]
            )
            self._pairs = {
                (row["dep_table"], row["ref_table"]): (row["dep_column_count_distinct"], row["strings_any"])
                for row in pairs.to_pylist()
            }
        n_included, holds_strings = self._pairs.get((table, other), (0, False))
        n_columns = len(self._types.columns.get(table, []))
        return n_included >= 2 and n_included >= share * n_columns and holds_strings

    def candidates(self, key: Key, cut: ForeignNumberings | None = None) -> list[Candidate]:
        """Phase 1's candidates of a one-column key, self-references included; phase 2's, before their
        tuple sketches, of a larger one: every F in S(C1) x ... x S(Cn) whose columns are distinct and in
        one table. ``cut``: those it leaves out are not listed."""
        if len(key.columns) > 1:
            return list(self._several(key))
        into = self._into(key.table, key.columns[0])
        if cut is not None and (key.table, key.columns[0]) in cut.numbered and into.num_rows:
            into = into.filter(cut.kept(into, key, self))
        found = [
            Candidate(table, (column,), estimate, error)
            for table, column, estimate, error in zip(
                *(into[name].to_pylist() for name in ("dep_table", "dep_column", "estimate", "error_bound")),
                strict=True,
            )
        ]
        return found + self._same_table(key.table, key.columns[0])


_SKETCHES_AT_ONCE = 512
"""Phase 2's tuple sketches estimated in one call (2^p bytes each: 8 MB at p = 14)."""


def tuple_inclusions(
    key_hashes: np.ndarray, candidate_hashes: list[np.ndarray], sketches: SketchConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Phase 2 (Zhang §4 with BML): sigma(F, P) and its error bound for each candidate tuple set F of a key
    P, from the HLL registers of their tuple hashes (``hll.registers_of``: registers depend on the set of
    hashes only, so duplicates and row order do not matter), the candidates' estimates by batches."""
    p = sketches.precision
    key_sketch = registers_of(key_hashes, p)
    estimates, errors = [], []
    for first in range(0, len(candidate_hashes), _SKETCHES_AT_ONCE):
        batch = candidate_hashes[first : first + _SKETCHES_AT_ONCE]
        regs = np.stack([key_sketch, *(registers_of(hashes, p) for hashes in batch)])
        found = estimate_inclusion(
            regs,
            np.arange(1, len(batch) + 1),
            np.zeros(len(batch), np.int64),
            confidence=sketches.confidence,
            eps=sketches.tolerance,
        )
        estimates.append(found.estimate)
        errors.append(found.error_bound)
    if not estimates:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(estimates), np.concatenate(errors)


def scored_candidates(
    config: FkConfig, sketches: SketchConfig, max_task_rows: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Per key: phase 2's tuple-sketch estimate of each candidate of several columns (from every row's tuple
    hash: HLL registers depend on the set of hashes only, so no distinct tuples are formed for candidates
    it prunes), the exact inclusion check, then EMD_n on the distinct tuples. The tasks of one step share
    their opened snapshots within each Python worker (``ColumnCache``'s scope, made here)."""
    scope = uuid.uuid4().hex

    def scored(key: dict, snapshots: ColumnCache) -> Iterator[dict]:
        """The outcome of each of one key's candidates: its row with its signals (``signals``) where it
        passes phase 2 and the exact inclusion check, a pruned row (no signals) where not."""
        pk = (key["pk_path"], key["pk_version"], key["pk_columns"])
        key_hashes = snapshots.distinct_hashes(*pk)
        several = len(key["pk_columns"]) > 1
        tuple_estimates: dict[int, tuple[float, float]] = {}  # phase 2's, by candidate
        if several and len(key_hashes):
            held = {}  # the candidates with a tuple of values, and their tuples' hashes
            for i, candidate in enumerate(key["candidates"]):
                hashes, valid = snapshots.tuple_hashes(
                    candidate["fk_path"], candidate["fk_version"], candidate["fk_columns"]
                )
                if valid.any():
                    held[i] = hashes[valid]
            key_tuples, key_valid = snapshots.tuple_hashes(*pk)
            estimated = tuple_inclusions(key_tuples[key_valid], list(held.values()), sketches)
            tuple_estimates = dict(zip(held, zip(*(e.tolist() for e in estimated), strict=True), strict=True))
        grid: KeyGrid | None = None  # built at the key's first candidate that passes
        for i, candidate in enumerate(key["candidates"]):
            fk = (candidate["fk_path"], candidate["fk_version"], candidate["fk_columns"])
            estimate, error = candidate["estimate"], candidate["error"]
            pruned = {
                "fk_table": candidate["fk_table"],
                "fk_columns": candidate["fk_columns"],
                "pk_table": key["pk_table"],
                "pk_columns": key["pk_columns"],
                "pk_source": key["pk_source"],
                "proposed_estimate": estimate,
                "proposed_error": error,
                "passed": False,
            }
            if not len(key_hashes):
                yield pruned  # a key without a value has no candidate
                continue
            if several:
                if i not in tuple_estimates:
                    yield pruned  # no tuple without a null
                    continue
                estimate, error = tuple_estimates[i]
                if estimate + error < config.inclusion_threshold:
                    yield pruned  # Zhang §4: pruned on its tuples' sketches
                    continue
            fk_distinct = snapshots.distinct_hashes(*fk)
            shared = shared_count(fk_distinct, key_hashes)
            if not len(fk_distinct) or shared < config.inclusion_threshold * len(fk_distinct):
                yield pruned  # not included, though its estimates let it through
                continue
            if grid is None:
                key_tuples = snapshots.distinct_tuples(*pk)
                grid = KeyGrid(key_tuples, config.grid_quantiles(len(key_tuples)))
                pk_is_integer, pk_is_range = (False, False) if several else integer_key(key_tuples[0])
                key_divisor = common_divisor(key_tuples[0]) if pk_is_integer else None
            cells = grid.cells_of_keys(snapshots.domain_keys(*fk))
            start, end = (None, None) if several else span(cells, grid.shape[0])
            yield {
                **pruned,
                "passed": True,
                "inclusion_estimate": estimate,
                "inclusion_error": error,
                "emd": grid.emd_n_of_cells(cells),
                "inclusion": shared / len(fk_distinct),
                "coverage": shared / len(key_hashes),
                "fk_distinct": len(fk_distinct),
                "pk_distinct": len(key_hashes),
                "span_start": start,
                "span_end": end,
                "pk_is_integer": pk_is_integer,
                "pk_is_range": pk_is_range,
                "fk_step": None
                if several
                else step(snapshots.common_divisor(*fk[:2], fk[2][0]), key_divisor),
            }

    def run(descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        snapshots = ColumnCache(max_task_rows, scope)  # the columns this task reads, by table snapshot
        for batch in descriptors:
            keys = batch.to_pylist()
            last_use: dict[tuple[str, int, str], int] = {}  # each column's last key in the batch
            for i, key in enumerate(keys):
                for path, version, rows, columns in _snapshot_columns(key):
                    snapshots.need(path, version, columns, rows)
                    last_use.update({(path, version, column): i for column in columns})
            released_after: dict[int, list[tuple[str, int, str]]] = {}
            for where, i in last_use.items():
                released_after.setdefault(i, []).append(where)
            rows = []
            for i, key in enumerate(keys):
                rows += scored(key, snapshots)
                for path, version, column in released_after.get(i, []):
                    snapshots.release(path, version, [column])
            yield pa.RecordBatch.from_pylist(rows, schema=OUTCOMES)

    return run


def _snapshot_columns(key: dict) -> Iterator[tuple[str, int, int, list[str]]]:
    """The snapshots (path, version, rows) and columns one key descriptor reads: the key's, then each
    candidate's."""
    yield key["pk_path"], key["pk_version"], key["pk_rows"], key["pk_columns"]
    for candidate in key["candidates"]:
        yield candidate["fk_path"], candidate["fk_version"], candidate["fk_rows"], candidate["fk_columns"]


def smallest_keys_only(scored: pa.Table) -> pa.Table:
    """The candidates of each referenced table's smallest keys among those with candidates left after the
    exact inclusion check (``keys``: a table's primary key is among its smallest keys); declared keys keep
    theirs whatever their size."""
    sizes = pc.list_value_length(scored["pk_columns"]).to_numpy(zero_copy_only=False)
    tables = scored["pk_table"].to_pylist()
    declared = np.array([source == "declared" for source in scored["pk_source"].to_pylist()], dtype=bool)
    smallest: dict[str, int] = {}
    for table, size, is_declared in zip(tables, sizes, declared, strict=True):
        if not is_declared:
            smallest[table] = min(size, smallest.get(table, size))
    of_smallest = [size == smallest.get(table) for table, size in zip(tables, sizes, strict=True)]
    keep = declared | np.array(of_smallest, dtype=bool)
    return scored.filter(pa.array(keep, pa.bool_()))


def with_key_signals(scored: pa.Table, keys: list[Key], types: ColumnTypes) -> pa.Table:
    """``scored`` with ``fk_is_key`` (the dependent is a key of its own table) and ``pk_ordinal`` (the
    key's first column's position in its table; keys come first by convention) (``signals``)."""
    known = {(key.table, key.columns) for key in keys}
    rows = scored.select(["fk_table", "fk_columns", "pk_table", "pk_columns"]).to_pylist()
    fk_is_key = [(r["fk_table"], tuple(r["fk_columns"])) in known for r in rows]
    pk_ordinal = [min(types.ordinal.get((r["pk_table"], c), 0) for c in r["pk_columns"]) for r in rows]
    return scored.append_column("fk_is_key", pa.array(fk_is_key, pa.bool_())).append_column(
        "pk_ordinal", pa.array(pk_ordinal, pa.int32())
    )
