"""What the quality gate checks and what it records: a check (a suite and the frame it validates), a
suite validated in parts, an audit's record, and the names of the results files under
``<catalog>/_quality``. Apart from the gate (``gate``) so that the suites and the Data Docs, which the gate
runs, import these without importing it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.storage import Location

QUALITY_FOLDER = "_quality"
AUDITS_SHOWN = 10  # the audits the Data Docs show, each a sizeable set of pages even for a small catalog

_AUDIT_TIME = "%Y%m%dT%H%M%S%fZ"


def audit_file(audited_at: datetime) -> str:
    """The name of the results file of an audit: by its time, so that names sort in time order."""
    return f"audit-{audited_at.strftime(_AUDIT_TIME)}.json"


def batches_file(run_id: int) -> str:
    """The name of the results file of a run's batch audit (a retry of the audit writes it again)."""
    return f"batches-run-{run_id}.json"


def results_file_kind(name: str) -> tuple[str, datetime | int] | None:
    """Which results file ``name`` is: ("audit", its time) or ("batches", its run); None for neither."""
    stem = name.removesuffix(".json")
    if stem != name and stem.startswith("audit-"):
        try:
            return "audit", datetime.strptime(stem.removeprefix("audit-"), _AUDIT_TIME).replace(tzinfo=UTC)
        except ValueError:
            return None
    run = stem.removeprefix("batches-run-")
    return ("batches", int(run)) if stem != name and run != stem and run.isdigit() else None


def as_frame(rows: pa.Table, strings_as_categories: bool = False) -> pd.DataFrame:
    """A catalog table's rows as its suites validate them: each array cell (a column list) as one
    comparable string, its items joined by commas (in Arrow, not per row in Python); strings as categories
    where asked (a pair table's names: a few thousand tables and columns over millions of rows)."""
    for index, column in enumerate(rows.schema):
        if pa.types.is_list(column.type) and pa.types.is_string(column.type.value_type):
            rows = rows.set_column(index, column.name, pc.binary_join(rows.column(index), ","))
    return rows.to_pandas(strings_to_categorical=strings_as_categories)


@dataclass(frozen=True)
class Check:
    """A suite and the frame it validates: the table ``asset`` (the suite's name when None) as a frame;
    ``parameters`` are the values of the suite's ``$PARAMETER`` references."""

    name: str
    frame: pd.DataFrame
    expectations: list
    asset: str | None = None
    parameters: dict = field(default_factory=dict)

    @property
    def asset_name(self) -> str:
        return self.asset or self.name


@dataclass(frozen=True)
class PartSuite:
    """The suite of a table validated in parts (``table_parts``): every row of a key (``key``'s columns;
    None for no uniqueness to keep) is in one part."""

    key: list[str] | None
    expectations: list


@dataclass(frozen=True)
class Audit:
    path: Location  # the validation results, JSON
    number: int  # the audit's time in microseconds since the epoch: publications in order, each once
    success: bool
    versions: dict[str, int]  # the audited version of each catalog table
    failures: list[str]  # one line per failed expectation
    data_docs: Location | None = None  # the Data Docs' index page, when this audit rendered them

    @staticmethod
    def load(path: Location | str) -> Audit:
        path = Location.parse(path)
        recorded = json.loads(path.read_text())
        return Audit(
            path, recorded["number"], recorded["success"], recorded["versions"], recorded["failures"]
        )
