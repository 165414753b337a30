"""What the catalog must satisfy before analysts see it: one Great Expectations suite per catalog table,
plus suites that check a table against the tables it refers to (docs/architecture.md, "The catalog
contract").

* Ranges: estimates (present unless undetermined), coverages, FD errors and EMD_n in [0, 1] (EMD_n is
  normalised by the dimension, so a cell's corner distance is at most 1), counts non-negative, ranks
  from 1.
* Keys non-null: the columns that name a table, a column or a run.
* No duplicates: one row per table, column, dependency, candidate, run.
* Cross-table: every accepted FK references a key (a minimal unique column combination, a unique column,
  or a key that the FK step checked exactly on a table without agree-set state or that was declared);
  ``columns`` describes exactly the tables of ``tables`` with their row counts; the last run succeeded and
  its counts are the sums of its batches.

Every suite validates a catalog table (its data asset), as written, with array cells as comparable strings.
A check across tables validates the table whose rows it constrains, with the values it needs from the
tables it refers to as suite parameters (GX's ``$PARAMETER``: the suite stays one definition, and each
validation result shows the values it was checked against). What GX cannot express over one table's rows
is computed here and said where: a key name made of a table and its column list, and per-table counts.
"""

from __future__ import annotations

import great_expectations as gx
import pandas as pd
from great_expectations.expectations.row_conditions import Column

from lakemeta.quality.results import Check, PartSuite

E = gx.expectations


def _key_names(tables: pd.Series, columns: pd.Series) -> pd.Series:
    return tables + "(" + columns + ")"


def _shape_names(names: pd.Series, n_columns: pd.Series, n_rows: pd.Series) -> pd.Series:
    """Each table's shape as one comparable string, "table: columns x rows"."""
    return names + ": " + n_columns.astype("Int64").astype(str) + "x" + n_rows.astype("Int64").astype(str)


def _between(column: str, low: float, high: float | None = None) -> E.ExpectColumnValuesToBeBetween:
    return E.ExpectColumnValuesToBeBetween(column=column, min_value=low, max_value=high)


def _parameter(name: str) -> dict:
    """A reference to the suite parameter ``name``, given when the suite is validated."""
    return {"$PARAMETER": name}


def _not_null(*columns: str) -> list:
    return [E.ExpectColumnValuesToNotBeNull(column=column) for column in columns]


# The columns the checks of a table read, where its rows carry much more than they check: an FK candidate's
# signals and scores (a few hundred bytes a row over half a million rows in a dense lake), a relationship
# change's column lists and batches (millions of rows). Other tables are read whole.
CHECKED_COLUMNS = {
    "fk_candidates": [
        *("fk_table", "fk_columns", "pk_table", "pk_columns", "pk_source"),
        *("emd", "inclusion_estimate", "rank", "accepted"),
    ],
    "relationship_changes": ["relationship", "change", "dep_table", "ref_table", "settings_changed"],
}

_COLUMN_PAIR = ["dep_table", "dep_column", "ref_table", "ref_column"]


def part_suites() -> dict[str, PartSuite]:
    """The suites of the tables whose rows are column pairs, tens of millions in a dense lake: validated in
    parts of the rows (``table_parts``), each part holding every row of a key."""
    return {
        "inclusion_dependencies": PartSuite(
            _COLUMN_PAIR,
            [
                *_not_null(*_COLUMN_PAIR),
                _between("coverage", 0.0, 1.0),
                _between("dep_distinct", 0),
                E.ExpectCompoundColumnsToBeUnique(column_list=_COLUMN_PAIR),
            ],
        ),
        "inclusion_estimates": PartSuite(
            _COLUMN_PAIR,
            [
                *_not_null(*_COLUMN_PAIR, "error_bound"),
                E.ExpectColumnValuesToNotBeNull(
                    column="estimate", row_condition=Column("status") != "undetermined"
                ),
                E.ExpectColumnValuesToBeInSet(
                    column="status", value_set=["exact", "estimated", "undetermined"]
                ),
                _between("estimate", 0.0, 1.0),
                _between("error_bound", 0.0),
                E.ExpectCompoundColumnsToBeUnique(column_list=_COLUMN_PAIR),
            ],
        ),
        "relationship_changes": PartSuite(
            None,
            [
                *_not_null("relationship", "change", "dep_table", "ref_table", "settings_changed"),
                E.ExpectColumnValuesToBeInSet(
                    column="relationship", value_set=["inclusion_dependency", "foreign_key"]
                ),
                E.ExpectColumnValuesToBeInSet(column="change", value_set=["appeared", "disappeared"]),
            ],
        ),
    }


