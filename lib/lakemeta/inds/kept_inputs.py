"""Many's kept inputs (``state/ind_columns``): each column's inputs (``inds.columns``) as the discovery
after a batch reuses them, read and written without Spark.

A discovery after a batch computes again the inputs of the changed tables' columns only, a few of 10^5,
and appends them: a column's row of the newest ``computed_in`` (the committed run it was computed over)
holds its inputs, its older rows are outdated. Appending writes the batch's rows alone, where replacing
them would rewrite the inputs of every column, all 10^5 for a few changed ones. The table is rewritten
with the current rows alone after a discovery from scratch, when outdated rows would pass
``OUTDATED_SHARE`` of it, and when it holds rows of dropped tables or columns, which would otherwise make
their tables look changed to every later discovery.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import one_array
from lakemeta.catalog import Catalog
from lakemeta.catalog.predicates import of_tables
from lakemeta.catalog.store import Txn
from lakemeta.inds.columns import INPUTS, ColumnInputs

# The share of outdated rows past which the kept inputs are rewritten rather than appended to: their read
# grows by at most this share between rewrites.
OUTDATED_SHARE = 0.25
COMPUTED_IN = "computed_in"


@dataclass(frozen=True)
class KeptInputs:
    """The rows of ``state/ind_columns`` (``rows``); for each of the lake's columns the row holding its
    inputs, the newest of its rows (``at``, -1 where it has none); and the tables of the rows that belong
    to no column of the lake (``unlisted``: dropped tables and columns)."""

    rows: pa.Table
    at: np.ndarray
    unlisted: set[str]

    def current_rows(self) -> pa.Table:
        """The rows holding the lake's columns' inputs, in the lake's order (a column without inputs has
        none)."""
        return self.rows.take(pa.array(self.at[self.at >= 0]))


def _column_keys(table_names: pa.StringArray, column_names: pa.StringArray) -> pa.Array:
    """Each column as one string: its table's name and its own, NUL-separated (no name holds a NUL)."""
    return pc.binary_join_element_wise(table_names, column_names, "\x00")


def read_kept_inputs(
    catalog: Catalog, table_names: pa.StringArray, column_names: pa.StringArray
) -> KeptInputs:
    """The kept inputs of the columns named by ``table_names`` and ``column_names`` (``KeptInputs``)."""
    stored = catalog.read_small(INPUTS)
    # The rows come in the order of their files, not the lake's: each row's column is found by its key
    # (hashed, vectorised: 10^5 columns), -1 for a row of a dropped table or column.
    stored_keys = _column_keys(one_array(stored["table_name"]), one_array(stored["column_name"]))
    column_of = pc.fill_null(pc.index_in(stored_keys, value_set=_column_keys(table_names, column_names)), -1)
    column_of = column_of.to_numpy()
    # a row written before the runs were recorded is older than any other
    computed_in = pc.fill_null(stored[COMPUTED_IN], -1).to_numpy()
    # each column's newest row: the listed rows by column, then by run; the last of each column's rows
    listed = np.flatnonzero(column_of >= 0)
    by_column = listed[np.lexsort((computed_in[listed], column_of[listed]))]
    columns_in_order = column_of[by_column]
    newest = np.ones(len(by_column), bool)
    newest[:-1] = columns_in_order[1:] != columns_in_order[:-1]
    at = np.full(len(table_names), -1, np.int64)
    at[columns_in_order[newest]] = by_column[newest]
    unlisted = stored["table_name"].filter(pa.array(column_of < 0))
    return KeptInputs(stored, at, set(pc.unique(unlisted).to_pylist()))


def keep_inputs(
    catalog: Catalog,
    inputs: ColumnInputs,
    changed_tables: set[str] | None,
    kept: KeptInputs | None,
    reflects: dict,
) -> None:
    """Keep ``inputs`` (every column's), computed again for ``changed_tables`` only and reusing ``kept``
    for the others (None, None: all computed), over the committed run ``reflects["run"]``: the changed
    tables' rows appended, once per committed run, or every column's row written alone (see the module).
    ``reflects`` goes with the commit (``catalog.reflects.recorded_reflects``)."""
    committed = reflects["run"]
    computed_in = pa.scalar(committed, pa.int64())
    n_columns = len(inputs.table_names)
    if kept is not None and changed_tables is not None and committed is not None and not kept.unlisted:
        at = np.flatnonzero(of_tables(inputs.table_names, changed_tables))
        outdated = kept.rows.num_rows + len(at) - n_columns
        if outdated <= OUTDATED_SHARE * n_columns:
            fresh = inputs.take(at).to_arrow()
            fresh = fresh.append_column(COMPUTED_IN, pa.repeat(computed_in, fresh.num_rows))
            catalog.append_small(INPUTS, fresh, Txn(f"discovery {INPUTS}", committed), reflects=reflects)
            return
    rows = inputs.to_arrow()
    rows = rows.append_column(COMPUTED_IN, pa.repeat(computed_in, n_columns))
    catalog.replace_small(INPUTS, rows, reflects=reflects)
