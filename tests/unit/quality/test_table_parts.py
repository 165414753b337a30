"""A table validated in parts (``lakemeta.quality.table_parts``): the parts hold every row once and each
key in one part, and the merged result of the parts says what Great Expectations says of the whole
table, count for count, uniqueness across parts included."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.catalog.store import arrow_schema
from lakemeta.quality.catalog_suites import part_suites
from lakemeta.quality.gate import SuiteValidation
from lakemeta.quality.results import Check
from lakemeta.quality.table_parts import table_parts
from lakemeta.storage import Location

KEY = ["dep_table", "dep_column", "ref_table", "ref_column"]


def estimates_table(folder: Path, seed: int, files: int = 4, rows: int = 900) -> Location:
    """Inclusion estimates with what the suite must catch spread over several files: keys written twice
    (in the same file and in others), null names, estimates out of range or missing, unknown statuses."""
    rng = np.random.default_rng(seed)
    tables, columns = [f"t{i}" for i in range(12)], ["id", "year", "code", None]
    location = Location.parse(str(folder / "inclusion_estimates"))
    for _ in range(files):
        status = rng.choice(["exact", "estimated", "undetermined", "guessed"], rows, p=[0.5, 0.4, 0.08, 0.02])
        estimate = np.where(rng.random(rows) < 0.03, 1.5, rng.random(rows))
        write_deltalake(
            location.uri,
            pa.table(
                {
                    "dep_table": rng.choice(tables, rows),
                    "dep_column": rng.choice(columns, rows, p=[0.4, 0.3, 0.29, 0.01]),
                    "ref_table": rng.choice(tables, rows),
                    "ref_column": rng.choice(columns[:3], rows),
                    "estimate": pa.array(estimate, mask=rng.random(rows) < 0.02),
                    "error_bound": rng.random(rows) / 10,
                    "status": status,
                },
                schema=arrow_schema("inclusion_estimates"),
            ),
            mode="append",
        )
    return location


def rows_of(frames: list[pd.DataFrame]) -> list[tuple]:
    whole = pd.concat([frame.astype(object) for frame in frames], ignore_index=True)
    whole = whole.where(whole.notna(), None)  # a missing estimate equal to itself
    return sorted(whole.itertuples(index=False, name=None), key=repr)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parts_hold_every_row_once_and_each_key_in_one_part(tmp_path: Path, seed: int) -> None:
    location = estimates_table(tmp_path, seed)
    suite = part_suites()["inclusion_estimates"]
    parts = list(table_parts(location.delta_dataset(), suite.key, None, part_rows=500))
    whole = location.delta_dataset().to_table().to_pandas()
    assert len(parts) == 8  # 3,600 rows in parts of about 500
    assert rows_of(parts) == rows_of([whole])
    part_of_key: dict[tuple, int] = {}
    for number, part in enumerate(parts):
        for key in set(part[KEY].astype(object).itertuples(index=False, name=None)):
            assert part_of_key.setdefault(key, number) == number, (
                f"{key} in parts {part_of_key[key]}, {number}"
            )
    # a suite without a key: the rows as they are read, in parts of about the size asked
    unkeyed = [len(part) for part in table_parts(location.delta_dataset(), None, None, 1000)]
    assert sum(unkeyed) == len(whole) and all(size >= 1000 for size in unkeyed[:-1])
    # an empty table: one empty frame, with the columns asked for the suite to find
    empty = Location.parse(str(tmp_path / "empty"))
    write_deltalake(empty.uri, arrow_schema("inclusion_estimates").empty_table())
    (frame,) = table_parts(empty.delta_dataset(), suite.key, ["dep_table", "status"])
    assert frame.empty and list(frame.columns) == ["dep_table", "status"]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_parts_merged_result_is_the_whole_table_s(tmp_path: Path, seed: int) -> None:
    location = estimates_table(tmp_path, seed)
    suite = part_suites()["inclusion_estimates"]
    now = datetime.now(UTC)
    whole = SuiteValidation("whole", "run", now)
    # each validation its own suite: GX binds an expectation to one suite
    whole.validate(
        Check(
            "inclusion_estimates",
            location.delta_dataset().to_table().to_pandas(),
            part_suites()["inclusion_estimates"].expectations,
        )
    )
    in_parts = SuiteValidation("parts", "run", now)
    in_parts.validate_in_parts("inclusion_estimates", suite, location.delta_dataset(), part_rows=500)
    expected, merged = whole.suites["inclusion_estimates"], in_parts.suites["inclusion_estimates"]
    assert merged["meta"]["parts"] == 8
    counts = ("element_count", "unexpected_count", "missing_count")
    percents = ("unexpected_percent", "missing_percent", "unexpected_percent_total")

    def outcomes(result: dict) -> list[tuple]:
        return [
            (
                o["expectation_config"]["type"],
                o["success"],
                *(o["result"].get(name) for name in counts),
                *(
                    round(o["result"][name], 9) if o["result"].get(name) is not None else None
                    for name in percents
                ),
            )
            for o in result["results"]
        ]

    assert outcomes(merged) == outcomes(expected)
    # every kind of bad row is there, the duplicates across files among them
    failed = {o["expectation_config"]["type"] for o in merged["results"] if not o["success"]}
    assert failed == {
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_in_set",
        "expect_column_values_to_be_between",
        "expect_compound_columns_to_be_unique",
    }
    assert merged["statistics"] == expected["statistics"] and merged["success"] is False
    assert len(in_parts.failures) == len(whole.failures)