def catalog_checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    """The checks of a catalog given as its tables (``state/batches`` included for the run counts), but
    for the tables of ``part_suites``."""
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
            tables["unique_column_combinations"],
            [
                *_not_null("table_name", "columns"),
                E.ExpectCompoundColumnsToBeUnique(column_list=["table_name", "columns"]),
            ],
        ),
        Check(
            "functional_dependencies",
            tables["functional_dependencies"],
            [
                *_not_null("table_name", "lhs", "rhs", "error"),
                _between("error", 0.0, 1.0),
                E.ExpectCompoundColumnsToBeUnique(column_list=["table_name", "lhs", "rhs"]),
            ],
        ),
        Check(
            "fk_candidates",
            tables["fk_candidates"],
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
            tables["fk_candidates"],
            [
                E.ExpectCompoundColumnsToBeUnique(
                    column_list=["fk_table", "fk_columns"], row_condition=ACCEPTED
                )
            ],
            asset="fk_candidates",
        ),
        Check(
            "table_overlaps",
            tables["table_overlaps"],
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
            "discovery_runs",
            tables["discovery_runs"],
            [*_not_null("step", "settings", "finished_at"), _between("run_id", 1)],
        ),
    ]
    return checks + _cross_table_checks(tables)


def _is_true(flags: pd.Series) -> pd.Series:
    """A nullable flag column as a mask: null counts as false."""
    return flags.astype("boolean").fillna(False).astype(bool)


# A row condition (GX turns it into a pandas query), not a comparison; a null flag is not accepted.
ACCEPTED = Column("accepted") == True  # noqa: E712


def _cross_table_checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    fks, uccs, columns = tables["fk_candidates"], tables["unique_column_combinations"], tables["columns"]
    # A key is a table and a list of its columns: GX compares one column with a set, so both sides name
    # the key as one string, "table(column,...)".
    known_keys = set(_key_names(uccs["table_name"], uccs["columns"]))
    unique = columns[_is_true(columns["is_unique"])]
    known_keys |= set(unique["table_name"] + "(" + unique["column_name"] + ")")

    # Per-table counts of the rows of ``columns``: GX has no expectation that compares a count per group
    # with another table's value, so each table's shape is counted here and compared as a string.
    described = columns.groupby("table_name").agg(n_columns=("column_name", "size"), n_rows=("n_rows", "max"))
    described = described.reset_index()
    listed = tables["tables"]

    runs, batches = tables["runs"], tables["state/batches"]
    last_run = int(runs["run_id"].max()) if len(runs) else -1  # no run: no row is the last run's
    of_last = batches[batches["run_id"] == last_run]
    is_last = Column("run_id") == last_run
    return [
        Check(
            "accepted_fks_reference_keys",
            fks.assign(pk_key=_key_names(fks["pk_table"], fks["pk_columns"])),
            [
                E.ExpectColumnValuesToBeInSet(
                    column="pk_key",
                    value_set=_parameter("known_keys"),
                    # Keys of tables without agree-set state were checked exactly by the FK step, or declared.
                    row_condition=ACCEPTED & Column("pk_source").is_not_in(["checked", "declared"]),
                )
            ],
            asset="fk_candidates",
            parameters={"known_keys": sorted(known_keys)},
        ),
        Check(
            "tables_are_described",
            listed.assign(shape=_shape_names(listed["table_name"], listed["n_columns"], listed["n_rows"])),
            [E.ExpectColumnValuesToBeInSet(column="shape", value_set=_parameter("described_shapes"))],
            asset="tables",
            parameters={
                "described_shapes": sorted(
                    _shape_names(described["table_name"], described["n_columns"], described["n_rows"])
                )
            },
        ),
        Check(
            "columns_describe_tables",
            columns,
            [E.ExpectColumnValuesToBeInSet(column="table_name", value_set=_parameter("listed_tables"))],
            asset="columns",
            parameters={"listed_tables": sorted(listed["table_name"].dropna())},
        ),
        Check(
            "last_run_counts_its_batches",
            runs,
            [
                E.ExpectColumnValuesToBeInSet(
                    column="status", value_set=["succeeded"], row_condition=is_last
                ),
                E.ExpectColumnValuesToBeInSet(
                    column="tables_changed", value_set=_parameter("batches"), row_condition=is_last
                ),
                E.ExpectColumnValuesToBeInSet(
                    column="rows_inserted", value_set=_parameter("rows_inserted"), row_condition=is_last
                ),
                E.ExpectColumnValuesToBeInSet(
                    column="rows_deleted", value_set=_parameter("rows_deleted"), row_condition=is_last
                ),
            ],
            asset="runs",
            parameters={
                "batches": [len(of_last)],
                "rows_inserted": [int(of_last["rows_inserted"].sum())],
                "rows_deleted": [int(of_last["rows_deleted"].sum())],
            },
        ),
    ]
