"""What each batch of a run is checked for before its state is committed: schema drift (the quality gate
of docs/architecture.md, "A run's data flow", applied per batch).

A batch's table is compared, at the batch's version, with the columns the catalog describes for it (the
``columns`` table, written from the state that the last commit left): a column added or retyped appears as
a signature outside the known set, a column removed or retyped as a known signature missing. Drift is
reported, not refused: the batch planner already rebuilds a table whose schema changed (``lake.batches``),
and the report says what changed and when. Tables the catalog has not described yet have nothing to drift
from, and dropped tables no schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from lakemeta.lake.batches import Batch
from lakemeta.lake.tables import spark_schema, table_path
from lakemeta.quality.results import Check
from lakemeta.storage import Location


def schema_signatures(lake: Location, table_name: str, version: int) -> list[str]:
    """``name type`` of each column of the table at ``version``, types as Spark names them (as ``columns``
    records them); read from the Delta log, without a JVM."""
    schema = spark_schema(table_path(lake, table_name).delta_table(version))
    return [f"{field.name} {field.dataType.simpleString()}" for field in schema.fields]


def batch_checks(batches: Sequence[Batch], columns: pd.DataFrame, lake: Location) -> list[Check]:
    """One check per batch of a run's plan whose table ``columns`` (the catalog table) describes; none, and
    Great Expectations (seconds to import) not loaded, when there is no such batch."""
    known = (columns["column_name"] + " " + columns["data_type"]).groupby(columns["table_name"]).agg(list)
    described = [b for b in batches if b.kind != "drop" and b.table_name in known.index]
    if not described:
        return []
    import great_expectations as gx

    checks = []
    for batch in described:
        signatures = sorted(known[batch.table_name])
        frame = pd.DataFrame({"signature": schema_signatures(lake, batch.table_name, int(batch.to_version))})
        checks.append(
            Check(
                f"batch {batch.table_name} @ {int(batch.to_version)}",
                frame,
                [
                    # a column added or retyped; a column removed or retyped
                    gx.expectations.ExpectColumnValuesToBeInSet(column="signature", value_set=signatures),
                    gx.expectations.ExpectColumnDistinctValuesToContainSet(
                        column="signature", value_set=signatures
                    ),
                ],
            )
        )
    return checks
