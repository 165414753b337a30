"""What each result reflects, recorded once: in the metadata of the commit that writes it (``reflects``),
read back here by the staleness check (``stale_results``), by the steps that recompute only what changed
(``changed_since``) and by ``lakemeta show`` (``results_freshness``).

A result reflects the newest committed run whose state its step read, the settings its rows depend on
(``settings``: whether they may be reused) and every discovery setting of its run (``discovery``: whether
the step must run again, as a result may read others'). A step names one record table, the result it
writes last, so a step killed before that write is found stale and runs again; a step that found nothing
to recompute records that its rows, unchanged, reflect the run (``Catalog.record``: a commit that adds
no file). The keys a run's commit derives ahead of its watermarks say which run they were derived for
(``derived_for``), so they are current on either side of the watermarks' commit.

The table ``discovery_runs`` is the history of finished discovery steps: the relationship changes compare
with the previous one (``lakemeta.catalog.relationships``); nothing decides by it. A step killed between
its results and its history row gets the row when a retry finds it current (``complete_history``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.catalog.reflects import recorded_reflects
from lakemeta.catalog.store import Catalog, Txn
from lakemeta.config import Config


def newest_committed_run(catalog: Catalog) -> int | None:
    """The id of the newest run that committed (the state discovery reads is that run's), None before
    the first."""
    runs = catalog.read_small("runs")
    committed = pc.filter(runs["run_id"], pc.equal(runs["status"], "succeeded"))
    return pc.max(committed).as_py()


def reflecting(run: int | None, settings: str, config: Config) -> dict:
    """What a step's results reflect, as its record table's commit records it: the newest committed run
    ``run`` it read (read before the step began: a run committing meanwhile is not claimed), the settings
    ``settings`` its rows depend on, and ``config``'s discovery settings."""
    return {"run": run, "settings": settings, "discovery": config.discovery_settings()}


@dataclass(frozen=True)
class Freshness:
    """What a step's results reflect (None: nothing recorded, or a write since that recorded nothing) and
    whether that is the newest committed run with today's settings."""

    step: str
    record: str  # the table whose commits record it
    reflects: dict | None
    current: bool
    run: int | None  # the committed run the results reflect (when current, the newest)


def results_freshness(catalog: Catalog, records: Mapping[str, str], config: Config) -> list[Freshness]:
    """Of each step of ``records`` (step name -> its record table), in order, what its results reflect and
    whether they are current: they reflect the newest committed run with ``config``'s discovery settings,
    or were derived for it ahead of its commit (``derived_for``: the keys of a run's tables, which its
    commit derives before the watermarks, while every other table's were current)."""
    run, settings = newest_committed_run(catalog), config.discovery_settings()
    found = []
    for step, record in records.items():
        reflects = recorded_reflects(catalog.delta_table(record))
        current = (
            reflects is not None
            and reflects.get("discovery") == settings
            and (reflects.get("run") == run or ("derived_for" in reflects and reflects["derived_for"] == run))
        )
        found.append(
            Freshness(step, record, reflects, current, run if current else (reflects or {}).get("run"))
        )
    return found


def stale_results(catalog: Catalog, records: Mapping[str, str], config: Config) -> list[str]:
    """Those steps of ``records`` (step name -> its record table) whose results are not current
    (:func:`results_freshness`), in order."""
    return [each.step for each in results_freshness(catalog, records, config) if not each.current]


def complete_history(catalog: Catalog, found: Sequence[Freshness]) -> None:
    """Add to the history the current results of ``found`` whose newest history row names another run or
    other settings: a step killed between writing its results and adding its row to the history, which a
    retry finds current and does not run again."""
    rows = catalog.read_small("discovery_runs").sort_by("finished_at").to_pylist()
    newest = {row["step"]: (row["run_id"], row["settings"]) for row in rows}
    for each in found:
        if each.current and newest.get(each.step) != (each.run, each.reflects["discovery"]):
            record_discovery(catalog, each.step, each.run, each.reflects["discovery"])


def record_discovery(catalog: Catalog, step: str, run_id: int | None, settings: str) -> None:
    """Add to the history (``discovery_runs``) that ``step`` finished over the state of run ``run_id``
    with ``settings``."""
    row = pa.table(
        {
            "step": [step],
            "run_id": pa.array([run_id], pa.int64()),
            "settings": [settings],
            "finished_at": pa.array([datetime.now(UTC)], pa.timestamp("us", tz="UTC")),
        }
    )
    catalog.append_small("discovery_runs", row, Txn(f"discovery {step}", time.time_ns() // 1000))


def committed_batches(catalog: Catalog, after_run: int | None, up_to_run: int | None = None) -> pa.Table:
    """The rows of ``state/batches`` committed in the runs after ``after_run`` (from the first when None)
    up to ``up_to_run`` (the newest when None), ordered by run."""
    # Only the files that may hold a later run's rows (by their statistics): a lake's first run wrote a
    # batch of every table, which a discovery after a few changed tables need not read.
    later = None if after_run is None else [("run_id", ">", after_run)]
    location = catalog.location("state/batches")
    batches = location.delta_dataset(catalog.delta_table("state/batches"), later).to_table()
    committed = pc.fill_null(batches["committed"], False)
    if after_run is not None:
        committed = pc.and_(committed, pc.greater(batches["run_id"], after_run))
    if up_to_run is not None:
        committed = pc.and_(committed, pc.less_equal(batches["run_id"], up_to_run))
    return batches.filter(committed).sort_by("run_id")


def tables_changed_after(catalog: Catalog, run: int | None) -> set[str]:
    """Tables with a committed batch (changed, rebuilt, new or dropped) in a run after ``run`` (every
    committed batch's table when ``run`` is None)."""
    return set(committed_batches(catalog, run)["table_name"].to_pylist())


def changed_since(catalog: Catalog, results: Sequence[str], settings: str) -> set[str] | None:
    """For a discovery step that recomputes only what changed: the tables changed since its ``results``
    were written with ``settings`` (each written with ``reflects = {"run", "settings"}``: the newest
    committed run it read, and its settings), or None when one of them was written otherwise or never
    (then everything is computed again). A rebuild empties ``state/batches`` and then commits every table
    in a run after any result's, so after it every table has changed."""
    runs = []
    for name in results:
        reflects = recorded_reflects(catalog.delta_table(name))
        if reflects is None or reflects.get("settings") != settings:
            return None
        runs.append(reflects["run"])
    return tables_changed_after(catalog, None if None in runs else min(runs))
