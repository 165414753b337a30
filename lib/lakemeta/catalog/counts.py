"""A state component's delta of signed counts added to its stored multiset, in one idempotent commit,
three ways, each where it is cheapest: one Spark MERGE; an append while the table holds no rows; on the
driver with Arrow for a small batch (``lakemeta.catalog.merges``)."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import DataType

from lakemeta.catalog.merges import merged_counts, negative_count_error
from lakemeta.catalog.predicates import is_in_sql, sql_string
from lakemeta.catalog.store import Catalog, Txn, report_written

log = logging.getLogger(__name__)

_NEGATIVE_AT, _NEGATIVE_END = "lakemeta: negative count at <<", ">>"  # around the key in the MERGE's error


def _negative_count_error(keys: Sequence[str], kind: DataType) -> str:
    """A SQL expression of type ``kind`` that fails the statement, naming the source row's key (as JSON)."""
    key = ", ".join(f"{sql_string(k)}, s.`{k}`" for k in keys)
    message = f"concat({sql_string(_NEGATIVE_AT)}, to_json(named_struct({key})), {sql_string(_NEGATIVE_END)})"
    return f"CAST(raise_error({message}) AS {kind.simpleString()})"


@contextlib.contextmanager
def _naming_negative_counts(name: str) -> Iterator[None]:
    """Turn the failure of a statement stopped by :func:`_negative_count_error` into NegativeCountError."""
    try:
        yield
    except Exception as error:  # classic sessions raise Py4JJavaError around it, Connect a SparkException
        found = re.search(f"{_NEGATIVE_AT}(.*?){_NEGATIVE_END}", str(error), re.DOTALL)
        if found is None:
            raise
        raise negative_count_error(name, json.loads(found.group(1))) from error


def merge_counts(
    catalog: Catalog,
    name: str,
    delta: DataFrame,
    keys: Sequence[str],
    counts: Sequence[str],
    tables: Sequence[str],
    replaced_tables: Sequence[str],
    txn: Txn,
    replace_columns: Sequence[str] = (),
) -> bool:
    """Add ``delta``'s counts to the stored multiset, in one idempotent commit; False when ``txn`` had
    already committed (nothing is computed then).

    ``delta`` holds, per key, the change of each count column of the ``tables`` of a plan. For tables
    in ``replaced_tables`` (tables rebuilt from their snapshot, or dropped) it holds their complete
    counts instead: their stored rows are replaced and rows the delta lacks are deleted. A row whose
    counts all reach zero is removed, and a count that would turn negative raises
    :class:`NegativeCountError` and nothing is written.
    ``replace_columns`` are descriptive columns taken from the delta as they are (for example a
    column's data type).

    While the table holds no rows (a first run, a rebuild) the delta is appended instead: against an
    empty table the MERGE would only insert, after joining the delta with the table to find the files
    it touches (the four state updates of ``bench/small_change.py``'s first run: 33 Spark jobs as
    appends, 52 as MERGEs). A negative count fails the append as it fails the MERGE.

    ``delta`` given as an Arrow table (a small batch's: ``StateComponent.update``) is merged on the
    driver instead (``lakemeta.catalog.merges``): the stored rows of its tables are read, merged with it
    as the MERGE's clauses would, and written in their place with delta-rs, under the same crash points.
    """
    if catalog.already_applied(name, txn):
        log.info("%s: run %d of %s already applied, skipping", name, txn.version, txn.app)
        report_written(name)
        return False
    replaced = list(replaced_tables)
    if isinstance(delta, pa.Table):
        schema = pa.schema([catalog.arrow_schema(name).field(c) for c in delta.column_names])
        delta = delta.cast(schema)
        return catalog.merge_small(
            name,
            sorted(set(tables) | set(replaced)),
            txn,
            lambda stored: merged_counts(name, stored.cast(schema), delta, keys, counts, replaced),
            delta.column_names,
        )

    def is_replaced(column: str) -> str:
        return is_in_sql(column, replaced)

    stop = _negative_count_error(keys, catalog.schemas[name][counts[0]].dataType)
    if not catalog.holds_rows(name):
        below_zero = " OR ".join(f"s.`{c}` < 0" for c in counts)
        rows = delta.alias("s").withColumn(
            counts[0],
            F.expr(
                f"CASE WHEN NOT {is_replaced('s.table_name')} AND ({below_zero}) THEN {stop} "
                f"ELSE s.`{counts[0]}` END"
            ),
        )
        # Crash points keep the MERGE's labels: "after merge <table>" names the state update's commit
        # whichever way it writes (docs/operations.md, "Operations").
        with (
            _naming_negative_counts(name),
            catalog.transaction(txn),
            catalog.committing("merge", name) as fenced,
        ):
            catalog.append(name, rows, fenced)
        return True

    on = " AND ".join(f"t.`{key}` = s.`{key}`" for key in keys)
    added = {c: f"t.`{c}` + s.`{c}`" for c in counts}
    described = {c: f"s.`{c}`" for c in replace_columns}

    def update(values: Mapping[str, str]) -> str:
        return "UPDATE SET " + ", ".join(f"t.`{c}` = {value}" for c, value in values.items())

    clauses = [
        f"WHEN MATCHED AND {is_replaced('s.table_name')} THEN "
        + update({**{c: f"s.`{c}`" for c in counts}, **described})
    ]
    # A count that would turn negative fails the MERGE itself (raise_error in the clause it takes), so
    # nothing is committed; checked inside the one join the MERGE does anyway rather than in a join of
    # the delta with the whole stored state before it.
    below_zero = " OR ".join(f"({value}) < 0" for value in added.values())
    clauses.append(f"WHEN MATCHED AND ({below_zero}) THEN UPDATE SET t.`{counts[0]}` = {stop}")
    all_zero = " AND ".join(f"({value}) = 0" for value in added.values())
    clauses.append(f"WHEN MATCHED AND {all_zero} THEN DELETE")
    clauses.append(f"WHEN MATCHED THEN {update({**added, **described})}")
    absent_below_zero = " OR ".join(f"s.`{c}` < 0" for c in counts)
    clauses.append(
        f"WHEN NOT MATCHED AND NOT {is_replaced('s.table_name')} AND ({absent_below_zero}) "
        f"THEN INSERT (`{counts[0]}`) VALUES ({stop})"
    )
    clauses.append("WHEN NOT MATCHED THEN INSERT *")
    if replaced:
        clauses.append(f"WHEN NOT MATCHED BY SOURCE AND {is_replaced('t.table_name')} THEN DELETE")
    # The MERGE reads its source twice (to find the files it touches, then to write). Delta computes it
    # once and keeps it for both (``merge.materializeSource=auto`` does for any source not read from
    # Delta tables alone, as the staged partial rows are not): a persist here only made a second copy,
    # filled by jobs of its own. ``none`` (the source computed twice) measured no faster on a tiny lake.
    with (
        _naming_negative_counts(name),
        catalog.transaction(txn),
        catalog.committing("merge", name) as fenced,
    ):
        catalog.merge_into(name, delta, on, clauses, tables, fenced)
    return True
