"""What each discovery step's results reflect (the catalog table ``discovery_runs``): the newest committed
run whose state the step read, and the settings it ran with. A step whose newest record names the newest
committed run and the settings of today has nothing to compute, so a run over an unchanged lake does no
discovery work (``Pipeline.run``), and ``lakemeta run`` can say so without starting Spark."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.catalog.freshness import recorded_reflects
from lakemeta.catalog.store import Catalog, Txn


def newest_committed_run(catalog: Catalog) -> int | None:
    """The id of the newest run that committed (the state discovery reads is that run's), None before
    the first."""
    runs = catalog.read_small("runs")
    committed = pc.filter(runs["run_id"], pc.equal(runs["status"], "succeeded"))
    return pc.max(committed).as_py()


def record_discovery(catalog: Catalog, step: str, run_id: int | None, settings: str) -> None:
    """Record that ``step`` finished over the state of run ``run_id`` (read before the step began: a run
    committing meanwhile is not claimed) with ``settings``."""
    row = pa.table(
        {
            "step": [step],
            "run_id": pa.array([run_id], pa.int64()),
            "settings": [settings],
            "finished_at": pa.array([datetime.now(UTC)], pa.timestamp("us", tz="UTC")),
        }
    )
    catalog.append_small("discovery_runs", row, Txn(f"discovery {step}", time.time_ns() // 1000))


def stale_steps(catalog: Catalog, steps: Sequence[str], settings: str, run: int | None) -> list[str]:
    """Those of ``steps`` whose results do not reflect ``run``, the newest committed run
    (:func:`newest_committed_run`, read by the caller, which usually needs it too), with ``settings``."""
    records = catalog.read_small("discovery_runs").sort_by("finished_at").to_pylist()
    newest = {record["step"]: (record["run_id"], record["settings"]) for record in records}
    return [step for step in steps if newest.get(step) != (run, settings)]


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
