"""The registry of the pipeline's steps: the state components and the discovery steps, in run order.

`lakemeta run` (``Pipeline.run``), the steps of the DAGs and of the jobs under ``jobs/``
(``lakemeta.orchestration.steps``), the DAG files and the DAG integrity test all read the run order and
the names from here, so adding a state component is one module holding a
:class:`~lakemeta.component.StateComponent` subclass and one entry in :data:`STATE_COMPONENTS`, and adding
a discovery step is one ``discover.py`` module with a ``run_discovery`` function and one entry in
:data:`DISCOVERY_STEPS`.

Entries name their implementation by import path rather than importing it: DAG files read the registry
when Airflow parses them, and parsing must not import Spark adapters and numba kernels it never runs.
:func:`state_component` and :func:`discovery_step` import the implementation when a step runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakemeta.storage import Location

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from lakemeta.catalog import Catalog
    from lakemeta.component import StateComponent
    from lakemeta.config import Config


@dataclass(frozen=True)
class ComponentEntry:
    """A state component: its name (``StateComponent.name``) and its class, as ``module:Class``."""

    name: str
    implementation: str

    @property
    def task_id(self) -> str:
        """The component's step in the incremental DAG and the jobs."""
        return f"update_{self.name}"


@dataclass(frozen=True)
class DiscoveryStep:
    """A discovery step: its name (the DAG task and the job argument), the module whose
    ``run_discovery(catalog, lake, config, committed)`` runs it over the state of the committed run
    ``committed``, its record table (the result it writes last, whose commits say what its results reflect:
    ``lakemeta.catalog.freshness``), the steps whose results it reads, and whether the commit of a run
    already did its work for the changed tables (then `lakemeta run` leaves it out, and the discovery DAG
    runs it so that a run triggered with other thresholds redoes it for every table)."""

    name: str
    module: str
    record: str
    after: tuple[str, ...] = ()
    done_by_commit: bool = False


# Run order: the column profile first, as it records each batch's size; the others are independent of
# each other (the incremental DAG runs them side by side).
STATE_COMPONENTS: tuple[ComponentEntry, ...] = (
    ComponentEntry("column_profile", "lakemeta.profile.state:ColumnProfile"),
    ComponentEntry("hll_counters", "lakemeta.sketches.state:HllCounters"),
    ComponentEntry("column_values", "lakemeta.values.state:ColumnValues"),
    ComponentEntry("agree_sets", "lakemeta.agreesets.state:AgreeSets"),
    ComponentEntry("posting_lists", "lakemeta.joinsearch.state:PostingLists"),
)

# Run order: each step after the steps it reads (``after``).
DISCOVERY_STEPS: tuple[DiscoveryStep, ...] = (
    DiscoveryStep(
        "keys_and_dependencies",
        "lakemeta.agreesets.discover",
        "functional_dependencies",
        done_by_commit=True,
    ),
    DiscoveryStep("inclusion_estimates", "lakemeta.sketches.discover", "inclusion_estimates"),
    DiscoveryStep("inclusion_dependencies", "lakemeta.inds.discover", "inclusion_dependencies"),
    DiscoveryStep(
        "fk_candidates",
        "lakemeta.fks.discover",
        "state/fk_scored",
        after=("inclusion_estimates", "keys_and_dependencies"),
    ),
)


# The catalog tables the commit derives from the state (``tables``, ``columns``): fresh like the discovery
# steps' results (``tables``, written last, records it), so that a commit that died after its watermarks is
# finished by the next run.
DERIVED_TABLES = "tables_and_columns"
# Each result's record table (``lakemeta.catalog.freshness``), in run order.
RESULT_RECORDS: dict[str, str] = {
    DERIVED_TABLES: "tables",
    **{step.name: step.record for step in DISCOVERY_STEPS},
}


def state_component(entry: ComponentEntry) -> type[StateComponent]:
    """The class of a registered state component."""
    module, name = entry.implementation.split(":")
    component = getattr(importlib.import_module(module), name)
    if component.name != entry.name:
        raise ValueError(f"{entry.implementation} is named {component.name!r}, registered as {entry.name!r}")
    return component


def state_components() -> list[type[StateComponent]]:
    """The classes of every registered state component, in run order."""
    return [state_component(entry) for entry in STATE_COMPONENTS]


def discovery_step(step: DiscoveryStep) -> Callable[[Catalog, Location, Config, int | None], object]:
    """The function that runs a registered discovery step."""
    return importlib.import_module(step.module).run_discovery


def state_schemas() -> dict[str, StructType]:
    """The state tables of the registered components, by catalog name (``state/<name>``)."""
    return {component.state_table(): component.schema for component in state_components()}


def open_catalog(spark: object, root: Location) -> Catalog:
    """The catalog at ``root`` with the state tables of every registered component."""
    from lakemeta.catalog import Catalog

    bucketed = [c.state_table() for c in state_components() if c.bucketed_by_table]
    return Catalog(spark, root, state_schemas(), bucketed_by_table=bucketed)


def all_schemas() -> dict[str, StructType]:
    """Every table of a catalog: results, bookkeeping and the registered components' state."""
    from lakemeta.catalog.schemas import OWN_SCHEMAS

    return {**OWN_SCHEMAS, **state_schemas()}
