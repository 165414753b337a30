"""What the catalog must satisfy before analysts see it: one Great Expectations suite per catalog table,
plus suites over frames that relate two tables (docs/architecture.md, "The catalog contract").

* Ranges: estimates (present unless undetermined), coverages, FD errors and EMD_n in [0, 1] (EMD_n is
  normalised by the dimension, so a cell's corner distance is at most 1), counts non-negative, ranks
  from 1.
* Keys non-null: the columns that name a table, a column or a run.
* No duplicates: one row per table, column, dependency, candidate, run.
* Cross-table: every accepted FK references a key (a minimal unique column combination, a unique column,
  or a key that the FK step checked exactly on a table without agree-set state or that was declared);
  ``columns`` describes exactly the tables of ``tables`` with their row counts; the last run succeeded and
  its counts are the sums of its batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import great_expectations as gx
import pandas as pd
from great_expectations.expectations.row_conditions import Column

E = gx.expectations


@dataclass(frozen=True)
class Check:
    """A suite and the frame it validates (a catalog table, or a frame relating two of them)."""

    name: str
    frame: pd.DataFrame
    expectations: list


def _joined(values: pd.Series) -> pd.Series:
    """Array cells (column lists) as one comparable string each."""
    return values.map(lambda cells: ",".join(cells) if cells is not None else None)


def _key_names(tables: pd.Series, columns: pd.Series) -> pd.Series:
    return tables + "(" + _joined(columns) + ")"


def _shapes(frame: pd.DataFrame) -> dict[str, str]:
    """Per table (the index), its shape as one comparable string: columns x rows."""
    return {name: f"{int(row.n_columns)}x{int(row.n_rows)}" for name, row in frame.iterrows()}


def _between(column: str, low: float, high: float | None = None) -> E.ExpectColumnValuesToBeBetween:
    return E.ExpectColumnValuesToBeBetween(column=column, min_value=low, max_value=high)


def _not_null(*columns: str) -> list:
    return [E.ExpectColumnValuesToNotBeNull(column=column) for column in columns]


def catalog_checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    """The checks of a catalog given as its tables (``state/batches`` included for the run counts)."""
    checks = [
        Check(
            "tables",
            tables["tables"],
            [
                *_not_null("table_name", "n_rows", "n_columns", "last_version"),
                E.ExpectColumnValuesToBeUnique(column="table_name"),
                _between("n_rows", 0),
                _between("n_columns", 0),
                _between("last_version", 0),
            ],
        ),
        Check(
            "columns",
            tables["columns"],
            [
                *_not_null("table_name", "column_name", "n_rows", "n_nulls"),
                E.ExpectCompoundColumnsToBeUnique(column_list=["table_name", "column_name"]),
                _between("n_nulls", 0),
                _between("n_distinct_estimate", 0),
                E.ExpectColumnPairValuesAToBeGreaterThanB(
                    column_A="n_rows", column_B="n_nulls", or_equal=True
                ),
            ],
        ),
        Check(
            "unique_column_combinations",
            tables["unique_column_combinations"].assign(
                columns=_joined(tables["unique_column_combinations"]["columns"])
            ),
            [
                *_not_null("table_name", "columns"),
                E.ExpectCompoundColumnsToBeUnique(column_list=["table_name", "columns"]),
            ],
        ),
        Check(
            "functional_dependencies",
            tables["functional_dependencies"].assign(lhs=_joined(tables["functional_dependencies"]["lhs"])),
            [
                *_not_null("table_name", "lhs", "rhs", "error"),
                _between("error", 0.0, 1.0),
                E.ExpectCompoundColumnsToBeUnique(column_list=["table_name", "lhs", "rhs"]),
            ],
        ),
        Check(
            "inclusion_dependencies",
            tables["inclusion_dependencies"],
            [
                *_not_null("dep_table", "dep_column", "ref_table", "ref_column"),
                _between("coverage", 0.0, 1.0),
                _between("dep_distinct", 0),
                E.ExpectCompoundColumnsToBeUnique(
                    column_list=["dep_table", "dep_column", "ref_table", "ref_column"]
                ),
            ],
        ),
        Check(
            "inclusion_estimates",
            tables["inclusion_estimates"],
            [
                *_not_null("dep_table", "dep_column", "ref_table", "ref_column", "error_bound"),
                E.ExpectColumnValuesToNotBeNull(
                    column="estimate", row_condition=Column("status") != "undetermined"
                ),
                E.ExpectColumnValuesToBeInSet(
                    column="status", value_set=["exact", "estimated", "undetermined"]
                ),
                _between("estimate", 0.0, 1.0),
                _between("error_bound", 0.0),
                E.ExpectCompoundColumnsToBeUnique(
                    column_list=["dep_table", "dep_column", "ref_table", "ref_column"]
                ),
            ],
        ),
        Check(
            "fk_candidates",
            tables["fk_candidates"].assign(
                fk_columns=_joined(tables["fk_candidates"]["fk_columns"]),
                pk_columns=_joined(tables["fk_candidates"]["pk_columns"]),
            ),
            [
                *_not_null("fk_table", "fk_columns", "pk_table", "pk_columns", "emd", "rank", "accepted"),
                _between("emd", 0.0, 1.0),
                _between("inclusion_estimate", 0.0, 1.0),
                _between("rank", 1),
                E.ExpectColumnValuesToBeUnique(column="rank"),
                E.ExpectCompoundColumnsToBeUnique(
                    column_list=["fk_table", "fk_columns", "pk_table", "pk_columns"]
                ),
            ],
        ),
        Check(
            "accepted_fks",  # each dependent references at most one key (lakemeta.fks.choice)
            tables["fk_candidates"][_is_true(tables["fk_candidates"]["accepted"])].assign(
                fk_columns=lambda frame: _joined(frame["fk_columns"])
            ),
            [E.ExpectCompoundColumnsToBeUnique(column_list=["fk_table", "fk_columns"])],
        ),
        Check(
            "table_overlaps",
            tables["table_overlaps"].assign(columns=_joined(tables["table_overlaps"]["columns"])),
            [
                *_not_null("left_table", "right_table"),
                _between("left_in_right", 0.0, 1.0),
                _between("right_in_left", 0.0, 1.0),
                E.ExpectCompoundColumnsToBeUnique(column_list=["left_table", "right_table"]),
            ],
        ),
        Check(
            "joinable_tables",
            tables["joinable_tables"],
            [
                *_not_null("query_id", "rank", "table_name"),
                _between("rank", 1),
                _between("joinability", 0),
                E.ExpectCompoundColumnsToBeUnique(column_list=["query_id", "rank"]),
            ],
        ),
        Check(
            "runs",
            tables["runs"],
            [
                *_not_null("run_id", "started_at", "status"),
                E.ExpectColumnValuesToBeUnique(column="run_id"),
                E.ExpectColumnValuesToBeInSet(
                    column="status", value_set=["running", "succeeded", "abandoned"]
                ),
                _between("tables_changed", 0),
                _between("rows_inserted", 0),
                _between("rows_deleted", 0),
            ],
        ),
        Check(
            "relationship_changes",
            tables["relationship_changes"],
            [
                *_not_null("relationship", "change", "dep_table", "ref_table", "settings_changed"),
                E.ExpectColumnValuesToBeInSet(
                    column="relationship", value_set=["inclusion_dependency", "foreign_key"]
                ),
                E.ExpectColumnValuesToBeInSet(column="change", value_set=["appeared", "disappeared"]),
            ],
        ),
        Check(
            "discovery_runs",
            tables["discovery_runs"],
            [*_not_null("step", "settings", "finished_at"), _between("run_id", 1)],
        ),
    ]
    return checks + _cross_table_checks(tables)


def _is_true(flags: pd.Series) -> pd.Series:
    """A nullable flag column as a mask: null counts as false."""
    return flags.astype("boolean").fillna(False).astype(bool)


def _cross_table_checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    fks, uccs, columns = tables["fk_candidates"], tables["unique_column_combinations"], tables["columns"]
    known_keys = set(_key_names(uccs["table_name"], uccs["columns"]))
    unique = columns[_is_true(columns["is_unique"])]
    known_keys |= set(unique["table_name"] + "(" + unique["column_name"] + ")")
    accepted = fks[_is_true(fks["accepted"])]
    # Keys of tables without agree-set state were checked exactly by the FK step, or declared.
    from_agree_sets = accepted[~accepted["pk_source"].isin(["checked", "declared"])]
    referenced = pd.DataFrame({"key": _key_names(from_agree_sets["pk_table"], from_agree_sets["pk_columns"])})

    described = columns.groupby("table_name").agg(n_columns=("column_name", "size"), n_rows=("n_rows", "max"))
    listed = tables["tables"].set_index("table_name")[["n_columns", "n_rows"]]
    shapes = pd.DataFrame({"table": sorted(set(described.index) | set(listed.index))})
    shapes["described"] = shapes["table"].map(_shapes(described))
    shapes["listed"] = shapes["table"].map(_shapes(listed))

    runs, batches = tables["runs"], tables["state/batches"]
    last = runs.sort_values("run_id").tail(1)
    of_last = batches[batches["run_id"].isin(last["run_id"])]
    counts = pd.DataFrame(
        {
            "status": last["status"],
            "counts": last["tables_changed"].astype("Int64").astype(str)
            + "/"
            + last["rows_inserted"].astype("Int64").astype(str)
            + "/"
            + last["rows_deleted"].astype("Int64").astype(str),
        }
    )
    batch_counts = (
        f"{len(of_last)}/{int(of_last['rows_inserted'].sum())}/{int(of_last['rows_deleted'].sum())}"
    )
    return [
        Check(
            "accepted_fks_reference_keys",
            referenced,
            [E.ExpectColumnValuesToBeInSet(column="key", value_set=sorted(known_keys))],
        ),
        Check(
            "columns_describe_tables",
            shapes,
            [E.ExpectColumnPairValuesToBeEqual(column_A="described", column_B="listed")],
        ),
        Check(
            "last_run_counts_its_batches",
            counts,
            [
                E.ExpectColumnValuesToBeInSet(column="status", value_set=["succeeded"]),
                E.ExpectColumnValuesToBeInSet(column="counts", value_set=[batch_counts]),
            ],
        ),
    ]
